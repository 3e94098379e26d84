// Render: the render entry a driver calls once per device cycle, and the state it shares with the graph.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// State shared between a graph's control side and the render thread. Only atomics: the render
/// thread never takes a lock or touches reference counts.
/// SAFETY (`@unchecked Sendable`): only atomics and constants: the render thread and the control thread share nothing else.
final class RenderShared: @unchecked Sendable {
    /// The published plan (nil: render silence).
    let current = Atomic<UnsafeMutablePointer<RenderPlan>?>(nil)
    /// The plan the render thread is using right now (a hazard pointer), nil between cycles.
    let hazard = Atomic<UnsafeMutablePointer<RenderPlan>?>(nil)
    let running = Atomic<Bool>(false)
    let sampleTime = Atomic<UInt64>(0)
    let cycles = Atomic<UInt64>(0)
    let renderErrors = Atomic<UInt64>(0)
    /// NaN and ±Inf samples the render loop replaced with 0 (``AudioGraph/nonFiniteSampleCount``).
    let nonFiniteSamples = Atomic<UInt64>(0)
    /// CPU load bookkeeping: nanoseconds spent rendering, nanoseconds of audio rendered, and the
    /// largest single-cycle ratio (a Double's bits), each reset by `AudioGraph.cpuLoad()`.
    let busyNanoseconds = Atomic<UInt64>(0)
    let audioNanoseconds = Atomic<UInt64>(0)
    let maximumLoad = Atomic<UInt64>(0)
    /// Set by the first `cpuLoad()` call: until someone asks, cycles are not timed.
    let measuresLoad = Atomic<Bool>(false)
    /// The published plan's latency (``AudioGraph/renderLatency``), in frames at the graph's rate.
    let latencyFrames = Atomic<UInt32>(0)
    /// `pthread_self()` of the thread inside `render`, 0 outside; edits from it are refused.
    let renderThread = Atomic<UInt>(0)
}

/// The handle a driver uses to pull a graph once per device cycle.
///
/// Obtained from ``AudioGraph/renderContext``; a trivially copyable value, valid while the
/// graph lives. `render` is the only entry point the render thread needs.
/// SAFETY (`@unchecked Sendable`): it holds an unretained reference to the graph's atomics-only `RenderShared`, valid while the graph lives.
public struct GraphRenderContext: @unchecked Sendable {
    let shared: Unmanaged<RenderShared>

    /// Frames (at the graph's rate) by which the published plan delays device input on its way
    /// to device output (``AudioGraph/renderLatency``: conversions and units' processing, the
    /// longest path): what a driver adds to its ports' latency. 0 when nothing delays.
    /// Thread: any (an atomic read).
    public var latencyFrames: Int {
        Int(shared._withUnsafeGuaranteedRef { $0.latencyFrames.load(ordering: .relaxed) })
    }

    /// The graph's sample time (``AudioGraph/sampleTime``): frames at the device rate since the
    /// graph started — during a cycle the first frame of the slice being rendered, between
    /// cycles the next one. Thread: any (an atomic read).
    public var sampleTime: UInt64 {
        shared._withUnsafeGuaranteedRef { $0.sampleTime.load(ordering: .relaxed) }
    }

    /// Renders one device cycle: reads `input` as IO element 1 (in place; nothing in the graph
    /// writes to it), pulls every unit once in pull order, and copies IO element 0 into
    /// `output`. Cycles longer than the graph's MaximumFramesPerSlice are rendered as several
    /// consecutive slices, so a driver may pass any period. When the graph is not running, or has no plan, `output` is filled with silence.
    ///
    /// - Parameters:
    ///   - frameCount: frames per channel in this cycle, ≥ 0.
    ///   - input: `[channel]` pointers to `frameCount` device input samples, or nil (silence);
    ///     read during this call only.
    ///   - inputChannelCount: pointers in `input`; missing channels read as silence.
    ///   - output: `[channel]` pointers to `frameCount` samples to fill.
    ///   - outputChannelCount: pointers in `output`; channels the graph does not feed get zeros.
    /// - Thread: the render thread only, one at a time. Real-time safe: no allocation, lock,
    ///   reference counting or blocking call (checked by `@_noLocks`).
    @_noLocks
    public func render(frameCount: Int,
                       input: UnsafePointer<UnsafeMutablePointer<Float>>?, inputChannelCount: Int,
                       output: UnsafePointer<UnsafeMutablePointer<Float>>, outputChannelCount: Int) {
        shared._withUnsafeGuaranteedRef { s in
            let measuring = s.measuresLoad.load(ordering: .relaxed)
            let started = measuring ? RealTime.monotonicNanoseconds() : 0
            s.renderThread.store(RealTime.threadID(), ordering: .relaxed)
            // Hazard-pointer acquire: announce the plan, then confirm it is still the published one.
            var plan = s.current.load(ordering: .sequentiallyConsistent)
            while true {
                s.hazard.store(plan, ordering: .sequentiallyConsistent)
                let again = s.current.load(ordering: .sequentiallyConsistent)
                if again == plan { break }
                plan = again
            }
            if let plan, s.running.load(ordering: .acquiring) {
                let maxFrames = plan.pointee.maxFrames
                var offset = 0
                var errors: UInt64 = 0
                var nonFinite: UInt64 = 0
                let rate = plan.pointee.sampleRate
                while offset < frameCount {
                    let n = min(maxFrames, frameCount - offset)
                    let time = s.sampleTime.load(ordering: .relaxed)
                    RenderLoop.notify(plan, .preRender, input: input, inputChannelCount: inputChannelCount,
                                              offset: offset, frames: n, sampleTime: Double(time))
                    errors &+= RenderLoop.renderSlice(plan, frames: n, offset: offset,
                                                              input: input, inputChannelCount: inputChannelCount,
                                                              output: output, outputChannelCount: outputChannelCount,
                                                              sampleTime: Double(time), nonFinite: &nonFinite)
                    RenderLoop.notify(plan, .postRender, input: output, inputChannelCount: outputChannelCount,
                                              offset: offset, frames: n, sampleTime: Double(time))
                    // A post-render notification may write the device's buffers after the
                    // render loop cleaned them: cleaned again, only when there is one.
                    if plan.pointee.notificationCount > 0 {
                        for c in 0..<outputChannelCount { nonFinite &+= NonFinite.scrub(output[c] + offset, frames: n) }
                    }
                    s.sampleTime.store(time &+ UInt64(n), ordering: .relaxed)
                    offset += n
                }
                // CPU load: time in here over the audio time rendered (single writer: plain
                // loads and stores; the reader exchanges them with 0).
                if measuring && frameCount > 0 && rate > 0 {
                    let busy = RealTime.monotonicNanoseconds() &- started
                    let audio = UInt64(Double(frameCount) / rate * 1e9)
                    s.busyNanoseconds.store(s.busyNanoseconds.load(ordering: .relaxed) &+ busy, ordering: .relaxed)
                    s.audioNanoseconds.store(s.audioNanoseconds.load(ordering: .relaxed) &+ audio, ordering: .relaxed)
                    let load = Double(busy) / Double(max(1, audio))
                    if load > Double(bitPattern: s.maximumLoad.load(ordering: .relaxed)) {
                        s.maximumLoad.store(load.bitPattern, ordering: .relaxed)
                    }
                }
                // Single writer: a plain load and store, no locked read-modify-write.
                if errors != 0 { s.renderErrors.store(s.renderErrors.load(ordering: .relaxed) &+ errors, ordering: .relaxed) }
                if nonFinite != 0 {
                    s.nonFiniteSamples.store(s.nonFiniteSamples.load(ordering: .relaxed) &+ nonFinite, ordering: .relaxed)
                }
            } else {
                for c in 0..<outputChannelCount { output[c].update(repeating: 0, count: frameCount) }
            }
            s.hazard.store(nil, ordering: .releasing)
            s.cycles.store(s.cycles.load(ordering: .relaxed) &+ 1, ordering: .releasing)
            s.renderThread.store(0, ordering: .relaxed)
        }
    }

}

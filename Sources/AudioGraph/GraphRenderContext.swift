import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// State shared between a graph's control side and the render thread. Only atomics: the render
/// thread never takes a lock or touches reference counts.
final class RenderShared: @unchecked Sendable {
    /// The published plan (nil: render silence).
    let current = Atomic<UnsafeMutablePointer<RenderPlan>?>(nil)
    /// The plan the render thread is using right now (a hazard pointer), nil between cycles.
    let hazard = Atomic<UnsafeMutablePointer<RenderPlan>?>(nil)
    let running = Atomic<Bool>(false)
    let sampleTime = Atomic<UInt64>(0)
    let cycles = Atomic<UInt64>(0)
    let renderErrors = Atomic<UInt64>(0)
    /// CPU load bookkeeping: nanoseconds spent rendering, nanoseconds of audio rendered, and the
    /// largest single-cycle ratio (a Double's bits), each reset by `AudioGraph.cpuLoad()`.
    let busyNanoseconds = Atomic<UInt64>(0)
    let audioNanoseconds = Atomic<UInt64>(0)
    let maximumLoad = Atomic<UInt64>(0)
    /// Set by the first `cpuLoad()` call: until someone asks, cycles are not timed.
    let measuresLoad = Atomic<Bool>(false)
    /// The published plan's conversion latency, in frames at the graph's rate.
    let latencyFrames = Atomic<UInt32>(0)
    /// `pthread_self()` of the thread inside `render`, 0 outside; edits from it are refused.
    let renderThread = Atomic<UInt>(0)
}

/// The handle a driver uses to pull a graph once per device cycle.
///
/// Obtained from ``AudioGraph/renderContext``; a trivially copyable value, valid while the
/// graph lives. `render` is the only entry point the render thread needs.
public struct GraphRenderContext: @unchecked Sendable {
    let shared: Unmanaged<RenderShared>

    /// Frames (at the graph's rate) by which the published plan's format conversions delay
    /// device input on its way to device output: what a driver adds to its ports' latency.
    /// 0 when nothing resamples. Thread: any (an atomic read).
    public var latencyFrames: Int {
        Int(shared._withUnsafeGuaranteedRef { $0.latencyFrames.load(ordering: .relaxed) })
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
            let started = measuring ? GraphRenderContext.now() : 0
            s.renderThread.store(_unsafePerformance { UInt(pthread_self()) }, ordering: .relaxed)
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
                let rate = plan.pointee.sampleRate
                while offset < frameCount {
                    let n = min(maxFrames, frameCount - offset)
                    let time = s.sampleTime.load(ordering: .relaxed)
                    GraphRenderContext.notify(plan, .preRender, input: input, inputChannelCount: inputChannelCount,
                                              offset: offset, frames: n, sampleTime: Double(time))
                    errors &+= GraphRenderContext.renderSlice(plan, frames: n, offset: offset,
                                                              input: input, inputChannelCount: inputChannelCount,
                                                              output: output, outputChannelCount: outputChannelCount,
                                                              sampleTime: Double(time))
                    GraphRenderContext.notify(plan, .postRender, input: output, inputChannelCount: outputChannelCount,
                                              offset: offset, frames: n, sampleTime: Double(time))
                    s.sampleTime.store(time &+ UInt64(n), ordering: .relaxed)
                    offset += n
                }
                // CPU load: time in here over the audio time rendered (single writer: plain
                // loads and stores; the reader exchanges them with 0).
                if measuring && frameCount > 0 && rate > 0 {
                    let busy = GraphRenderContext.now() &- started
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
            } else {
                for c in 0..<outputChannelCount { output[c].update(repeating: 0, count: frameCount) }
            }
            s.hazard.store(nil, ordering: .releasing)
            s.cycles.store(s.cycles.load(ordering: .relaxed) &+ 1, ordering: .releasing)
            s.renderThread.store(0, ordering: .relaxed)
        }
    }

    /// Monotonic nanoseconds (`clock_gettime`, a vDSO call: no system call, no lock).
    @_noLocks @inline(__always)
    static func now() -> UInt64 {
        var t = timespec()
        _ = _unsafePerformance { clock_gettime(CLOCK_MONOTONIC, &t) }
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
    }

    /// Calls the plan's render notifications with the device buffers of one slice.
    @_noLocks @inline(__always)
    static func notify(_ plan: UnsafeMutablePointer<RenderPlan>, _ phase: RenderNotificationPhase,
                       input: UnsafePointer<UnsafeMutablePointer<Float>>?, inputChannelCount: Int,
                       offset: Int, frames: Int, sampleTime: Double) {
        let count = plan.pointee.notificationCount
        guard count > 0 else { return }
        let scratch = plan.pointee.notificationChannels
        let channels = min(inputChannelCount, plan.pointee.notificationCapacity)
        var list = AudioBufferList(channelPointers: UnsafePointer(scratch), channelCount: 0, frameCount: frames)
        if let input {
            for c in 0..<channels { scratch[c] = input[c] + offset }
            list = AudioBufferList(channelPointers: UnsafePointer(scratch), channelCount: channels, frameCount: frames)
        }
        let timeStamp = AudioTimeStamp(sampleTime: sampleTime)
        for i in 0..<count {
            let box = plan.pointee.notifications[i]
            _unsafePerformance {
                Unmanaged<CallbackBox>.fromOpaque(box)._withUnsafeGuaranteedRef { $0.notify?(phase, timeStamp, list) }
            }
        }
    }

    @_noLocks
    static func renderSlice(_ plan: UnsafeMutablePointer<RenderPlan>, frames: Int, offset: Int,
                            input: UnsafePointer<UnsafeMutablePointer<Float>>?, inputChannelCount: Int,
                            output: UnsafePointer<UnsafeMutablePointer<Float>>, outputChannelCount: Int,
                            sampleTime: Double) -> UInt64 {
        let p = plan.pointee
        var errors: UInt64 = 0
        let domains = p.domains
        domains.advance(graphTime: sampleTime, frames: frames)
        // 1. IO element 1 reads the device's buffers in place (nothing writes to them), or
        //    silence; converted to the application side's format when that differs.
        for c in 0..<p.ioDeviceChannels {
            if p.ioInputEnabled, let input, c < inputChannelCount {
                p.ioDevice[c] = input[c] + offset
            } else {
                p.ioDevice[c] = p.ioDeviceSilence[c]  // all zeros: nothing writes to it
            }
        }
        let inputFrames = domains.frames[p.ioInputRateIndex]
        if let converter = p.ioInputConverter {
            errors &+= converter.pointee.render(p.ioDevice, sourceFrames: frames, destinationFrames: inputFrames)
            SampleConversion.quantize(p.ioInput, channels: p.ioInputChannels, frames: inputFrames, kind: p.ioInputLayout.kind)
        }
        if let box = p.inputCallback {
            let timeStamp = AudioTimeStamp(sampleTime: domains.times[p.ioInputRateIndex])
            let list: AudioBufferList
            if let raw = p.ioInputRaw {
                SampleConversion.encode(p.ioInput, p.ioInputLayout, offset: 0, frames: inputFrames, into: raw)
                list = AudioBufferList(raw: raw, layout: p.ioInputLayout, bytesPerFrame: p.ioInputRawBytesPerFrame, frameCount: inputFrames)
            } else {
                list = AudioBufferList(channelPointers: UnsafePointer(p.ioInput), channelCount: p.ioInputChannels, frameCount: inputFrames)
            }
            _unsafePerformance {
                Unmanaged<CallbackBox>.fromOpaque(box)._withUnsafeGuaranteedRef { $0.input?(timeStamp, list) }
            }
        }
        Observers.run(p.ioLinks, element: 1, channels: p.ioInput, channelCount: p.ioInputChannels, frames: inputFrames,
                      sampleRate: domains.rates[p.ioInputRateIndex], sampleTime: domains.times[p.ioInputRateIndex])
        // 2. Units in pull order, each at its own rate.
        for i in 0..<p.stepCount {
            let step = p.steps + i
            for k in 0..<step.pointee.inputCount {
                let input = step.pointee.inputs + k
                // Most inputs are plain connections: nothing to run before the kernel reads them.
                if input.pointee.callback != nil || input.pointee.converter != nil {
                    errors &+= pullInput(input, domains)
                }
            }
            let n = domains.frames[step.pointee.rateIndex]
            let owned = step.pointee.ownedOutput, output = step.pointee.output
            for c in 0..<step.pointee.outputChannelCount { output[c] = owned[c] }
            if let custom = step.pointee.custom { custom.pointee.sliceTime = domains.times[step.pointee.rateIndex] }
            if step.pointee.automation.pointee.isIdle {
                runKernel(step, offset: 0, frames: n, snap: false, whole: true)
            } else {
                AutomationRenderer.render(step, frames: n, time: Int64(domains.times[step.pointee.rateIndex]))
            }
            Observers.run(step.pointee.links, element: 0, channels: step.pointee.output, channelCount: step.pointee.outputChannelCount,
                          frames: n, sampleRate: domains.rates[step.pointee.rateIndex], sampleTime: domains.times[step.pointee.rateIndex])
        }
        // 3. IO element 0 to the device (converted to the device's format by its input).
        var ioOutput = p.ioOutput
        errors &+= pullInput(&ioOutput, domains)
        for c in 0..<outputChannelCount {
            let dst = output[c] + offset
            if p.ioOutputEnabled, let src = ioOutput.channels, c < ioOutput.channelCount {
                copy(src[c], to: dst, frames: frames)
            } else {
                dst.update(repeating: 0, count: frames)
            }
        }
        Observers.run(p.ioLinks, element: 0, channels: p.ioOutputEnabled ? ioOutput.channels : nil,
                      channelCount: ioOutput.channels == nil ? outputChannelCount : ioOutput.channelCount,
                      frames: frames, sampleRate: p.sampleRate, sampleTime: sampleTime)
        return errors
    }

    /// Runs a step's kernel on frames `offset..<offset + frames` of its slice. `snap`: parameter
    /// changes since the last piece are steps (scheduled immediate events), not to be smoothed.
    /// `whole`: the piece is the whole slice (a kernel may then forward its input's buffers).
    @_noLocks @inline(__always)
    static func runKernel(_ step: UnsafeMutablePointer<PlanStep>, offset: Int, frames: Int, snap: Bool, whole: Bool) {
        switch step.pointee.kind {
        case .mixer: MixerKernel.render(step, offset: offset, frames: frames, snap: snap)
        case .lowPass: LowPassKernel.render(step, offset: offset, frames: frames, snap: snap)
        case .muteGate: MuteGateKernel.render(step, offset: offset, frames: frames, whole: whole)
        case .custom: CustomKernel.render(step, offset: offset, frames: frames)
        case .filePlayer: FilePlayerKernel.render(step, offset: offset, frames: frames)
        case .passthrough:
            let s = step.pointee
            for c in 0..<s.outputChannelCount {
                if let src = s.inputs[0].channels, c < s.inputs[0].channelCount { copy(src[c] + offset, to: s.output[c] + offset, frames: frames) }
                else { (s.output[c] + offset).update(repeating: 0, count: frames) }
            }
        }
    }

    /// Prepares one input element for its unit: runs its render callback (zeroed first,
    /// silenced again if the callback fails; decoded from the callback's format), then its
    /// converter. Returns the render errors counted (failed callbacks, converter glitches).
    @_noLocks
    static func pullInput(_ input: UnsafeMutablePointer<PlanInput>, _ domains: RateDomains) -> UInt64 {
        var errors: UInt64 = 0
        let sourceFrames = domains.frames[input.pointee.sourceRateIndex]
        if let box = input.pointee.callback, let source = input.pointee.source {
            let timeStamp = AudioTimeStamp(sampleTime: domains.times[input.pointee.sourceRateIndex])
            let layout = input.pointee.rawLayout
            let element = input.pointee.element
            let list: AudioBufferList
            if let raw = input.pointee.raw {
                let buffers = layout.interleaved ? 1 : layout.channels
                let bytes = input.pointee.rawBytesPerFrame &* sourceFrames
                for b in 0..<buffers { raw[b].initializeMemory(as: UInt8.self, repeating: 0, count: bytes) }
                list = AudioBufferList(raw: raw, layout: layout, bytesPerFrame: input.pointee.rawBytesPerFrame, frameCount: sourceFrames)
            } else {
                zero(source, channels: layout.channels, frames: sourceFrames)
                list = AudioBufferList(channelPointers: UnsafePointer(source), channelCount: layout.channels, frameCount: sourceFrames)
            }
            let status = _unsafePerformance {
                Unmanaged<CallbackBox>.fromOpaque(box)._withUnsafeGuaranteedRef { $0.render?(timeStamp, element, list) ?? 0 }
            }
            if status != 0 {
                zero(source, channels: layout.channels, frames: sourceFrames)
                errors &+= 1
            } else if let raw = input.pointee.raw {
                SampleConversion.decode(raw, layout, offset: 0, frames: sourceFrames, into: source)
            }
        }
        if let converter = input.pointee.converter {
            errors &+= converter.pointee.render(input.pointee.source, sourceFrames: sourceFrames,
                                                destinationFrames: domains.frames[input.pointee.destinationRateIndex])
        }
        return errors
    }
}

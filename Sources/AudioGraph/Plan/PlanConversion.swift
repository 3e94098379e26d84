// Plan: format conversion inside a plan — PlanConverter, and the converters kept across plans.
#if canImport(Glibc)
import Glibc
#endif

// Format conversion inside a render plan.
//
// Every buffer between units is Float32 `[channel][frame]`. A unit renders at its output
// format's sample rate; an input element whose format differs from what its unit processes
// (another rate, another channel count) gets a `PlanConverter`: channel mapping and, across
// rates, libsamplerate followed by a FIFO. Integer formats exist only where the application
// touches buffers (render callbacks, the IO unit's application sides); audio in an integer
// format is carried as floats rounded to that format's steps.
//
// Rate domains: the plan keeps the list of rates its units run at. Each slice of `n` frames at
// the graph (device) rate R is `floor((t + n)·r/R) − floor(t·r/R)` frames at rate r, with t the
// graph's sample time, so every domain advances exactly in step with the device over time and
// every unit at rate r renders the same number of frames in a slice.
//
// A resampler's output count per call varies (libsamplerate holds frames back until it has
// enough input), so its output goes through a FIFO that starts with `prefill` frames of
// silence: enough that it never runs dry. `prefill` is found when the plan is built by running
// the resampler over silence in the slice patterns the plan can meet, and it is the latency the
// conversion adds (libsamplerate itself does not delay the signal).

/// Converts one element's audio between two channel counts and/or rates (render thread).
struct PlanConverter {
    var sourceChannels: Int
    var destinationChannels: Int
    /// min(source, destination) channels: what the resampler runs at.
    var work: Int
    /// `[work]` buffers for a reduced source (destination has fewer channels).
    var reduced: ChannelPointers
    var resampler: Resampler?
    /// `[work]` FIFO of resampled frames.
    var fifo: ChannelPointers
    var fifoCount: Int
    var fifoCapacity: Int
    var prefill: Int
    /// `[destinationChannels]` buffers: what the unit reads.
    var output: ChannelPointers
    /// Frames of silence rendered because the FIFO ran dry, or dropped because it was full.
    var glitches: UInt64

    /// Converts `sourceFrames` frames of `source` into `destinationFrames` frames of `output`.
    /// Returns 1 if the FIFO ran dry or overflowed this slice (counted as a render error).
    @_noLocks
    mutating func render(_ source: ChannelPointers?, sourceFrames: Int, destinationFrames: Int) -> UInt64 {
        guard let source else {
            zero(output, channels: destinationChannels, frames: destinationFrames)
            return 0
        }
        guard let resampler else {
            SampleConversion.mapChannels(source, from: sourceChannels, into: output, to: destinationChannels, frames: sourceFrames)
            return 0
        }
        var stage = source
        if destinationChannels < sourceChannels {
            SampleConversion.mapChannels(source, from: sourceChannels, into: reduced, to: work, frames: sourceFrames)
            stage = reduced
        }
        var status: UInt64 = 0
        // Room check: the resampler writes up to maxOutput frames at the FIFO's end.
        if fifoCount + resampler.maxOutput > fifoCapacity {
            glitches &+= UInt64(fifoCount)
            fifoCount = 0
            status = 1
        }
        fifoCount += resampler.process(stage, frames: sourceFrames, into: fifo, at: fifoCount)
        let available = min(fifoCount, destinationFrames)
        if available < destinationFrames {
            glitches &+= UInt64(destinationFrames - available)
            status = 1
        }
        // Pop `destinationFrames` frames into the work channels of `output`, then expand.
        let target = destinationChannels > work ? reduced : output
        for c in 0..<work {
            let f = fifo[c], d = target[c]
            for i in 0..<available { d[i] = f[i] }
            for i in available..<destinationFrames { d[i] = 0 }
            let rest = fifoCount - available
            for i in 0..<rest { f[i] = f[i &+ available] }
        }
        fifoCount -= available
        if destinationChannels > work {
            SampleConversion.mapChannels(reduced, from: work, into: output, to: destinationChannels, frames: destinationFrames)
        }
        return status
    }
}

/// What identifies a converter across plans: the same element converting the same way keeps
/// its resampler history and FIFO through live edits (no gap on an untouched path).
struct ConverterKey: Hashable {
    enum Site: Hashable { case unitInput, deviceInput, deviceOutput }
    var site: Site
    var node: AUNode
    var element: AudioUnitElement
    var sourceChannels: Int
    var sourceRate: Double
    var destinationChannels: Int
    var destinationRate: Double
    var graphRate: Double
    var maxFrames: Int
}

/// Owns one `PlanConverter` and everything it points to. Kept by the graph between plans (like
/// a unit's kernel state) and retained by each plan that uses it; freed on a control thread.
/// SAFETY (`@unchecked Sendable`): built and freed on a control thread; its converter is used by the render thread only while a plan that holds it is published.
final class ConverterStorage: @unchecked Sendable {
    let converter: UnsafeMutablePointer<PlanConverter>
    /// Latency the conversion adds, in seconds (the FIFO's prefill at the destination rate).
    let latency: Double
    /// Owns the converter and its buffers.
    private let memory = PlanResources()
    private let resampler: Resampler?

    /// Builds a converter from `key.sourceChannels` at `key.sourceRate` to
    /// `key.destinationChannels` at `key.destinationRate` for slices of at most `key.maxFrames`
    /// graph-rate frames. Control thread; allocates. Throws formatNotSupported when
    /// libsamplerate cannot do the ratio.
    init(_ key: ConverterKey) throws(AudioUnitError) {
        let work = min(key.sourceChannels, key.destinationChannels)
        let sourceMax = RateDomains.capacity(key.maxFrames, rate: key.sourceRate, graphRate: key.graphRate)
        let destinationMax = RateDomains.capacity(key.maxFrames, rate: key.destinationRate, graphRate: key.graphRate)
        var prefill = 0
        var fifoCapacity = 1
        if key.sourceRate != key.destinationRate {
            guard let r = Resampler.make(channels: work, from: key.sourceRate, to: key.destinationRate, maxInput: sourceMax) else {
                throw .formatNotSupported
            }
            resampler = r
            prefill = ConverterStorage.prefill(r, key)
            fifoCapacity = prefill + r.maxOutput + destinationMax + 64
        } else {
            resampler = nil
        }
        latency = Double(prefill) / key.destinationRate
        converter = memory.allocate(PlanConverter.self, count: 1)
        converter.initialize(to: PlanConverter(
            sourceChannels: key.sourceChannels, destinationChannels: key.destinationChannels, work: work,
            reduced: memory.allocateChannels(work, frames: max(sourceMax, destinationMax)),
            resampler: resampler,
            fifo: memory.allocateChannels(work, frames: fifoCapacity), fifoCount: prefill, fifoCapacity: fifoCapacity,
            prefill: prefill,
            output: memory.allocateChannels(key.destinationChannels, frames: destinationMax), glitches: 0))
    }

    deinit {
        resampler?.destroy()
    }

    /// Prefills already measured, by (source rate, destination rate, graph rate, slice size):
    /// the deficit does not depend on the channel count, and measuring takes about a millisecond.
    private static let measured = ControlLock<[[Double]: Int]>([:])

    static func prefill(_ r: Resampler, _ key: ConverterKey) -> Int {
        let id = [key.sourceRate, key.destinationRate, key.graphRate, Double(key.maxFrames)]
        if let known = measured.withLock({ $0[id] }) { return known }
        let value = measurePrefill(r, sourceRate: key.sourceRate, destinationRate: key.destinationRate,
                                   graphRate: key.graphRate, maxFrames: key.maxFrames)
        measured.withLock { $0[id] = value }
        return value
    }

    /// The FIFO prefill a resampler needs never to run dry: the deepest deficit seen while
    /// running it over silence in slices of `maxFrames`, 256 and 32 graph-rate frames (0.1 s
    /// each, at three starting phases), plus 2 frames for rounding. Leaves it reset.
    static func measurePrefill(_ r: Resampler, sourceRate: Double, destinationRate: Double,
                               graphRate: Double, maxFrames: Int) -> Int {
        let silence = ChannelPointers.allocate(capacity: r.channels)
        let sink = ChannelPointers.allocate(capacity: r.channels)
        let zeros = UnsafeMutablePointer<Float>.allocate(capacity: r.maxInput)
        zeros.initialize(repeating: 0, count: r.maxInput)
        let out = UnsafeMutablePointer<Float>.allocate(capacity: r.maxOutput * r.channels)
        for c in 0..<r.channels { silence[c] = zeros; sink[c] = out + c * r.maxOutput }
        defer { silence.deallocate(); sink.deallocate(); zeros.deallocate(); out.deallocate() }
        var worst = 0
        for slice in Set([maxFrames, min(256, maxFrames), min(32, maxFrames)]) {
            for phase in [0.0, 17, 111] {
                r.reset()
                var level = 0, t = phase
                let end = phase + graphRate / 10
                while t < end {
                    let s0 = (t * sourceRate / graphRate).rounded(.down), s1 = ((t + Double(slice)) * sourceRate / graphRate).rounded(.down)
                    let d0 = (t * destinationRate / graphRate).rounded(.down), d1 = ((t + Double(slice)) * destinationRate / graphRate).rounded(.down)
                    level += r.process(silence, frames: Int(s1 - s0), into: sink, at: 0)
                    level -= Int(d1 - d0)
                    worst = min(worst, level)
                    // The FIFO only ever holds what was produced: a deficit is what prefill must cover.
                    t += Double(slice)
                }
            }
        }
        r.reset()
        return -worst + 2
    }
}

// Observers: LevelMeter — RMS and peak in dBFS per channel, read from any thread.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Average (RMS) and peak level, in dBFS per channel, of one output element of a node: the
/// analogue of `AVAudioRecorder.averagePower(forChannel:)` / `peakPower(forChannel:)` and the
/// multichannel mixer's metering parameters.
///
/// Install one with ``AudioGraph/installLevelMeter(on:element:averagingTime:peakHoldTime:)``;
/// the render thread updates it once per slice after the node renders, and any thread reads it
/// without locks (relaxed atomics).
///
/// ## What the numbers mean
/// - **Scale**: dB relative to digital full scale, `20·log10(|x|)` for a sample value `x`
///   (full scale = 1.0). A full-scale square wave reads 0 dBFS on both meters; a full-scale sine
///   reads 0 dBFS peak and −3.01 dBFS average (its RMS is 1/√2). (AES17 instead calls a
///   full-scale sine 0 dBFS RMS; this is the plain `20·log10(RMS)` scale that AVAudioRecorder
///   and most software meters use.)
/// - **Average power**: an exponentially weighted mean square, updated every sample `x[n]`:
///   `m[n] = m[n−1] + α·(x[n]² − m[n−1])`, `α = 1 − exp(−1 / (τ·fs))`, where τ is
///   ``averagingTime`` (default 0.3 s, the VU meter's integration time, IEC 60268-17) and fs the
///   graph's sample rate; the reading is `10·log10(m)`. A step in level reaches 63 % of its
///   final mean square after τ and 99 % after 4.6 τ. This is a one-pole RC integrator
///   (Zölzer, *Digital Audio Signal Processing*, 2nd ed., §7.2, "RMS measurement").
/// - **Peak power**: the largest `|x|` seen, held for ``peakHoldTime`` (default 1.5 s): a
///   higher or equal peak restarts the hold; when the hold runs out the reading drops to the
///   largest `|x|` of the latest slice and holds that. It never reads below the average: when
///   the signal stops, the held peak drops to silence while the average is still decaying, and
///   the peak then reads the average (`max(peak, RMS)`, as a peak-program meter falling no
///   faster than the VU needle beside it). Both come from the same slice when read together
///   with ``levels(channel:)``; two separate calls may straddle a slice. ``maximumPeakPower(channel:)`` keeps the largest
///   `|x|` since installation or ``resetPeaks()`` (a clip indicator).
/// - **Silence**: digital silence, and anything below −160 dBFS, reads ``silence`` (−160 dBFS),
///   never −infinity, so readings are always finite. After a signal stops, the average falls
///   by `4.34 / τ` dB per second (14.5 dB/s at 0.3 s) and reaches −160 within about 11 s at
///   the default τ; a mean square below 1e−20 (−200 dBFS) is set to exact zero so the state
///   never lingers in slow subnormal numbers.
///
/// A meter stays installed (and keeps its unit's observer slot busy) until
/// ``AudioGraph/removeLevelMeter(_:)``; dropping your reference does not remove it.
///
/// The channel count follows the element's format as rendered (``channelCount``: the element's
/// format when installed, then as each slice renders); asking for a channel outside it throws.
/// Thread: readings from any thread, lock-free and allocation-free.
/// SAFETY (`@unchecked Sendable`): readings are atomics written by the render thread; resetPeaks stores atomics too.
public final class LevelMeter: @unchecked Sendable {
    /// The reading for digital silence and anything quieter: −160 dBFS.
    public static let silence: Float = -160

    /// The node whose output is metered.
    public let node: AUNode
    /// The output element metered.
    public let element: AudioUnitElement
    /// The average meter's time constant τ, in seconds.
    public let averagingTime: Double
    /// How long a peak reading holds, in seconds.
    public let peakHoldTime: Double

    let core: MeterCore
    let unit: AudioUnit

    init(node: AUNode, element: AudioUnitElement, unit: AudioUnit, averagingTime: Double, peakHoldTime: Double) {
        self.node = node
        self.element = element
        self.unit = unit
        self.averagingTime = averagingTime
        self.peakHoldTime = peakHoldTime
        core = MeterCore(averagingTime: averagingTime, peakHoldTime: peakHoldTime)
    }

    /// Channels in the metered element: its format's when installed, then as last rendered
    /// (the format may change with an ``AudioGraph/update()``). Thread: any.
    public var channelCount: Int { core.channelCount.load(ordering: .relaxed) }

    /// The channel's index into the published readings, or ``AudioUnitError/invalidPropertyValue``.
    func checked(_ channel: Int) throws(AudioUnitError) -> Int {
        guard channel >= 0, channel < min(MeterCore.maximumChannels, channelCount) else { throw .invalidPropertyValue }
        return channel
    }

    /// Slices metered since installation. Thread: any.
    public var sliceCount: UInt64 { core.slices.load(ordering: .relaxed) }

    /// The average (RMS) level of a channel, in dBFS: `10·log10` of the exponentially weighted
    /// mean square (see the type's documentation), −160…0 for signals within full scale
    /// (louder signals read above 0).
    /// - Parameter channel: 0…``channelCount``−1.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a channel the element does not have.
    /// - Thread: any; lock-free.
    public func averagePower(channel: Int) throws(AudioUnitError) -> Float {
        try levels(channel: channel).average
    }

    /// The average and held peak of a channel from the same slice, in dBFS: what a meter
    /// display should read, since two separate calls may straddle a slice (the render thread
    /// publishes both as one atomic value, so the peak here is never below the average).
    /// - Parameter channel: 0…``channelCount``−1.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a channel the element does not have.
    /// - Thread: any; lock-free.
    public func levels(channel: Int) throws(AudioUnitError) -> (average: Float, peak: Float) {
        let channel = try checked(channel)
        let packed = core.publishedLevels[channel].load(ordering: .relaxed)
        let meanSquare = Float(bitPattern: UInt32(truncatingIfNeeded: packed >> 32))
        let peakPower = Float(bitPattern: UInt32(truncatingIfNeeded: packed))
        return (Self.decibels(power: Double(meanSquare)), Self.decibels(power: Double(peakPower)))
    }

    /// The held peak level of a channel, in dBFS: `20·log10(max |x|)`, held for ``peakHoldTime``.
    /// - Parameter channel: 0…``channelCount``−1.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a channel the element does not have.
    /// - Thread: any; lock-free.
    public func peakPower(channel: Int) throws(AudioUnitError) -> Float {
        try levels(channel: channel).peak
    }

    /// The largest peak of a channel since installation or the last ``resetPeaks()``, in dBFS.
    /// - Parameter channel: 0…``channelCount``−1.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a channel the element does not have.
    /// - Thread: any; lock-free.
    public func maximumPeakPower(channel: Int) throws(AudioUnitError) -> Float {
        let channel = try checked(channel)
        let peak = Double(Float(bitPattern: core.publishedMaximum[channel].load(ordering: .relaxed)))
        return Self.decibels(power: peak * peak)
    }

    /// Clears the held and maximum peaks; the render thread applies it at its next slice.
    /// Thread: any; lock-free.
    public func resetPeaks() {
        core.resetRequests.add(1, ordering: .relaxed)
    }

    /// `10·log10(power)`, at least −160.
    static func decibels(power: Double) -> Float {
        guard power > 1e-16 else { return silence }
        return max(silence, Float(10 * log10(power)))
    }
}

/// StreamFormat.maximumChannelCount, as a computed global: render code can read neither a
/// class's static members (metadata) nor a stored global (a lazy, locking initializer).
var meterChannelCapacity: Int { 64 }

/// The render-side state of a ``LevelMeter``: plain memory the render thread owns, plus the
/// atomics readers load. Sized for the largest channel count a format may have, so a format
/// change never needs new memory.
/// SAFETY (`@unchecked Sendable`): the render thread alone writes its state; other threads read only its atomics.
final class MeterCore: @unchecked Sendable {
    /// StreamFormat.maximumChannelCount.
    static var maximumChannels: Int { meterChannelCapacity }

    let averagingTime: Double
    let peakHoldTime: Double
    // Render thread only.
    let meanSquare: UnsafeMutablePointer<Double>
    let heldPeak: UnsafeMutablePointer<Float>
    let holdLeft: UnsafeMutablePointer<Int>
    /// [0] the sample rate the others were made for (0: none yet), [1] α, [2] hold length in frames.
    let coefficients: UnsafeMutablePointer<Double>
    let seenReset: UnsafeMutablePointer<UInt32>
    // Published (render thread stores, anyone loads).
    /// Per channel, the mean square (high 32 bits) and the held peak as a power,
    /// `max(peak², mean square)` (low 32 bits), as Floats in one atomic so readers get a pair
    /// from one slice.
    let publishedLevels: UnsafeMutablePointer<Atomic<UInt64>>
    let publishedMaximum: UnsafeMutablePointer<Atomic<UInt32>>
    let channelCount = Atomic<Int>(0)
    let slices = Atomic<UInt64>(0)
    let resetRequests = Atomic<UInt32>(0)

    init(averagingTime: Double, peakHoldTime: Double) {
        self.averagingTime = averagingTime
        self.peakHoldTime = peakHoldTime
        let n = MeterCore.maximumChannels
        meanSquare = .allocate(capacity: n); meanSquare.initialize(repeating: 0, count: n)
        heldPeak = .allocate(capacity: n); heldPeak.initialize(repeating: 0, count: n)
        holdLeft = .allocate(capacity: n); holdLeft.initialize(repeating: 0, count: n)
        coefficients = .allocate(capacity: 3); coefficients.initialize(repeating: 0, count: 3)
        seenReset = .allocate(capacity: 1); seenReset.initialize(to: 0)
        publishedLevels = .allocate(capacity: n)
        publishedMaximum = .allocate(capacity: n)
        for c in 0..<n {
            (publishedLevels + c).initialize(to: Atomic(0))
            (publishedMaximum + c).initialize(to: Atomic(0))
        }
    }

    deinit {
        let n = MeterCore.maximumChannels
        meanSquare.deallocate(); heldPeak.deallocate(); holdLeft.deallocate()
        coefficients.deallocate(); seenReset.deallocate()
        publishedLevels.deinitialize(count: n); publishedLevels.deallocate()
        publishedMaximum.deinitialize(count: n); publishedMaximum.deallocate()
    }

    /// Meters one slice. Render thread.
    @_noLocks
    func process(channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, channelCount count: Int,
                 frames: Int, sampleRate: Double) {
        let n = min(count, meterChannelCapacity)
        if coefficients[0] != sampleRate {
            let tau = averagingTime
            coefficients[1] = 1 - RealTime.exp(-1 / (tau * sampleRate))
            coefficients[2] = Double(Int(peakHoldTime * sampleRate + 0.5))
            coefficients[0] = sampleRate
        }
        let alpha = coefficients[1]
        // The recurrence m ← β·m + α·x², β = 1 − α, four samples per step:
        // m₄ = β⁴·m₀ + α·(x₃² + β·x₂² + β²·x₁² + β³·x₀²) — the same sum, one dependent
        // multiply-add per four samples instead of per sample (the chain was the cost).
        let beta = 1 - alpha, beta2 = beta * beta, beta3 = beta2 * beta, beta4 = beta2 * beta2
        let holdFrames = Int(coefficients[2])
        let reset = resetRequests.load(ordering: .relaxed)
        if reset != seenReset[0] {
            seenReset[0] = reset
            for c in 0..<meterChannelCapacity {
                heldPeak[c] = 0
                holdLeft[c] = 0
                publishedMaximum[c].store(0, ordering: .relaxed)
            }
        }
        for c in 0..<n {
            var m = meanSquare[c]
            var peak: Float = 0
            if let channels {
                let src = channels[c]
                var f = 0
                while f + 4 <= frames {
                    let x0 = src[f], x1 = src[f + 1], x2 = src[f + 2], x3 = src[f + 3]
                    let d0 = Double(x0), d1 = Double(x1), d2 = Double(x2), d3 = Double(x3)
                    m = beta4 * m + alpha * (d3 * d3 + beta * (d2 * d2) + beta2 * (d1 * d1) + beta3 * (d0 * d0))
                    peak = max(peak, max(max(abs(x0), abs(x1)), max(abs(x2), abs(x3))))
                    f += 4
                }
                while f < frames {
                    let x = src[f]
                    let xd = Double(x)
                    m += alpha * (xd * xd - m)
                    peak = max(peak, abs(x))
                    f += 1
                }
            } else if frames > 0 {
                m *= RealTime.pow(beta, Double(frames))
            }
            if m < 1e-20 { m = 0 }
            meanSquare[c] = m
            let held = heldPeak[c], left = holdLeft[c]  // locals: `||` would capture self
            if peak >= held || left <= 0 {
                heldPeak[c] = peak
                holdLeft[c] = holdFrames
            } else {
                holdLeft[c] -= frames
            }
            // Never below the average: the held peak falls to the latest slice's when its hold
            // ends, but the average decays over τ (a muted signal read −38 dB RMS, peak −inf).
            // Published as a power (|x|²) so the comparison needs no square root, in one atomic
            // with the mean square so a reader gets both from the same slice.
            let shown = Double(heldPeak[c])
            let meanSquare = Float(m), peakPower = Float(max(shown * shown, m))
            publishedLevels[c].store(UInt64(meanSquare.bitPattern) << 32 | UInt64(peakPower.bitPattern), ordering: .relaxed)
            if peak > Float(bitPattern: publishedMaximum[c].load(ordering: .relaxed)) {
                publishedMaximum[c].store(peak.bitPattern, ordering: .relaxed)
            }
        }
        channelCount.store(n, ordering: .relaxed)
        slices.store(slices.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }
}

extension AudioGraph {
    /// Installs a level meter on a node's output element; it starts metering at the next slice
    /// that renders the node, and keeps metering across ``update()``s until removed.
    /// - Parameters:
    ///   - node: a node of this graph.
    ///   - element: output element: 0, or for the ``IOUnit`` 1 (the device input, as the graph
    ///     receives it) or 0 (what the graph sends to the device).
    ///   - averagingTime: τ of the average meter in seconds, 0.001…10 (default 0.3).
    ///   - peakHoldTime: how long a peak holds, in seconds, 0…60 (default 1.5).
    /// - Returns: the meter; read it from any thread. Before its first slice it reads
    ///   ``LevelMeter/silence`` on each of the element's channels.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/invalidPropertyValue`` (times out of bounds or not finite),
    ///   ``AudioUnitError/cannotDoInCurrentContext`` (called on the render thread).
    /// - Thread: control thread; allocates; may wait up to one render cycle.
    public func installLevelMeter(on node: AUNode, element: AudioUnitElement = 0,
                                  averagingTime: Double = 0.3, peakHoldTime: Double = 1.5) throws(AudioUnitError) -> LevelMeter {
        let unit = try checkObservable(node, element)
        guard averagingTime.isFinite, averagingTime >= 0.001, averagingTime <= 10,
              peakHoldTime.isFinite, peakHoldTime >= 0, peakHoldTime <= 60 else { throw .invalidPropertyValue }
        let meter = LevelMeter(node: node, element: element, unit: unit, averagingTime: averagingTime, peakHoldTime: peakHoldTime)
        meter.core.channelCount.store(min(MeterCore.maximumChannels, Int(unit.outputFormats[Int(element)].channelsPerFrame)), ordering: .relaxed)
        unit.addObserver(ObserverEntry(kind: .meter, element: element,
                                       target: Unmanaged.passUnretained(meter.core).toOpaque()), owner: meter.core)
        return meter
    }

    /// Removes a level meter; when this returns the render thread no longer touches it and its
    /// readings stay as they were. Removing a meter twice does nothing.
    /// - Throws: ``AudioUnitError/cannotDoInCurrentContext`` (called on the render thread).
    /// - Thread: control thread; may wait up to one render cycle.
    public func removeLevelMeter(_ meter: LevelMeter) throws(AudioUnitError) {
        try checkControlThread()
        meter.unit.removeObserver(target: Unmanaged.passUnretained(meter.core).toOpaque())
    }
}

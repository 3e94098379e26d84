// Units: the peak limiter (kAudioUnitSubType_PeakLimiter) — a look-ahead limiter whose look-ahead is its reported latency — and its kernel.

/// A look-ahead peak limiter: the `kAudioUnitSubType_PeakLimiter` analogue, with a ceiling of ours.
///
/// After PreGain, no sample on the sample grid exceeds Ceiling (inter-sample peaks may: by
/// 0.44 dB on the tests' speech raised 20 dB, measured 4× oversampled, and more for content near
/// the Nyquist frequency; lower the ceiling for true-peak headroom). The gain each frame needs under the ceiling is held over AttackTime by a
/// sliding minimum and averaged over AttackTime (the look-ahead "hold then average" limiter:
/// Geraint Luff, "Designing a straightforward limiter", Signalsmith Audio, 2022; the sliding
/// minimum is Lemire's monotonic deque, 2006), so the gain goes down along a straight ramp that
/// reaches the needed gain exactly at the peak and comes back along another; a one-pole smoother
/// (DecayTime, its time constant) slows the recovery, never the reduction; a last cap at what
/// the leaving frame needs under the ceiling in force holds it through rounding and edits.
/// Audio whose peaks stay under the ceiling comes out unchanged (bit for bit at PreGain 0 dB),
/// delayed by the look-ahead.
///
/// The look-ahead is fixed: the longest AttackTime, 30 ms (1,440 frames at 48 kHz; D = 0.03 × rate
/// rounded to whole frames). It is the unit's latency, reported by the Latency property
/// (``AudioUnitPropertyID/latency``) and counted on every path through the unit; changing
/// AttackTime changes the ramp, never the latency.
///
/// PreGain and Ceiling move linearly across the next slice (or the automation's piece);
/// AttackTime and DecayTime apply from the next piece.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class PeakLimiterUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kLimiterParam_*`; Ceiling is ours.
    public enum Parameter {
        /// AttackTime: seconds, 0.001…0.03, default 0.012 (`kLimiterParam_AttackTime`): how long
        /// before a peak the gain starts down (whole frames, at most the look-ahead).
        public static let attackTime: AudioUnitParameterID = 0
        /// DecayTime: seconds, 0.001…0.06, default 0.024 (`kLimiterParam_DecayTime`): the time
        /// constant of the gain's recovery after the ramp out of a peak.
        public static let decayTime: AudioUnitParameterID = 1
        /// PreGain: dB, −40…40, default 0 (`kLimiterParam_PreGain`): gain before limiting.
        public static let preGain: AudioUnitParameterID = 2
        /// Ceiling: dBFS, −30…0, default 0 (no Apple counterpart; Apple's limits at full scale):
        /// the largest sample magnitude that comes out.
        public static let ceiling: AudioUnitParameterID = 3
    }

    /// The look-ahead in seconds: the longest AttackTime.
    public static let lookAheadTime = 0.03

    /// Creates a stereo limiter with Apple's defaults (attack 12 ms, decay 24 ms, pre-gain 0 dB)
    /// and a 0 dBFS ceiling.
    /// Thread: control thread.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .peakLimiter, inputFormats: [stereo], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.attackTime, name: "AttackTime", unit: .seconds,
                                minValue: 0.001, maxValue: 0.03, defaultValue: 0.012),
         AudioUnitParameterInfo(id: Parameter.decayTime, name: "DecayTime", unit: .seconds,
                                minValue: 0.001, maxValue: 0.06, defaultValue: 0.024),
         AudioUnitParameterInfo(id: Parameter.preGain, name: "PreGain", unit: .decibels,
                                minValue: -40, maxValue: 40, defaultValue: 0),
         AudioUnitParameterInfo(id: Parameter.ceiling, name: "Ceiling", unit: .decibels,
                                minValue: -30, maxValue: 0, defaultValue: 0)]
    }

    override var linksInputAndOutputFormats: Bool { true }

    /// D / rate: the look-ahead in whole frames at the rate the unit renders at.
    override var processingLatency: Double {
        let rate = renderRate
        return Double(PeakLimiterKernel.lookAheadFrames(sampleRate: rate)) / rate
    }

    /// The rate the next plan renders the unit at: its own format's when the application set
    /// one, else the graph's (the IO unit's device rate). A plan being built already uses it;
    /// the unit's stored format follows only when the plan is applied.
    var renderRate: Double {
        if let io = graph?.pending.io?.unit {
            return PlanBuilder.effective(self, .output, 0, rate: io.deviceOutputFormat.sampleRate).sampleRate
        }
        return currentSampleRate
    }

    /// The layout the last ``kernelStateSize(inputChannels:outputChannels:)`` sized, which a plan
    /// build asks for just before it prepares fresh state (the resolved channel count, which the
    /// stored format may not show yet). Control thread.
    private var sizedLayout = (channels: 2, lookAhead: 1440)

    override var kernelKind: KernelKind { .peakLimiter }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int {
        let d = PeakLimiterKernel.lookAheadFrames(sampleRate: renderRate)
        sizedLayout = (outputChannels, d)
        return PeakLimiterState.headerBytes
            + LookAheadLimiterState.byteCount(channels: outputChannels, capacity: LookAheadLimiterState.capacity(lookAhead: d))
    }
    // The rings' sizes; the kernel clears them (for the rate it renders at) on its first piece.
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        let (channels, d) = sizedLayout
        let capacity = LookAheadLimiterState.capacity(lookAhead: d)
        let header = state.bindMemory(to: PeakLimiterState.self, capacity: 1)
        header.initialize(to: PeakLimiterState())
        PeakLimiterState.limiter(header).initialize(to: LookAheadLimiterState(
            capacity: capacity, channels: channels, lookAhead: d, attack: 1, position: 0, sum: 1, reduced: 0,
            reduction: 0, head: 0, tail: 0))
    }
}

/// The limiter kernel's state: the parameters the last piece ended with, followed by the
/// ``LookAheadLimiterState`` and its rings. Trivial.
struct PeakLimiterState {
    /// The rate the rings were cleared for; 0 = not yet.
    var designRate: Float = 0
    /// PreGain (linear) and ceiling (linear) at the end of the last piece.
    var preGain: Float = 1
    var ceiling: Float = 1

    /// The limiter, right after the header (16-byte aligned).
    @_noLocks @inline(__always)
    static func limiter(_ state: UnsafeMutablePointer<PeakLimiterState>) -> UnsafeMutablePointer<LookAheadLimiterState> {
        UnsafeMutableRawPointer(state).advanced(by: headerBytes).assumingMemoryBound(to: LookAheadLimiterState.self)
    }
    /// The header's size rounded up to 16 bytes.
    static var headerBytes: Int { @_noLocks @inline(__always) get { (MemoryLayout<PeakLimiterState>.stride + 15) / 16 * 16 } }
}

/// The limiter's kernel: reads the parameters, keeps the look-ahead fixed, runs ``LookAheadLimiter``.
enum PeakLimiterKernel {
    /// D: the look-ahead in whole frames at `sampleRate`, at least 1.
    @_noLocks @inline(__always)
    static func lookAheadFrames(sampleRate: Double) -> Int {
        max(1, Int(RealTime.rint(0.03 * sampleRate)))
    }

    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: PeakLimiterState.self)
        let limiter = PeakLimiterState.limiter(state)
        let p = s.parameters
        // Bank slots: the definitions' order (0 AttackTime, 1 DecayTime, 2 PreGain, 3 Ceiling).
        let rate = Double(s.sampleRate)
        let attack = Int(RealTime.rint(Double(loadParameter(p, 0)) * rate))
        let release = PeakDetector.coefficient(seconds: loadParameter(p, 1), sampleRate: s.sampleRate)
        let preGain = Float(RealTime.pow(10, Double(loadParameter(p, 2)) / 20))
        let ceiling = Float(RealTime.pow(10, Double(loadParameter(p, 3)) / 20))
        guard limiter.pointee.channels == s.outputChannelCount else {
            // Cannot happen (the state is sized for the output's channels); silence if it did.
            for c in 0..<s.outputChannelCount { (s.output[c] + piece.offset).update(repeating: 0, count: piece.frames) }
            return
        }
        if state.pointee.designRate != s.sampleRate {
            LookAheadLimiter.reset(limiter, lookAhead: lookAheadFrames(sampleRate: rate), attack: attack)
            state.pointee.designRate = s.sampleRate
            state.pointee.preGain = preGain
            state.pointee.ceiling = ceiling
        } else {
            LookAheadLimiter.setAttack(limiter, attack)
        }
        if piece.snapsParameters {
            state.pointee.preGain = preGain
            state.pointee.ceiling = ceiling
        }
        LookAheadLimiter.process(limiter, input: UnsafePointer(s.inputs[0].channels), inputChannels: s.inputs[0].channelCount,
                                 output: UnsafePointer(s.output), offset: piece.offset, frames: piece.frames,
                                 gain0: state.pointee.preGain, gain1: preGain,
                                 ceiling0: state.pointee.ceiling, ceiling1: ceiling, release: release)
        state.pointee.preGain = preGain
        state.pointee.ceiling = ceiling
    }
}

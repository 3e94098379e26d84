// Units: time-pitch (kAudioUnitSubType_NewTimePitch) — rate and pitch apart, on SoundTouch's WSOLA and libsamplerate — and its kernel.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Changes playback rate without changing pitch, and pitch without changing rate: the
/// `kAudioUnitSubType_NewTimePitch` (AUNewTimePitch) analogue, component `aufc`/`nutp`/`appl`.
///
/// **Algorithm**: the input goes through SoundTouch's WSOLA time-stretch (Olli Parviainen's
/// SoundTouch 2.3, Debian `libsoundtouch-dev`, LGPL-2.1, linked dynamically through the C shim
/// `CSoundTouch`) at tempo Rate / p, then through libsamplerate (`SRC_SINC_MEDIUM_QUALITY`) at
/// 1 / p output frames per input frame, where p = 2^(Pitch / 1200): the resampler shifts the
/// pitch by p and shortens by p what WSOLA lengthened by p. SoundTouch's own rate transposer is
/// not used, because changing it redesigns its anti-alias filter with `new`/`delete` (see below).
///
/// **Ranges (narrower than Apple's)**: Rate 1/4…4 and Pitch −1200…+1200 cents (Apple's unit
/// takes 1/32…32 and ±2400), so SoundTouch's tempo Rate / p stays within 1/8…8
/// (``tempoRange``). SoundTouch's FIFOs grow on demand (`new[]` in
/// `FIFOSampleBuffer::ensureCapacity`, never shrinking); the most they can need is set by the
/// tempo range (the input WSOLA holds at the top tempo, all processed in one put after a jump
/// to the bottom tempo). Over 1/8…8 that is, by our estimate from WSOLA's sequence lengths,
/// about 120,000 frames of output at 48 kHz, which the unit allocates up front; over 1/128…128
/// it would be some 25 million frames per instance (the warm-up over that range took minutes).
///
/// **Real-time safety, measured**: on the render thread the kernel calls only SoundTouch's
/// `putSamples`, `receiveSamples` and `setTempo` (WSOLA's sequence lengths: plain arithmetic),
/// and libsamplerate's `src_process`. The unit warms each SoundTouch instance up on the
/// control thread when the plan is built (`TimeStretchState.warmUp`:
/// the largest input and output its FIFOs can be asked to hold), so that on the render thread
/// these calls neither allocate nor lock: `TimePitchRealTimeTests` counts 0 allocations, 0
/// frees and 0 `pthread_mutex_lock` calls on the JACK process thread under live edits of Rate
/// and Pitch across their ranges in an optimized build. A jump from the top tempo to the bottom
/// makes one put run every WSOLA sequence the held input allows (about 30 at 48 kHz, estimated): a burst
/// of work in that cycle, not an allocation. Changing Overlap reallocates SoundTouch's overlap
/// buffer, so Overlap takes effect when the kernel state is next made
/// (``AudioGraph/initialize()``, or a plan change of rate or channels), not live; the value set
/// is kept and reads back.
///
/// **Pull and the input FIFO**: as ``VarispeedUnit``: about N × Rate input frames are taken
/// from the unit's FIFO per N output frames; with live input, Rate < 1 builds a backlog bounded
/// at ``maximumBacklog`` (4 s; older frames dropped, counted in ``droppedFrames``) and Rate > 1
/// runs short (silence, counted in ``underrunFrames``).
///
/// **Latency**: SoundTouch's initial latency (`SETTING_INITIAL_LATENCY` at tempo 1): the
/// kernel holds its output until that much input has arrived, and the start-up right-aligns
/// the first output, which absorbs the resampler's own delay.
/// ``latencyFrames(sampleRate:overlap:)`` is 4,401 frames (91.7 ms) at 48 kHz with the default
/// overlap; `TimePitchTests` measures the delay of a noise burst (cross-correlation peak) at
/// 4,401 frames, at slices of 100 and 256 and overlaps 8 and 16. Reported by the Latency
/// property and counted by latency compensation.
///
/// EnablePeakLocking is accepted and stored and has no effect: peak locking is a phase-vocoder
/// technique (Apple's unit is one); WSOLA shifts whole waveform segments, whose peaks keep their
/// phase relations by construction.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit; the counters are atomics.
public final class TimePitchUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kNewTimePitchParam_*`.
    public enum Parameter {
        /// Rate: rate, 1/4…4 (Apple: 1/32…32; see the unit's ranges), default 1
        /// (`kNewTimePitchParam_Rate`): 2 plays twice as fast at the same pitch.
        public static let rate: AudioUnitParameterID = 0
        /// Pitch: cents, −1200…1200 (Apple: ±2400), default 0 (`kNewTimePitchParam_Pitch`):
        /// 1200 is an octave up at the same rate.
        public static let pitch: AudioUnitParameterID = 1
        /// Overlap: generic, 3…32, default 8 (`kNewTimePitchParam_Overlap`): mapped to
        /// SoundTouch's WSOLA overlap in milliseconds (its default is 8 ms too). Takes effect
        /// when the kernel state is next made (see the unit's documentation).
        public static let overlap: AudioUnitParameterID = 4
        /// EnablePeakLocking: boolean, default 1 (`kNewTimePitchParam_EnablePeakLocking`).
        /// Accepted; no effect on WSOLA.
        public static let enablePeakLocking: AudioUnitParameterID = 6
    }

    /// The longest backlog of input kept when the rate is below 1, in seconds.
    public static let maximumBacklog = 4.0
    /// Rate's bounds.
    public static let rateRange: ClosedRange<Float> = 0.25...4
    /// Pitch's bounds, in cents.
    public static let pitchRange: ClosedRange<Float> = -1200...1200
    /// The tempos SoundTouch can be set to (Rate / p at the ends of the ranges), which its
    /// warm-up covers.
    public static let tempoRange: ClosedRange<Double> = 1.0 / 8...8

    let counters: UnsafeMutablePointer<Atomic<UInt64>>

    /// Creates a stereo time-pitch unit at rate 1, pitch 0.
    /// Thread: control thread.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        counters = .allocate(capacity: 2)
        counters.initialize(to: Atomic(0))
        (counters + 1).initialize(to: Atomic(0))
        super.init(type: .timePitch, inputFormats: [stereo], outputFormats: [stereo])
    }

    deinit {
        counters.deinitialize(count: 2)
        counters.deallocate()
    }

    /// Output frames that came out as silence because the input ran short (Rate > 1 on live
    /// input). Any thread.
    public var underrunFrames: UInt64 { counters[0].load(ordering: .relaxed) }
    /// Input frames dropped because the backlog was full (Rate < 1 on live input). Any thread.
    public var droppedFrames: UInt64 { counters[1].load(ordering: .relaxed) }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.rate, name: "Rate", unit: .rate,
                                minValue: rateRange.lowerBound, maxValue: rateRange.upperBound, defaultValue: 1, clampsToRange: false),
         AudioUnitParameterInfo(id: Parameter.pitch, name: "Pitch", unit: .cents,
                                minValue: pitchRange.lowerBound, maxValue: pitchRange.upperBound, defaultValue: 0, clampsToRange: false),
         AudioUnitParameterInfo(id: Parameter.overlap, name: "Overlap", unit: .generic,
                                minValue: 3, maxValue: 32, defaultValue: 8, clampsToRange: false),
         AudioUnitParameterInfo(id: Parameter.enablePeakLocking, name: "EnablePeakLocking", unit: .boolean,
                                minValue: 0, maxValue: 1, defaultValue: 1)]
    }

    /// Out-of-range values are refused with ``AudioUnitError/invalidParameter`` (nothing changes).
    override func checkParameterValue(_ info: AudioUnitParameterInfo, _ value: Float) throws(AudioUnitError) {
        guard value >= info.minValue, value <= info.maxValue else { throw .invalidParameter }
    }

    override var linksInputAndOutputFormats: Bool { true }

    /// The latency in frames at `sampleRate` with WSOLA's overlap of `overlap` ms: SoundTouch's
    /// initial latency at tempo 1 (the kernel holds its output until that much input has
    /// arrived; the start-up right-aligns the first output, absorbing the resampler's delay):
    /// 4,401 frames (91.7 ms) at 48 kHz with the default overlap, equal to the measured delay
    /// (`TimePitchTests.reportedLatencyMatchesTheMeasuredDelay`). Control thread; allocates (a
    /// scratch SoundTouch instance).
    public static func latencyFrames(sampleRate: Double, overlap: Int = 8) -> Int {
        TimeStretchState.soundTouchInitialLatency(channels: 1, sampleRate: sampleRate, overlapMilliseconds: overlap)
    }

    override var processingLatency: Double {
        let rate = renderRate
        return Double(Self.latencyFrames(sampleRate: rate, overlap: Int(bank.load(2).rounded()))) / rate
    }

    /// The rate the next plan renders the unit at (as the peak limiter's).
    var renderRate: Double {
        if let io = graph?.pending.io?.unit {
            return PlanBuilder.effective(self, .output, 0, rate: io.deviceOutputFormat.sampleRate).sampleRate
        }
        return currentSampleRate
    }

    private var sizedLayout = (channels: 2, rate: 48_000.0, backlog: 192_000)

    override var kernelKind: KernelKind { .timePitch }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int, sampleRate: Double) -> Int {
        let backlog = Int((Self.maximumBacklog * sampleRate).rounded(.up))
        sizedLayout = (outputChannels, sampleRate, backlog)
        return TimeStretchState.byteCount(channels: outputChannels, backlogFrames: backlog)
    }
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        let (channels, rate, backlog) = sizedLayout
        let overlap = Int(bank.load(2).rounded())
        _ = TimeStretchState.prepare(state, channels: channels, sampleRate: rate, backlogFrames: backlog,
                                     counters: counters, overlapMilliseconds: overlap, tempoRange: Self.tempoRange)
    }
    override var kernelStateRelease: (@Sendable (UnsafeMutableRawPointer) -> Void)? {
        { TimeStretchState.release($0) }
    }
}

/// The time-pitch kernel: the input slice into the FIFO, then ``TimeStretchState/render`` at
/// tempo Rate / p and ratio 1 / p.
enum TimePitchKernel {
    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: TimeStretchState.self)
        guard state.pointee.channels == s.outputChannelCount, state.pointee.sampleRate == s.sampleRate,
              state.pointee.soundTouch != nil else {
            for c in 0..<s.outputChannelCount { (s.output[c] + piece.offset).update(repeating: 0, count: piece.frames) }
            return
        }
        TimeStretchState.take(state, s.inputs[0], offset: piece.offset, frames: piece.frames)
        // Clamped again here: a ramp's values stay in range, but the warm-up's bounds must hold.
        let rate = min(max(Double(loadParameter(s.parameters, 0)), 0.25), 4)
        let cents = min(max(Double(loadParameter(s.parameters, 1)), -1200), 1200)
        let p = RealTime.pow(2, cents / 1200)
        let tempo = min(max(rate / p, 0.125), 8)  // TimePitchUnit.tempoRange (literals: no lazy global here)
        TimeStretchState.render(state, output: s.output, outputChannels: s.outputChannelCount, offset: piece.offset,
                                frames: piece.frames, tempo: tempo, ratio: 1 / p)
    }
}

// Units: varispeed (kAudioUnitSubType_Varispeed) — playback rate with pitch following, on libsamplerate — and its kernel.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Plays its input faster or slower, pitch following, as a tape or turntable would: the
/// `kAudioUnitSubType_Varispeed` (AUVarispeed) analogue, component `aufc`/`vari`/`appl`.
///
/// **Algorithm**: libsamplerate (`SRC_SINC_MEDIUM_QUALITY`, the resampler the engine's format
/// conversion uses) at a ratio of 1 / PlaybackRate output frames per input frame. A rate change
/// glides: libsamplerate moves the ratio linearly across the next call (≤ 256 frames), so edits
/// do not click and the filter history is kept.
///
/// **Pull and the input FIFO**: to make N output frames the kernel takes about N × rate input
/// frames from a FIFO of its own, so any slice size works. The engine renders every unit once
/// per slice in pull order, so upstream units (a file player, a generator, the device input)
/// deliver one slice of input per slice; the FIFO absorbs the difference:
/// - rate < 1 consumes less than arrives: a backlog builds, bounded at ``maximumBacklog`` (4 s at
///   the unit's rate); beyond it the oldest frames are dropped and counted in ``droppedFrames``;
/// - rate > 1 consumes more than arrives: the output runs short; the missing frames are silence,
///   counted in ``underrunFrames``. Nothing crashes and audio keeps flowing.
/// This is the behaviour with live input. For a non-real-time pull of more input per slice,
/// render a file offline (``OfflineRenderer``) feeding as much input as the rate needs.
///
/// **Latency**: the resampler's group delay (``resamplerDelayFrames`` input frames, measured),
/// reported by the Latency property (``AudioUnitPropertyID/latency``) at rate 1 and counted by
/// latency compensation.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit; the counters are atomics.
public final class VarispeedUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kVarispeedParam_*`.
    public enum Parameter {
        /// PlaybackRate: rate, 0.25…4, default 1 (`kVarispeedParam_PlaybackRate`). Setting it sets
        /// PlaybackCents to 1200 · log2(rate).
        public static let playbackRate: AudioUnitParameterID = 0
        /// PlaybackCents: cents, −2400…2400, default 0 (`kVarispeedParam_PlaybackCents`). Setting
        /// it sets PlaybackRate to 2^(cents / 1200); a scheduled change of it drives the rate too.
        public static let playbackCents: AudioUnitParameterID = 1
    }

    /// The longest backlog of input kept when the rate is below 1, in seconds.
    public static let maximumBacklog = 4.0
    /// The resampler's group delay in input frames (libsamplerate `SRC_SINC_MEDIUM_QUALITY`),
    /// measured by `VarispeedTests`.
    public static let resamplerDelayFrames = 47

    let counters: UnsafeMutablePointer<Atomic<UInt64>>

    /// Creates a stereo varispeed at rate 1.
    /// Thread: control thread.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        counters = .allocate(capacity: 2)
        counters.initialize(to: Atomic(0))
        (counters + 1).initialize(to: Atomic(0))
        super.init(type: .varispeed, inputFormats: [stereo], outputFormats: [stereo])
    }

    deinit {
        counters.deinitialize(count: 2)
        counters.deallocate()
    }

    /// Output frames that came out as silence because the input ran short (rate > 1 on live
    /// input). Any thread.
    public var underrunFrames: UInt64 { counters[0].load(ordering: .relaxed) }
    /// Input frames dropped because the backlog was full (rate < 1 on live input). Any thread.
    public var droppedFrames: UInt64 { counters[1].load(ordering: .relaxed) }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.playbackRate, name: "PlaybackRate", unit: .rate,
                                minValue: 0.25, maxValue: 4, defaultValue: 1, clampsToRange: false),
         AudioUnitParameterInfo(id: Parameter.playbackCents, name: "PlaybackCents", unit: .cents,
                                minValue: -2400, maxValue: 2400, defaultValue: 0, clampsToRange: false)]
    }

    /// Out-of-range values are refused with ``AudioUnitError/invalidParameter`` (nothing changes).
    override func checkParameterValue(_ info: AudioUnitParameterInfo, _ value: Float) throws(AudioUnitError) {
        guard value >= info.minValue, value <= info.maxValue else { throw .invalidParameter }
    }

    /// Rate and cents are linked, as on Apple's unit.
    override func parameterDidChange(_ id: AudioUnitParameterID, _ value: Float) {
        if id == Parameter.playbackRate {
            bank.store(1, Float(1200 * log2(Double(value))))
        } else if id == Parameter.playbackCents {
            bank.store(0, Float(pow(2, Double(value) / 1200)))
        }
    }

    override var linksInputAndOutputFormats: Bool { true }

    override var processingLatency: Double {
        Double(Self.resamplerDelayFrames) / renderRate
    }

    /// The rate the next plan renders the unit at (as the peak limiter's).
    var renderRate: Double {
        if let io = graph?.pending.io?.unit {
            return PlanBuilder.effective(self, .output, 0, rate: io.deviceOutputFormat.sampleRate).sampleRate
        }
        return currentSampleRate
    }

    private var sizedLayout = (channels: 2, rate: 48_000.0, backlog: 192_000)

    override var kernelKind: KernelKind { .varispeed }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int, sampleRate: Double) -> Int {
        let backlog = Int((Self.maximumBacklog * sampleRate).rounded(.up))
        sizedLayout = (outputChannels, sampleRate, backlog)
        return TimeStretchState.byteCount(channels: outputChannels, backlogFrames: backlog)
    }
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        let (channels, rate, backlog) = sizedLayout
        _ = TimeStretchState.prepare(state, channels: channels, sampleRate: rate, backlogFrames: backlog,
                                     counters: counters, overlapMilliseconds: 0, tempoRange: nil)
    }
    override var kernelStateRelease: (@Sendable (UnsafeMutableRawPointer) -> Void)? {
        { TimeStretchState.release($0) }
    }
}

/// The varispeed kernel: the input slice into the FIFO, then ``TimeStretchState/render`` at
/// ratio 1 / rate.
enum VarispeedKernel {
    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: TimeStretchState.self)
        guard state.pointee.channels == s.outputChannelCount, state.pointee.sampleRate == s.sampleRate else {
            // A state made for another layout (cannot happen: sizes differ); silence if it did.
            for c in 0..<s.outputChannelCount { (s.output[c] + piece.offset).update(repeating: 0, count: piece.frames) }
            return
        }
        TimeStretchState.take(state, s.inputs[0], offset: piece.offset, frames: piece.frames)
        let rate = TimeStretchState.linkedRate(state, rate: loadParameter(s.parameters, 0), cents: loadParameter(s.parameters, 1))
        TimeStretchState.render(state, output: s.output, outputChannels: s.outputChannelCount, offset: piece.offset,
                                frames: piece.frames, tempo: 1, ratio: 1 / rate)
    }
}

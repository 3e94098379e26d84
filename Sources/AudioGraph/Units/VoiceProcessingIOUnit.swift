// Units: the voice-processing IO unit (Apple's VoiceProcessingIO, `auou/vpio`) — the IO unit with echo cancellation, noise suppression and AGC on its microphone.
import Synchronization

/// The IO unit with voice processing on the microphone: Apple's
/// `kAudioUnitSubType_VoiceProcessingIO` (component `auou/vpio/appl`). Same elements, scopes,
/// formats, callbacks and taps as ``IOUnit``; element 1's output (the microphone as the graph
/// receives it) is the device input after WebRTC's echo canceller, noise suppressor, automatic
/// gain control and voice activity detector (``VoiceProcessor``), run against the far end:
/// what the device output played, element 0.
///
/// Properties (global scope, element 0, `.uint32` 0/1, settable while rendering; Apple's IDs
/// from `AudioUnitProperties.h`): ``AudioUnitPropertyID/bypassVoiceProcessing`` (2100),
/// ``AudioUnitPropertyID/voiceProcessingEnableAGC`` (2101, default on as Apple's),
/// ``AudioUnitPropertyID/muteOutput`` (2104). Parameters: ``Parameter``. Meters (read-only
/// parameters, updated every 10 ms): ERLE, speech probability, voice activity, processing gain.
///
/// Latency: element 1 lags the device input by the 10 ms framing plus one expected slice
/// (``expectedSliceFrames``, the JACK period) plus the library's own delay; the Latency property
/// and ``AudioGraph/renderLatency`` (hence JACK's port latencies) include it. The echo path
/// delay the canceller starts from is the device's capture + playback latency (the JACK driver
/// gives it from the ports' latency ranges) plus ``extraEchoPathDelay``.
///
/// Real-time design: see the engine (`VoiceIOEngine`, internal) — the library locks a mutex per 10 ms frame, so on
/// a live driver it runs on a worker thread fed by the render thread through preallocated slots;
/// the render thread only copies (0 allocations, 0 locks). Offline (``OfflineRenderer``) the
/// render thread processes inline, deterministically.
///
/// Rates: 8 to 192 kHz. Multiples of 100 Hz go to the library as they are (it resamples to
/// 48 kHz at most inside); others (22 050, 11 025 Hz), whose 10 ms is not whole frames, are
/// converted to the next of 8, 16, 32 or 48 kHz and back (libsamplerate), which adds a fixed
/// latency (reported). 1…8 channels each way. Another device format makes initialization throw
/// ``AudioUnitError/formatNotSupported``.
/// Thread: control thread, like every ``AudioUnit``; parameters from any thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit; the voice settings are atomics (`VoiceIOControls`).
public final class VoiceProcessingIOUnit: IOUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0).
    public enum Parameter {
        /// NoiseSuppression: 0 off, 1 low (about 6 dB), 2 moderate (10 dB), 3 high (15 dB),
        /// 4 very high (20 dB); indexed, default 2.
        public static let noiseSuppression: AudioUnitParameterID = 0
        /// EchoSuppression: the canceller's residual-echo suppressor, 0 low, 1 moderate, 2 high;
        /// indexed, default 1.
        public static let echoSuppression: AudioUnitParameterID = 1
        /// AGCTargetLevel: the peak envelope the AGC aims for, dBFS, −31…0, default −3.
        public static let agcTargetLevel: AudioUnitParameterID = 2
        /// AGCCompressionGain: the most gain the AGC applies, dB, 0…90, default 9.
        public static let agcCompressionGain: AudioUnitParameterID = 3
        /// Read-only: the canceller's echo return loss enhancement, dB (its long-term average;
        /// NaN until it has one, or with processing bypassed from the start).
        public static let echoReturnLossEnhancement: AudioUnitParameterID = 1000
        /// Read-only: the noise suppressor's speech probability for the last 10 ms, 0…1 (NaN
        /// with noise suppression off).
        public static let speechProbability: AudioUnitParameterID = 1001
        /// Read-only: the voice activity detector's decision for the last 10 ms, 0/1.
        public static let voiceActivity: AudioUnitParameterID = 1002
        /// Read-only: the level change processing made over the last 10 ms, dB (output RMS over
        /// the microphone's): echo removed, noise suppressed and the AGC's gain together
        /// (webrtc-audio-processing 0.3 has no reading of the AGC's gain alone).
        public static let processingGain: AudioUnitParameterID = 1003
    }

    /// Bank slots, in definition order.
    enum Slot {
        static let noiseSuppression = 0, echoSuppression = 1, agcTargetLevel = 2, agcCompressionGain = 3
        static let erle = 4, speechProbability = 5, voiceActivity = 6, processingGain = 7
    }

    let controls = VoiceIOControls()
    /// The engine the current plan runs (made when a plan is built; reused while the device
    /// format, slice bounds and mode stay).
    private(set) var engine: VoiceIOEngine?

    /// The slice size the latency is set for, frames (a JACK period; drivers set it before
    /// initializing). A longer slice while rendering raises the latency once (a gap).
    /// Default 256. Thread: control thread.
    public private(set) var expectedSliceFrames = 256

    /// Sets ``expectedSliceFrames``: before initialization it sets the latency the engine starts
    /// with; while rendering (a driver whose period changed) it re-plans the graph so that
    /// ``AudioGraph/renderLatency`` reports the latency the engine runs with now (a longer period
    /// raised it at its first slice; a shorter one keeps it until the graph is re-initialized).
    /// - Parameter frames: 1…16 384.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` out of bounds (nothing changed); the
    ///   graph's errors from re-planning (the running plan stays).
    /// - Thread: control thread.
    public func setExpectedSliceFrames(_ frames: Int) throws(AudioUnitError) {
        guard (1...16_384).contains(frames) else { throw .invalidPropertyValue }
        expectedSliceFrames = frames
        try graph?.republish()
    }

    /// How many of the device output's first channels are the far end (what the speaker plays),
    /// 1…8; nil (the default) takes them all. For a device output that carries more than the
    /// speaker — graphvoice sends the processed microphone on as `uplink_1…` after `out_1…`.
    /// Takes effect when the graph next initializes or updates. Thread: control thread.
    public var farEndChannels: Int?

    /// The worker thread's SCHED_FIFO priority, 1…99 (one below the render thread's: the JACK
    /// driver sets its client's real-time priority − 1), or 0 (the default) for an ordinary
    /// thread. Takes effect with the next engine (the graph's next initialization at another
    /// format). Thread: control thread.
    public var workerPriority: Int32 = 0

    /// Set by ``OfflineRenderer``: process on the render thread (deterministic).
    var rendersOffline = false

    /// Creates a voice-processing IO unit (stereo 48 kHz device until a driver configures it).
    public override init() {
        super.init()
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.noiseSuppression, name: "NoiseSuppression", unit: .indexed,
                                minValue: 0, maxValue: 4, defaultValue: 2),
         AudioUnitParameterInfo(id: Parameter.echoSuppression, name: "EchoSuppression", unit: .indexed,
                                minValue: 0, maxValue: 2, defaultValue: 1),
         AudioUnitParameterInfo(id: Parameter.agcTargetLevel, name: "AGCTargetLevel", unit: .decibels,
                                minValue: -31, maxValue: 0, defaultValue: -3),
         AudioUnitParameterInfo(id: Parameter.agcCompressionGain, name: "AGCCompressionGain", unit: .decibels,
                                minValue: 0, maxValue: 90, defaultValue: 9),
         AudioUnitParameterInfo(id: Parameter.echoReturnLossEnhancement, name: "EchoReturnLossEnhancement", unit: .decibels,
                                minValue: -120, maxValue: 120, defaultValue: .nan, isReadOnly: true),
         AudioUnitParameterInfo(id: Parameter.speechProbability, name: "SpeechProbability", unit: .generic,
                                minValue: 0, maxValue: 1, defaultValue: .nan, isReadOnly: true),
         AudioUnitParameterInfo(id: Parameter.voiceActivity, name: "VoiceActivity", unit: .boolean,
                                minValue: 0, maxValue: 1, defaultValue: 0, isReadOnly: true),
         AudioUnitParameterInfo(id: Parameter.processingGain, name: "ProcessingGain", unit: .decibels,
                                minValue: -120, maxValue: 120, defaultValue: .nan, isReadOnly: true)]
    }

    /// The echo path delay added to the device's capture + playback latency for the
    /// canceller's hint: the acoustic path from speaker to microphone, seconds, 0…0.5, default 0.
    /// The canceller tracks some error around the hint on its own.
    /// - Thread: any.
    public var extraEchoPathDelay: Double {
        get { Double(controls.extraEchoDelayMicroseconds.load(ordering: .relaxed)) / 1e6 }
        set { controls.extraEchoDelayMicroseconds.store(Int((min(max(newValue.isFinite ? newValue : 0, 0), 0.5) * 1e6).rounded()), ordering: .relaxed) }
    }

    /// Whether the canceller's hint includes the device's capture + playback latency (default
    /// true). Through other JACK clients — a loop, a room simulator, a network bridge — JACK adds
    /// up latencies that are not the acoustic path (a loop back into graphvoice reported 117–234
    /// ms for a 5 ms path, and the canceller took about 15 s to find the echo from there): set
    /// false and give the path as ``extraEchoPathDelay``. Thread: any.
    public var usesDeviceLatency: Bool {
        get { controls.usesDeviceLatency.load(ordering: .relaxed) }
        set { controls.usesDeviceLatency.store(newValue, ordering: .relaxed) }
    }

    /// Tells the canceller the device's capture or playback latency (JACK's port latency
    /// ranges), frames ≥ 0; nil leaves one as it was. Drivers call it when the server's
    /// latencies change. Thread: any.
    public func setDeviceLatency(captureFrames: Int? = nil, playbackFrames: Int? = nil) {
        if let captureFrames { controls.captureLatencyFrames.store(max(0, captureFrames), ordering: .relaxed) }
        if let playbackFrames { controls.playbackLatencyFrames.store(max(0, playbackFrames), ordering: .relaxed) }
    }

    /// What the voice processing has done so far, for status lines and tests. Thread: any.
    public struct Statistics: Sendable, Equatable {
        /// 10 ms frames processed (device frames of `rate / 100` at 22 050 and 11 025 Hz).
        public var frames: UInt64
        /// Sample frames element 1 delivered as silence (bypassed: unprocessed) because the
        /// worker had not finished their 10 ms frame in time.
        public var lateFrames: UInt64
        /// Times a slice longer than expected raised the latency.
        public var latencyIncreases: UInt64
        /// The echo path delay hint in force, ms.
        public var echoPathDelayMilliseconds: Int
        /// The canceller's delay metric (WebRTC's `GetDelayMetrics` median, ms): where in its
        /// buffers it finds the echo relative to the hint, not the echo path's delay itself
        /// (nil: none yet).
        public var delayEstimateMilliseconds: Int?
        /// Echo return loss (far end to microphone), dB, the canceller's average (nil: none yet).
        public var echoReturnLossDB: Float?
        /// Element 1's latency, frames at the device rate (0 before a plan).
        public var latencyFrames: Int
        /// Whether the worker runs with real-time scheduling (false offline or where refused).
        public var workerIsRealTime: Bool
        /// For a device rate that is not a multiple of 100 Hz (the library runs at its own rate
        /// behind libsamplerate): device frames the bridge had no output for, silence instead;
        /// 0 by its sizing.
        public var resamplingShortfallFrames: UInt64 = 0
        /// NaN or ±Inf samples the library's output held, replaced with 0 (never seen so far).
        public var nonFiniteOutputSamples: UInt64 = 0
    }

    /// The engine's counters and figures now. Thread: any (reads atomics).
    public var statistics: Statistics {
        guard let e = engine else {
            return Statistics(frames: 0, lateFrames: 0, latencyIncreases: 0, echoPathDelayMilliseconds: 0, delayEstimateMilliseconds: nil,
                              echoReturnLossDB: nil, latencyFrames: 0, workerIsRealTime: false)
        }
        let delay = e.meters.delayEstimateMilliseconds.load(ordering: .relaxed)
        let erl = Float(bitPattern: e.meters.erl.load(ordering: .relaxed))
        return Statistics(frames: e.meters.frames.load(ordering: .relaxed), lateFrames: e.lateFrames.load(ordering: .relaxed),
                          latencyIncreases: e.latencyIncreases.load(ordering: .relaxed),
                          echoPathDelayMilliseconds: e.meters.echoPathDelayMilliseconds.load(ordering: .relaxed),
                          delayEstimateMilliseconds: delay >= 0 ? delay : nil, echoReturnLossDB: erl.isNaN ? nil : erl,
                          latencyFrames: e.totalLatencyFrames.load(ordering: .relaxed), workerIsRealTime: e.workerIsRealTime.load(ordering: .relaxed),
                          resamplingShortfallFrames: e.meters.bridgeShortfall.load(ordering: .relaxed),
                          nonFiniteOutputSamples: e.meters.nonFiniteOutput.load(ordering: .relaxed))
    }

    /// Element 1's latency from the voice processing (the slots and the library), seconds.
    override var processingLatency: Double {
        guard let e = engine else { return 0 }
        return Double(e.totalLatencyFrames.load(ordering: .relaxed)) / Double(e.sampleRate)
    }

    /// The engine for a plan at `sampleRate` with the device's channel counts; the current one
    /// when nothing it depends on changed. Control thread; allocates.
    func prepareEngine(sampleRate: Double, maximumFramesPerSlice: Int) throws(AudioUnitError) -> VoiceIOEngine {
        let rate = Int(sampleRate)
        guard Double(rate) == sampleRate else { throw .formatNotSupported }
        let mic = Int(deviceInputFormat.channelsPerFrame)
        let far = min(Int(deviceOutputFormat.channelsPerFrame), farEndChannels ?? Int.max)
        guard far >= 1 else { throw .formatNotSupported }
        if let e = engine, e.sampleRate == rate, e.microphoneChannels == mic, e.farEndChannels == far,
           e.maximumFramesPerSlice == maximumFramesPerSlice, e.inline == rendersOffline {
            return e
        }
        let e = try VoiceIOEngine(sampleRate: rate, microphoneChannels: mic, farEndChannels: far,
                                  maximumFramesPerSlice: maximumFramesPerSlice, expectedSliceFrames: expectedSliceFrames,
                                  inline: rendersOffline, workerPriority: min(max(workerPriority, 0), 99),
                                  controls: controls, bank: bank)
        engine = e
        return e
    }

    /// The property's setting, or nil for a property of the plain IO unit.
    private func flag(_ id: AudioUnitPropertyID) -> ReferenceWritableKeyPath<VoiceProcessingIOUnit, Bool>? {
        switch id {
        case .bypassVoiceProcessing: \.bypassesVoiceProcessing
        case .voiceProcessingEnableAGC: \.enablesAGC
        case .muteOutput: \.mutesOutput
        default: nil
        }
    }

    override func getUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> AudioUnitPropertyValue {
        guard let flag = flag(id) else { return try super.getUnitProperty(id, scope: scope, element: element) }
        guard scope == .global else { throw .invalidScope }
        // Element 0 as Apple documents; 1 too, as code written for iOS passes it (WebRTC's own
        // VoiceProcessingIO code reads AGC on global scope, element 1) and Apple's unit takes it.
        guard element <= 1 else { throw .invalidElement }
        return .uint32(self[keyPath: flag] ? 1 : 0)
    }

    override func setUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, _ value: AudioUnitPropertyValue) throws(AudioUnitError) {
        guard let flag = flag(id) else { return try super.setUnitProperty(id, scope: scope, element: element, value) }
        guard scope == .global else { throw .invalidScope }
        guard element <= 1 else { throw .invalidElement }
        guard case .uint32(let v) = value, v <= 1 else { throw .invalidPropertyValue }
        self[keyPath: flag] = v == 1
    }

    /// Typed form of ``AudioUnitPropertyID/bypassVoiceProcessing`` (2100). Thread: any (an atomic).
    public var bypassesVoiceProcessing: Bool {
        get { controls.bypass.load(ordering: .relaxed) }
        set { controls.bypass.store(newValue, ordering: .relaxed) }
    }
    /// Typed form of ``AudioUnitPropertyID/voiceProcessingEnableAGC`` (2101). Thread: any (an atomic).
    public var enablesAGC: Bool {
        get { controls.agc.load(ordering: .relaxed) }
        set { controls.agc.store(newValue, ordering: .relaxed) }
    }
    /// Typed form of ``AudioUnitPropertyID/muteOutput`` (2104). Thread: any (an atomic).
    public var mutesOutput: Bool {
        get { controls.mute.load(ordering: .relaxed) }
        set { controls.mute.store(newValue, ordering: .relaxed) }
    }
}

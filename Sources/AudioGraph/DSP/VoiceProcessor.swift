// DSP: voice processing — WebRTC's echo canceller, noise suppressor, AGC and VAD (webrtc-audio-processing 0.3) on 10 ms frames, fed slices of any size.
import CWebRTCAudioProcessing

/// Echo cancellation, noise suppression, automatic gain control and voice activity detection on
/// a microphone signal, against the far-end signal sent to the speaker: what Apple's
/// VoiceProcessingIO unit (`kAudioUnitSubType_VoiceProcessingIO`) does to its element 1.
///
/// The algorithms are WebRTC's audio processing module (`webrtc::AudioProcessing` from
/// webrtc-audio-processing 0.3, Debian's `libwebrtc-audio-processing-dev`, BSD-3-Clause), the
/// one PulseAudio's and PipeWire's echo-cancel modules use: the "AEC" echo canceller (a
/// frequency-domain adaptive filter with a non-linear suppressor), the Wiener-filter noise
/// suppressor, the AGC1 digital gain control and the GMM voice activity detector.
///
/// The library takes 10 ms frames. ``process(microphone:farEnd:frameCount:)`` takes slices of
/// any size up to ``maximumFramesPerSlice``, gathers each stream into 10 ms frames and hands
/// back the processed microphone ``latencyFrames`` (one 10 ms frame) later. Both streams are
/// gathered in step, so the delay between the far end and its echo that the library sees is the
/// acoustic one: give it as ``setEchoPathDelay(seconds:)``.
///
/// Non-finite samples (NaN, ±Inf) in either stream are replaced with 0 before the library sees
/// them and counted (``nonFiniteMicrophoneSamples``, ``nonFiniteFarEndSamples``).
///
/// Rates: any multiple of 100 Hz (10 ms must be whole frames); the library processes at 8, 16,
/// 32 or 48 kHz and resamples other rates inside. Rates that are not multiples of 100 Hz
/// (22 050, 11 025) are refused for now.
///
/// Thread: one thread at a time (the library's rule: the stream calls and the metric reads never
/// run concurrently with processing). `init` and `deinit` allocate. Whether
/// ``process(microphone:farEnd:frameCount:)`` is real-time safe is measured, not assumed
/// (`VoiceProcessorRealTimeTests`): no allocation after `init`, even the first frames (the
/// library allocates when a component is enabled), but three `pthread_mutex_lock` calls per
/// 10 ms frame (ProcessReverseStream, set_stream_delay_ms, ProcessStream; uncontended when one
/// thread owns the processor). So it is not for the render thread's `@_noLocks` path as is.
public final class VoiceProcessor {
    /// The echo suppressor's aggressiveness (`EchoCancellation::SuppressionLevel`): higher
    /// removes more residual echo at the cost of the near end during double talk.
    public enum EchoSuppression: Int32, Sendable, CaseIterable {
        /// The library's kLowSuppression, kModerateSuppression, kHighSuppression.
        case low = 0, moderate = 1, high = 2
    }

    /// How much noise the suppressor removes (`NoiseSuppression::Level`): about 6, 10, 15 and
    /// 20 dB.
    public enum NoiseSuppression: Int32, Sendable, CaseIterable {
        /// The library's kLow, kModerate, kHigh, kVeryHigh.
        case low = 0, moderate = 1, high = 2, veryHigh = 3
    }

    /// Automatic gain control (WebRTC's AGC1, digital modes only: a graph has no device volume
    /// for its analog mode).
    public struct GainControl: Sendable, Equatable {
        /// `GainControl::Mode`: adaptive digital (a gain that follows the talker's level) or
        /// fixed digital (the compression stage only, a fixed gain).
        public enum Mode: Int32, Sendable {
            /// kAdaptiveDigital and kFixedDigital.
            case adaptiveDigital = 1, fixedDigital = 2
        }
        /// The mode (default adaptive digital).
        public var mode: Mode
        /// The target peak envelope in dBFS, −31…0 (the library's `target_level_dbfs`, negated).
        public var targetLevelDBFS: Int
        /// The most gain the compression stage applies, 0…90 dB.
        public var compressionGainDB: Int
        /// Whether the limiter holds the output under the target.
        public var limiter: Bool

        /// - Parameters: see the properties. Defaults are the library's: adaptive digital,
        ///   −3 dBFS, 9 dB, limiter on.
        public init(mode: Mode = .adaptiveDigital, targetLevelDBFS: Int = -3, compressionGainDB: Int = 9, limiter: Bool = true) {
            self.mode = mode
            self.targetLevelDBFS = targetLevelDBFS
            self.compressionGainDB = compressionGainDB
            self.limiter = limiter
        }
    }

    /// What runs on the microphone. Each component can be switched between slices.
    public struct Configuration: Sendable, Equatable {
        /// Echo cancellation with this suppression, or nil for none.
        public var echoCancellation: EchoSuppression?
        /// Noise suppression at this level, or nil for none.
        public var noiseSuppression: NoiseSuppression?
        /// Automatic gain control, or nil for none.
        public var gainControl: GainControl?
        /// Voice activity detection (``Metrics/voiceActive``).
        public var voiceDetection: Bool
        /// The library's high-pass filter (about 80 Hz) before everything else.
        public var highPassFilter: Bool

        /// - Parameters: see the properties. Default: echo cancellation (moderate) and voice
        ///   detection on, the rest off.
        public init(echoCancellation: EchoSuppression? = .moderate, noiseSuppression: NoiseSuppression? = nil,
                    gainControl: GainControl? = nil, voiceDetection: Bool = true, highPassFilter: Bool = false) {
            self.echoCancellation = echoCancellation
            self.noiseSuppression = noiseSuppression
            self.gainControl = gainControl
            self.voiceDetection = voiceDetection
            self.highPassFilter = highPassFilter
        }
    }

    /// What the library reports after the last 10 ms frame. nil where the component is off or has
    /// no figure yet. 0.3 has no reading of the AGC's gain.
    public struct Metrics: Sendable, Equatable {
        /// The echo canceller's own estimate of the echo return loss enhancement, dB: its long-term
        /// average and the last second's value.
        public var echoReturnLossEnhancementDB: Int?
        /// The last second's ERLE, dB.
        public var echoReturnLossEnhancementInstantDB: Int?
        /// Echo return loss (far end to microphone), dB, average.
        public var echoReturnLossDB: Int?
        /// Whether the last frame may hold echo.
        public var echoPresent: Bool?
        /// The canceller's estimate of the echo path's delay, ms (median), and its spread.
        public var delayEstimateMilliseconds: Int?
        /// The standard deviation of the delay estimates, ms.
        public var delayEstimateSpreadMilliseconds: Int?
        /// The noise suppressor's speech probability for the last frame, 0…1.
        public var speechProbability: Float?
        /// The voice activity detector's decision for the last frame.
        public var voiceActive: Bool?
    }

    /// Sample rate, Hz.
    public let sampleRate: Int
    /// Microphone channels and far-end channels.
    public let microphoneChannels: Int
    /// Far-end channels.
    public let farEndChannels: Int
    /// The most frames one ``process(microphone:farEnd:frameCount:)`` call takes.
    public let maximumFramesPerSlice: Int
    /// Frames per 10 ms frame (sampleRate / 100).
    public let framesPerChunk: Int
    /// Frames the processed microphone lags the input: one 10 ms frame (the gathering) plus
    /// ``libraryDelayFrames``.
    public var latencyFrames: Int { framesPerChunk + libraryDelayFrames }
    /// Frames the library itself delays the microphone with the configuration in force (its band
    /// split, the echo canceller's and noise suppressor's block framing; 0 with everything off),
    /// measured on a probe instance when the configuration is set
    /// (``measureLibraryDelay(sampleRate:configuration:maximumLag:)``).
    public private(set) var libraryDelayFrames = 0
    /// The rate the library processes at inside (8, 16, 32 or 48 kHz).
    public let processingRate: Int
    /// The configuration in force.
    public private(set) var configuration: Configuration
    /// The echo path delay given to the canceller, ms (0…500).
    public private(set) var echoPathDelayMilliseconds: Int = 0
    /// Non-finite samples replaced with 0 so far, in the microphone and in the far end.
    public private(set) var nonFiniteMicrophoneSamples: UInt64 = 0
    /// Non-finite far-end samples replaced with 0 so far.
    public private(set) var nonFiniteFarEndSamples: UInt64 = 0
    /// 10 ms frames the library refused to process (its error code in ``lastLibraryError``);
    /// such a frame passes through unprocessed.
    public private(set) var failedChunks: UInt64 = 0
    /// The library's error code for the last refused frame (0: none yet).
    public private(set) var lastLibraryError: Int32 = 0
    /// 10 ms frames processed so far.
    public private(set) var processedChunks: UInt64 = 0

    private let apm: OpaquePointer
    /// `[channel][framesPerChunk]`: the microphone gathered, the processed frame being handed
    /// out, the far end gathered. One allocation each; the pointer tables index them.
    private let micIn: UnsafeMutablePointer<Float>
    private let micOut: UnsafeMutablePointer<Float>
    private let far: UnsafeMutablePointer<Float>
    private let micTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    private let farTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    /// Frames gathered into the current 10 ms frame (0 ..< framesPerChunk).
    private var fill = 0

    /// Makes a processor with `configuration` in force.
    /// - Parameters:
    ///   - sampleRate: Hz, a multiple of 100 in 8 000…192 000.
    ///   - microphoneChannels: 1…8; processed independently against the far end.
    ///   - farEndChannels: 1…8.
    ///   - maximumFramesPerSlice: 1…16 384, the largest `frameCount` of a process call.
    ///   - configuration: the components to run.
    /// - Throws: ``AudioUnitError/formatNotSupported`` for a rate or channel count outside
    ///   those bounds; ``AudioUnitError/invalidPropertyValue`` for a slice size or a setting out
    ///   of bounds; ``AudioUnitError/failedInitialization`` when the library refuses.
    /// - Thread: control thread; allocates.
    public init(sampleRate: Int, microphoneChannels: Int = 1, farEndChannels: Int = 1, maximumFramesPerSlice: Int = 4096,
                configuration: Configuration = Configuration()) throws(AudioUnitError) {
        guard (8000...192_000).contains(sampleRate), sampleRate % 100 == 0,
              (1...8).contains(microphoneChannels), (1...8).contains(farEndChannels) else { throw .formatNotSupported }
        guard (1...16_384).contains(maximumFramesPerSlice) else { throw .invalidPropertyValue }
        try Self.validate(configuration)
        var error: Int32 = 0
        guard let apm = cwebrtc_apm_create(Int32(sampleRate), Int32(microphoneChannels), Int32(farEndChannels), &error) else {
            throw .failedInitialization
        }
        self.apm = apm
        self.sampleRate = sampleRate
        self.microphoneChannels = microphoneChannels
        self.farEndChannels = farEndChannels
        self.maximumFramesPerSlice = maximumFramesPerSlice
        framesPerChunk = Int(cwebrtc_apm_frames_per_chunk(apm))
        processingRate = Int(cwebrtc_apm_processing_rate(apm))
        self.configuration = configuration
        micIn = .allocate(capacity: microphoneChannels * framesPerChunk)
        micIn.initialize(repeating: 0, count: microphoneChannels * framesPerChunk)
        micOut = .allocate(capacity: microphoneChannels * framesPerChunk)
        micOut.initialize(repeating: 0, count: microphoneChannels * framesPerChunk)
        far = .allocate(capacity: farEndChannels * framesPerChunk)
        far.initialize(repeating: 0, count: farEndChannels * framesPerChunk)
        micTable = .allocate(capacity: microphoneChannels)
        for c in 0..<microphoneChannels { micTable[c] = micIn + c * framesPerChunk }
        farTable = .allocate(capacity: farEndChannels)
        for c in 0..<farEndChannels { farTable[c] = far + c * framesPerChunk }
        if apply(configuration) != 0 {
            // Freed by deinit, which runs for a fully initialized instance that throws.
            throw .failedInitialization
        }
        libraryDelayFrames = try Self.measureLibraryDelay(sampleRate: sampleRate, configuration: configuration,
                                                          maximumLag: 4 * framesPerChunk)
    }

    deinit {
        cwebrtc_apm_destroy(apm)
        micIn.deallocate()
        micOut.deallocate()
        far.deallocate()
        micTable.deallocate()
        farTable.deallocate()
    }

    /// Switches components on or off, or changes their settings, from the next 10 ms frame on.
    /// A failure leaves the configuration as it was.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a setting out of bounds (AGC
    ///   target outside −31…0 dBFS, compression gain outside 0…90 dB).
    /// - Thread: the thread that processes, between process calls; allocates when a component is
    ///   first enabled (the library creates its state then).
    public func configure(_ newConfiguration: Configuration) throws(AudioUnitError) {
        try Self.validate(newConfiguration)
        let delay = try Self.measureLibraryDelay(sampleRate: sampleRate, configuration: newConfiguration,
                                                 maximumLag: 4 * framesPerChunk)
        if apply(newConfiguration) != 0 {
            _ = apply(configuration)
            throw .invalidPropertyValue
        }
        configuration = newConfiguration
        libraryDelayFrames = delay
    }

    /// Whether the echo canceller estimates the echo path's delay itself with an extended
    /// (longer) filter — WebRTC's DelayAgnostic and ExtendedFilter options, off by default as in
    /// the library. On, a hint that is off by tens of milliseconds (a JACK graph whose ports'
    /// latencies do not describe the acoustic path) still converges.
    /// - Thread: control thread, before processing.
    public var isDelayAgnostic = false {
        didSet { _ = cwebrtc_apm_set_delay_agnostic(apm, isDelayAgnostic ? 1 : 0) }
    }

    /// Sets the echo path delay the canceller starts from: the time from a far-end frame given
    /// to ``process(microphone:farEnd:frameCount:)`` to its echo in a microphone frame given to
    /// it (playback latency + acoustic path + capture latency). The canceller searches around
    /// it (it tracks some error on its own: ``Metrics/delayEstimateMilliseconds``).
    /// - Parameter seconds: 0…0.5, rounded to whole milliseconds.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for NaN or outside 0…0.5 s (nothing changed).
    /// - Thread: the thread that processes; real-time safe.
    public func setEchoPathDelay(seconds: Double) throws(AudioUnitError) {
        guard seconds.isFinite, (0...0.5).contains(seconds) else { throw .invalidPropertyValue }
        echoPathDelayMilliseconds = Int((seconds * 1000).rounded())
        cwebrtc_apm_set_stream_delay_ms(apm, Int32(echoPathDelayMilliseconds))
    }

    /// Processes one slice: gathers the microphone and the far end into 10 ms frames, processes
    /// each complete frame (far end first, then microphone) and writes the processed microphone
    /// back over `microphone`, ``latencyFrames`` frames late (silence at first).
    /// - Parameters:
    ///   - microphone: `[microphoneChannels][frameCount]`, replaced in place by the output.
    ///   - farEnd: `[farEndChannels][frameCount]`, what went to the speaker in the same slice; nil
    ///     is silence.
    ///   - frameCount: 0…maximumFramesPerSlice.
    /// - Throws: ``AudioUnitError/tooManyFramesToProcess`` when `frameCount` is out of bounds
    ///   (nothing processed, nothing written).
    /// - Thread: one thread at a time; no allocation of its own (the library's is measured in
    ///   `VoiceProcessorRealTimeTests`).
    public func process(microphone: UnsafePointer<UnsafeMutablePointer<Float>>,
                        farEnd: UnsafePointer<UnsafeMutablePointer<Float>>?,
                        frameCount: Int) throws(AudioUnitError) {
        guard (0...maximumFramesPerSlice).contains(frameCount) else { throw .tooManyFramesToProcess }
        let chunk = framesPerChunk
        var done = 0
        while done < frameCount {
            let n = min(frameCount - done, chunk - fill)
            for c in 0..<microphoneChannels {
                let io = microphone[c] + done
                let gathered = micIn + c * chunk + fill
                let ready = micOut + c * chunk + fill
                gathered.update(from: io, count: n)
                io.update(from: ready, count: n)
            }
            for c in 0..<farEndChannels {
                let gathered = far + c * chunk + fill
                if let farEnd { gathered.update(from: UnsafePointer(farEnd[c] + done), count: n) }
                else { gathered.update(repeating: 0, count: n) }
            }
            fill += n
            done += n
            if fill == chunk {
                processChunk()
                fill = 0
            }
        }
    }

    /// Processes exactly one 10 ms frame in place, with no gathering and no added delay: the
    /// voice-processing IO unit's worker gathers the frames itself (``VoiceIOEngine``).
    /// - Parameters:
    ///   - microphone: `[microphoneChannels]` pointers to ``framesPerChunk`` frames each,
    ///     replaced by the processed frame (``libraryDelayFrames`` late, the library's own delay).
    ///   - farEnd: `[farEndChannels]` pointers to ``framesPerChunk`` frames each: what went to
    ///     the speaker over the same frames.
    /// - Thread: one thread at a time; no allocation of its own.
    func processFrame(microphone: UnsafePointer<UnsafeMutablePointer<Float>>,
                      farEnd: UnsafePointer<UnsafeMutablePointer<Float>>) {
        let chunk = framesPerChunk
        for c in 0..<microphoneChannels { (micIn + c * chunk).update(from: microphone[c], count: chunk) }
        for c in 0..<farEndChannels { (far + c * chunk).update(from: farEnd[c], count: chunk) }
        processChunk()
        for c in 0..<microphoneChannels { microphone[c].update(from: micOut + c * chunk, count: chunk) }
    }

    /// Applies `newConfiguration` whose library delay the caller measured already (on a control
    /// thread, with ``measureLibraryDelay(sampleRate:configuration:maximumLag:)``). Does not
    /// allocate once every component has been enabled once (the library keeps its state).
    /// Returns false, with the configuration as it was, when the library refuses.
    /// - Thread: the thread that processes.
    func apply(_ newConfiguration: Configuration, libraryDelay: Int) -> Bool {
        if apply(newConfiguration) != 0 {
            _ = apply(configuration)
            return false
        }
        configuration = newConfiguration
        libraryDelayFrames = libraryDelay
        return true
    }

    /// The library's figures after the last 10 ms frame.
    /// - Thread: the thread that processes; the level estimator is off, so no state is reset.
    public func metrics() -> Metrics {
        var m = cwebrtc_apm_metrics()
        cwebrtc_apm_get_metrics(apm, &m)
        var out = Metrics()
        if m.erle_average_db > -1000 { out.echoReturnLossEnhancementDB = Int(m.erle_average_db) }
        if m.erle_instant_db > -1000 { out.echoReturnLossEnhancementInstantDB = Int(m.erle_instant_db) }
        if m.erl_average_db > -1000 { out.echoReturnLossDB = Int(m.erl_average_db) }
        if m.stream_has_echo >= 0 { out.echoPresent = m.stream_has_echo == 1 }
        if m.delay_median_ms >= 0 { out.delayEstimateMilliseconds = Int(m.delay_median_ms) }
        if m.delay_std_ms >= 0 { out.delayEstimateSpreadMilliseconds = Int(m.delay_std_ms) }
        if m.speech_probability >= 0 { out.speechProbability = m.speech_probability }
        if m.stream_has_voice >= 0 { out.voiceActive = m.stream_has_voice == 1 }
        return out
    }

    /// One complete 10 ms frame of both streams: non-finite samples replaced, far end given,
    /// microphone processed in place, then moved to the output frame.
    private func processChunk() {
        let total = microphoneChannels * framesPerChunk
        nonFiniteMicrophoneSamples &+= NonFinite.scrub(micIn, frames: total)
        nonFiniteFarEndSamples &+= NonFinite.scrub(far, frames: farEndChannels * framesPerChunk)
        let reverse = cwebrtc_apm_process_reverse(apm, farTable)
        let capture = cwebrtc_apm_process_capture(apm, micTable)
        if reverse != 0 || capture != 0 {
            failedChunks &+= 1
            lastLibraryError = capture != 0 ? capture : reverse
        }
        processedChunks &+= 1
        // A frame the library refused is left as it was (the microphone, unprocessed).
        micOut.update(from: micIn, count: total)
    }

    /// Measures the delay the library adds to the microphone with `configuration`: a fresh
    /// mono instance processes a probe (bursts of white noise, 150 ms on and 150 ms off, the
    /// far end silent; deterministic, SplitMix64-style) and the delay is the lag in
    /// 0…`maximumLag` where the output correlates best with the probe over its last burst.
    /// Speech through the library peaks at the same lags (VoiceProcessorTests checks it).
    /// - Throws: ``AudioUnitError/failedInitialization`` when the library refuses.
    /// - Thread: any; allocates (about 1 s of audio through the library).
    public static func measureLibraryDelay(sampleRate: Int, configuration: Configuration,
                                           maximumLag: Int) throws(AudioUnitError) -> Int {
        var error: Int32 = 0
        guard let probe = cwebrtc_apm_create(Int32(sampleRate), 1, 1, &error) else { throw .failedInitialization }
        defer { cwebrtc_apm_destroy(probe) }
        let chunk = Int(cwebrtc_apm_frames_per_chunk(probe))
        let burst = sampleRate * 15 / 100
        let chunks = (6 * burst + chunk - 1) / chunk + (maximumLag + chunk - 1) / chunk
        let frames = chunks * chunk
        var input = [Float](repeating: 0, count: frames)
        var state: UInt64 = 0x5EED_0014
        for i in 0..<(6 * burst) where (i / burst) % 2 == 1 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            input[i] = Float(Double(z >> 11) / Double(1 << 53) - 0.5) * 0.5
        }
        var output = input
        var silence = [Float](repeating: 0, count: chunk)
        func applyProbe() -> Int32 {
            var r = cwebrtc_apm_set_echo_cancellation(probe, configuration.echoCancellation == nil ? 0 : 1,
                                                      (configuration.echoCancellation ?? .moderate).rawValue)
            if r == 0 { r = cwebrtc_apm_set_noise_suppression(probe, configuration.noiseSuppression == nil ? 0 : 1,
                                                              (configuration.noiseSuppression ?? .moderate).rawValue) }
            let agc = configuration.gainControl ?? GainControl()
            if r == 0 { r = cwebrtc_apm_set_gain_control(probe, configuration.gainControl == nil ? 0 : 1, agc.mode.rawValue,
                                                         Int32(-agc.targetLevelDBFS), Int32(agc.compressionGainDB),
                                                         agc.limiter ? 1 : 0) }
            if r == 0 { r = cwebrtc_apm_set_voice_detection(probe, configuration.voiceDetection ? 1 : 0) }
            if r == 0 { r = cwebrtc_apm_set_high_pass_filter(probe, configuration.highPassFilter ? 1 : 0) }
            return r
        }
        guard applyProbe() == 0 else { throw .failedInitialization }
        output.withUnsafeMutableBufferPointer { out in
            silence.withUnsafeMutableBufferPointer { far in
                var farPointer: UnsafeMutablePointer<Float>? = far.baseAddress
                for k in 0..<chunks {
                    var micPointer: UnsafeMutablePointer<Float>? = out.baseAddress! + k * chunk
                    _ = cwebrtc_apm_process_reverse(probe, &farPointer)
                    _ = cwebrtc_apm_process_capture(probe, &micPointer)
                }
            }
        }
        // The last burst: [5·burst, 6·burst) of the input against the output `lag` later.
        var best = (lag: 0, score: -Double.infinity)
        input.withUnsafeBufferPointer { x in
            output.withUnsafeBufferPointer { y in
                for lag in 0...maximumLag {
                    var xy = 0.0, yy = 0.0
                    for i in (5 * burst)..<(6 * burst) {
                        let b = Double(y[i + lag])
                        xy += Double(x[i]) * b
                        yy += b * b
                    }
                    let score = yy > 0 ? xy / yy.squareRoot() : -Double.infinity
                    if score > best.score { best = (lag, score) }
                }
            }
        }
        return best.lag
    }

    private static func validate(_ configuration: Configuration) throws(AudioUnitError) {
        if let agc = configuration.gainControl {
            guard (-31...0).contains(agc.targetLevelDBFS), (0...90).contains(agc.compressionGainDB) else {
                throw .invalidPropertyValue
            }
        }
    }

    /// Applies every setting to the library; 0 or the first error code.
    private func apply(_ c: Configuration) -> Int32 {
        var r = cwebrtc_apm_set_echo_cancellation(apm, c.echoCancellation == nil ? 0 : 1,
                                                  (c.echoCancellation ?? .moderate).rawValue)
        if r != 0 { return r }
        r = cwebrtc_apm_set_noise_suppression(apm, c.noiseSuppression == nil ? 0 : 1, (c.noiseSuppression ?? .moderate).rawValue)
        if r != 0 { return r }
        let agc = c.gainControl ?? GainControl()
        r = cwebrtc_apm_set_gain_control(apm, c.gainControl == nil ? 0 : 1, agc.mode.rawValue, Int32(-agc.targetLevelDBFS),
                                         Int32(agc.compressionGainDB), agc.limiter ? 1 : 0)
        if r != 0 { return r }
        r = cwebrtc_apm_set_voice_detection(apm, c.voiceDetection ? 1 : 0)
        if r != 0 { return r }
        return cwebrtc_apm_set_high_pass_filter(apm, c.highPassFilter ? 1 : 0)
    }
}

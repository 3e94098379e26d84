// Render: the voice-processing IO unit's engine — the microphone and the far end gathered into 10 ms frames on the render thread, processed on a worker (or inline offline), handed back a fixed latency later.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The settings the render side and the worker share: Apple's three properties and our
/// parameters, as atomics the control thread writes and the worker reads once per 10 ms frame.
/// SAFETY (`@unchecked Sendable`): every field is an atomic or immutable.
final class VoiceIOControls: @unchecked Sendable {
    /// `kAUVoiceIOProperty_BypassVoiceProcessing` (2100): the microphone passes through unprocessed.
    let bypass = Atomic<Bool>(false)
    /// `kAUVoiceIOProperty_VoiceProcessingEnableAGC` (2101): Apple's default is on.
    let agc = Atomic<Bool>(true)
    /// `kAUVoiceIOProperty_MuteOutput` (2104): element 1's output is silence (processing goes on).
    let mute = Atomic<Bool>(false)
    /// Whether the device's latencies are part of the hint (else the app's delay alone).
    let usesDeviceLatency = Atomic<Bool>(true)
    /// The delay the app adds to the JACK-reported one (the acoustic path), seconds × 1e6.
    let extraEchoDelayMicroseconds = Atomic<Int>(0)
    /// The device's capture and playback latency in frames, as the driver last learnt them
    /// (JACK's port latency ranges, maxima).
    let captureLatencyFrames = Atomic<Int>(0)
    let playbackLatencyFrames = Atomic<Int>(0)
}

/// The meters and counters the worker publishes (relaxed atomics; floats as bit patterns).
/// SAFETY (`@unchecked Sendable`): every field is an atomic.
/// (ERLE, speech probability, voice activity and processing gain are the unit's read-only
/// parameters, in its bank.)
final class VoiceIOMeters: @unchecked Sendable {
    let erl = Atomic<UInt32>(Float.nan.bitPattern)
    let delayEstimateMilliseconds = Atomic<Int>(-1)
    let echoPathDelayMilliseconds = Atomic<Int>(0)
    /// 10 ms frames processed.
    let frames = Atomic<UInt64>(0)
    /// Device frames a resampling bridge had no output for (silence; 0 by its sizing).
    let bridgeShortfall = Atomic<UInt64>(0)
    /// Non-finite samples the library's output held (replaced with 0).
    let nonFiniteOutput = Atomic<UInt64>(0)
}

/// What the voice-processing IO unit runs: its element 1 (the microphone as the graph receives
/// it) is the device input after ``VoiceProcessor`` (WebRTC's echo canceller, noise suppressor,
/// AGC and VAD), against the far end — what the device output played.
///
/// The library takes 10 ms frames and (measured: `VoiceProcessorRealTimeTests`) locks a mutex
/// three times per frame, so on a live driver it runs on a worker thread (SCHED_FIFO one step
/// below the render thread where the driver says its priority and the system grants it; it
/// polls every 0.5 ms for work) and the render thread only copies:
/// - render thread, per slice: the device input is written into the current 10 ms slot; the
///   processed microphone is read from the slot ``outputLag`` frames back; after the slice, what
///   the device output got is written into the same slots (the far end, frame for frame);
///   complete slots are submitted (a release store);
/// - worker: processes submitted slots in order, publishes each one done (a release store).
///
/// ``outputLag`` = the largest slice expected + one 10 ms frame: the slot a slice reads was
/// complete before the slice began, so the worker has a whole period to process it. A slot the
/// worker has not finished goes out as silence (the raw microphone would carry the far end's
/// echo at full level; bypassed, it is the microphone) and is counted (`lateFrames`). A worker
/// more than a third of a second behind (stalled) would read slots the render thread is
/// filling again: its output is then wrong until it catches up (the memory stays valid).
/// Offline (``inline``) the render thread processes each slot as soon as it is complete, with
/// the same lag, so offline output is what a live run gives when the worker keeps up.
///
/// The total latency of element 1 is ``outputLag`` + ``processingDelay`` (the library's own
/// delay, the largest over the configurations the parameters can reach, so that changing them
/// never moves the signal in time).
/// SAFETY (`@unchecked Sendable`): the render-side state belongs to the render thread, the
/// processing state to the worker (or to the render thread when inline); they share the slots
/// through `submitted`/`processed` (release/acquire) and the controls and meters as atomics.
final class VoiceIOEngine: @unchecked Sendable {
    let sampleRate: Int
    let microphoneChannels: Int
    let farEndChannels: Int
    /// Device frames per slot: one 10 ms frame (`rate / 100`, rounded down where the resampling
    /// bridge runs).
    let chunk: Int
    /// Slots in the ring (each one 10 ms frame of microphone, far end and output).
    let slotCount: Int
    /// The most frames one render call takes.
    let maximumFramesPerSlice: Int
    /// Whether the render thread processes (offline) rather than the worker.
    let inline: Bool
    /// The worker's SCHED_FIFO priority (below the render thread's), or 0 for an ordinary thread.
    let workerPriority: Int32
    /// Frames element 1 lags the device input through the slots (render side; grows when a
    /// slice longer than expected arrives).
    private(set) var outputLag: Int
    /// Published copy of ``outputLag`` + ``processingDelay`` for the control thread.
    let totalLatencyFrames = Atomic<Int>(0)
    /// Frames the render thread needed before the worker had them (they went out unprocessed).
    let lateFrames = Atomic<UInt64>(0)
    /// Slices longer than the engine expected (the latency grew by the difference once each).
    let latencyIncreases = Atomic<UInt64>(0)
    /// Whether the last frame the worker made was bypassed (the render thread's choice for a
    /// late frame: the microphone then, silence otherwise).
    let bypassed = Atomic<Bool>(false)
    /// The library's delay the processed signal is padded to (the most over the reachable
    /// configurations), frames.
    let processingDelay: Int
    let controls: VoiceIOControls
    let meters = VoiceIOMeters()
    private let bank: ParameterBank

    private let processor: VoiceProcessor
    /// Owns the slots, tables, output and histories.
    private let memory: PlanResources
    /// For a device rate that is not a multiple of 100 Hz: the library at its own rate.
    private let bridge: VoiceRateBridge?
    /// `[slot][channel][chunk]`.
    private let micSlots: UnsafeMutablePointer<Float>
    private let farSlots: UnsafeMutablePointer<Float>
    private let outSlots: UnsafeMutablePointer<Float>
    /// `[channel]` pointer tables the worker points at a slot before calling the library.
    private let micTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let farTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Element 1's output for the current slice: `[microphoneChannels][maximumFramesPerSlice]`.
    let output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Frames of device input written so far (render side); far-end frames written so far.
    private var written = 0
    private var farWritten = 0
    private let submitted = Atomic<Int>(0)
    private let processed = Atomic<Int>(0)

    // Worker-side state.
    /// `[channel][chunk + processingDelay]`: the dry microphone's history (bypass and the
    /// crossfades take it `processingDelay` late) and the processed signal's (padded to
    /// `processingDelay` from the library's own delay).
    private let dryHistory: UnsafeMutablePointer<Float>
    private let wetHistory: UnsafeMutablePointer<Float>
    private let historyLength: Int
    private var wasBypassed = false
    /// The canceller's last ERLE and ERL figures (NaN before the first).
    private var lastERLE = Float.nan, lastERL = Float.nan
    private var muteGain: Float = 1
    private var libraryDelays: [Int]  // by configuration key (noise suppression on, AGC on)
    private var worker: ConsumerThread?
    private let running = Atomic<Bool>(true)
    /// The worker got real-time scheduling (SCHED_FIFO) from the system.
    let workerIsRealTime = Atomic<Bool>(false)

    /// Makes an engine; measures the library's delay for the configurations the parameters can
    /// reach, and (unless `inline`) starts the worker.
    /// - Parameters:
    ///   - sampleRate: Hz, a multiple of 100 in 8 000…192 000.
    ///   - microphoneChannels, farEndChannels: 1…8.
    ///   - maximumFramesPerSlice: the most frames a render call takes.
    ///   - expectedSliceFrames: the slice size the lag is set for (a JACK period).
    ///   - inline: process on the render thread (offline rendering).
    ///   - workerPriority: the worker's SCHED_FIFO priority, 1…99, below the render thread's
    ///     (so it never preempts it); 0 for an ordinary thread. Refused by the system: ordinary.
    /// - Throws: ``AudioUnitError/formatNotSupported`` for a rate or channel count the library
    ///   cannot take; ``AudioUnitError/failedInitialization`` when it refuses.
    /// - Thread: control thread; allocates.
    init(sampleRate: Int, microphoneChannels: Int, farEndChannels: Int, maximumFramesPerSlice: Int,
         expectedSliceFrames: Int, inline: Bool, workerPriority: Int32 = 0,
         controls: VoiceIOControls, bank: ParameterBank) throws(AudioUnitError) {
        guard (8_000...192_000).contains(sampleRate) else { throw .formatNotSupported }
        // A device whose 10 ms is not whole frames (22 050, 11 025 Hz): the library runs at a
        // rate of its own behind a resampling bridge.
        let bridge = sampleRate % 100 == 0 ? nil
            : try VoiceRateBridge(rate: sampleRate, microphoneChannels: microphoneChannels, farEndChannels: farEndChannels)
        let processorRate = bridge?.processingRate ?? sampleRate
        // Every component enabled once at creation (the configuration of key 3), so switching
        // them later does not allocate.
        let all = Self.configuration(key: 3)
        processor = try VoiceProcessor(sampleRate: processorRate, microphoneChannels: microphoneChannels,
                                       farEndChannels: farEndChannels, maximumFramesPerSlice: 16_384, configuration: all)
        // JACK's port latencies describe the acoustic path only roughly (a client in between
        // passes latencies through): the canceller finds the delay itself around the hint.
        processor.isDelayAgnostic = true
        self.sampleRate = sampleRate
        self.microphoneChannels = microphoneChannels
        self.farEndChannels = farEndChannels
        self.maximumFramesPerSlice = maximumFramesPerSlice
        self.inline = inline
        self.workerPriority = workerPriority
        self.controls = controls
        self.bank = bank
        self.bridge = bridge
        chunk = bridge?.deviceChunk ?? processor.framesPerChunk
        // The library's delay for each key; key 3's the processor measured when it was made.
        var delays: [Int] = []
        for key in 0..<3 {
            delays.append(try VoiceProcessor.measureLibraryDelay(sampleRate: processorRate, configuration: Self.configuration(key: key),
                                                                 maximumLag: 4 * processor.framesPerChunk))
        }
        delays.append(processor.libraryDelayFrames)
        libraryDelays = delays
        processingDelay = delays.map { Self.pathDelay(library: $0, bridge: bridge) }.max()!
        outputLag = min(max(1, expectedSliceFrames), maximumFramesPerSlice) + chunk
        // Room for the lag, a slice, and a third of a second of worker slack.
        slotCount = (maximumFramesPerSlice + chunk) / chunk + 2 + max(8, sampleRate / 3 / chunk)
        let slotFloats = slotCount * chunk
        // Zero-filled, freed with the engine (after deinit has joined the worker).
        let memory = PlanResources()
        self.memory = memory
        micSlots = memory.allocate(Float.self, count: slotFloats * microphoneChannels)
        farSlots = memory.allocate(Float.self, count: slotFloats * farEndChannels)
        outSlots = memory.allocate(Float.self, count: slotFloats * microphoneChannels)
        micTable = memory.allocate(UnsafeMutablePointer<Float>.self, count: microphoneChannels)
        farTable = memory.allocate(UnsafeMutablePointer<Float>.self, count: farEndChannels)
        output = memory.allocateChannels(microphoneChannels, frames: maximumFramesPerSlice)
        historyLength = chunk + processingDelay
        dryHistory = memory.allocate(Float.self, count: historyLength * microphoneChannels)
        wetHistory = memory.allocate(Float.self, count: historyLength * microphoneChannels)
        totalLatencyFrames.store(outputLag + processingDelay, ordering: .relaxed)
        // The configuration the controls ask for now.
        wasBypassed = applySettings(force: true)
        bypassed.store(wasBypassed, ordering: .relaxed)
        if !inline {
            worker = ConsumerThread { [unowned(unsafe) self] in self.workerLoop() }
        }
    }

    deinit {
        running.store(false, ordering: .releasing)
        worker?.join()
    }

    /// The processed path's delay in device frames for the library's `library` frames of delay
    /// (at its own rate): through a bridge, its prefill plus that delay at the device rate.
    private static func pathDelay(library: Int, bridge: VoiceRateBridge?) -> Int {
        guard let bridge else { return library }
        return bridge.prefill + Int((Double(library) * Double(bridge.rate) / Double(bridge.processingRate)).rounded())
    }

    /// The configuration for a delay-table key: bit 0 noise suppression, bit 1 AGC.
    private static func configuration(key: Int) -> VoiceProcessor.Configuration {
        VoiceProcessor.Configuration(echoCancellation: .moderate, noiseSuppression: key & 1 != 0 ? .moderate : nil,
                                     gainControl: key & 2 != 0 ? VoiceProcessor.GainControl() : nil, voiceDetection: true)
    }

    // MARK: - Render thread

    /// The start of a slice: writes the device input (`[microphoneChannels]` pointers, `frames`
    /// frames, finite) into the slots and fills ``output`` with element 1's frames for the slice.
    @_noLocks
    func capture(_ input: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int) {
        if frames + chunk > outputLag {
            // A longer slice than expected (a new JACK period): the lag grows once, a gap.
            outputLag = frames + chunk
            totalLatencyFrames.store(outputLag + processingDelay, ordering: .relaxed)
            latencyIncreases.add(1, ordering: .relaxed)
        }
        let slotFloats = slotCount * chunk
        store(input, channels: microphoneChannels, offset: 0, frames: frames, into: micSlots, slotChannels: microphoneChannels, at: written)
        // Element 1's frames: `outputLag` behind what was just written. A frame the worker has
        // not finished is silence while processing (the raw microphone would be the far end's
        // echo at full level), the microphone itself while bypassed.
        let ready = processed.load(ordering: .acquiring)
        let lateIsSilent = !bypassed.load(ordering: .relaxed)
        var done = 0
        while done < frames {
            let position = written - outputLag + done
            if position < 0 {
                let n = min(frames - done, -position)
                for c in 0..<microphoneChannels { (output[c] + done).update(repeating: 0, count: n) }
                done += n
                continue
            }
            let index = position / chunk, slot = index % slotCount, within = position % chunk
            let n = min(frames - done, chunk - within)
            if index >= ready {
                lateFrames.add(UInt64(n), ordering: .relaxed)
                if lateIsSilent {
                    for c in 0..<microphoneChannels { (output[c] + done).update(repeating: 0, count: n) }
                    done += n
                    continue
                }
            }
            let source = index < ready ? outSlots : micSlots
            for c in 0..<microphoneChannels {
                copy(source + c * slotFloats + slot * chunk + within, to: output[c] + done, frames: n)
            }
            done += n
        }
        written += frames
    }

    /// The end of a slice: writes what the device output got (`[channels]` pointers at
    /// `offset`, `frames` frames) as the far end over the same frames, submits the complete
    /// slots, and (inline) processes them.
    @_noLocks
    func reference(_ played: UnsafePointer<UnsafeMutablePointer<Float>>, channels: Int, offset: Int, frames: Int) {
        store(played, channels: channels, offset: offset, frames: frames, into: farSlots, slotChannels: farEndChannels, at: farWritten)
        farWritten += frames
        submitted.store(farWritten / chunk, ordering: .releasing)
        if inline { RealTime.voiceProcessInline(Unmanaged.passUnretained(self).toOpaque()) }
    }

    /// Writes `frames` frames of `source` (`[channels]` pointers, from `offset`) into `slots`
    /// (`[slotChannels][slot][chunk]`) from stream frame `position` on, across slot boundaries;
    /// slot channels the source lacks get silence.
    @_noLocks
    private func store(_ source: UnsafePointer<UnsafeMutablePointer<Float>>, channels: Int, offset: Int, frames: Int,
                       into slots: UnsafeMutablePointer<Float>, slotChannels: Int, at position: Int) {
        let slotFloats = slotCount * chunk
        var done = 0
        while done < frames {
            let slot = ((position + done) / chunk) % slotCount, within = (position + done) % chunk
            let n = min(frames - done, chunk - within)
            for c in 0..<slotChannels {
                let destination = slots + c * slotFloats + slot * chunk + within
                if c < channels { copy(source[c] + offset + done, to: destination, frames: n) }
                else { destination.update(repeating: 0, count: n) }
            }
            done += n
        }
    }

    // MARK: - Worker (or the render thread, inline)

    /// The offline renderer's thread processes the complete frames itself.
    func drainInline() { drain() }

    private func workerLoop() {
        var parameters = sched_param(sched_priority: workerPriority)
        if workerPriority > 0, pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0 {
            workerIsRealTime.store(true, ordering: .relaxed)
        }
        while running.load(ordering: .acquiring) {
            if !drain() { usleep(500) }
        }
    }

    /// Processes every submitted slot; returns whether there was one.
    @discardableResult
    private func drain() -> Bool {
        let available = submitted.load(ordering: .acquiring)
        var next = processed.load(ordering: .relaxed)
        if next >= available { return false }
        while next < available {
            processSlot(next)
            next += 1
            processed.store(next, ordering: .releasing)
            // Counted once published, so a reader that sees the count sees the frame ready.
            meters.frames.add(1, ordering: .relaxed)
        }
        return true
    }

    /// Reads the controls and parameters; applies a changed configuration. Returns whether bypass is on.
    private var appliedKey = -1
    private var appliedNoise: Int32 = -1
    private var appliedEcho: Int32 = -1
    private var appliedTarget = Int.min
    private var appliedCompression = Int.min
    private func applySettings(force: Bool = false) -> Bool {
        let bypass = controls.bypass.load(ordering: .relaxed)
        let agc = controls.agc.load(ordering: .relaxed)
        let noise = Int32(bank.load(VoiceProcessingIOUnit.Slot.noiseSuppression).rounded())
        let echo = Int32(bank.load(VoiceProcessingIOUnit.Slot.echoSuppression).rounded())
        let target = Int(bank.load(VoiceProcessingIOUnit.Slot.agcTargetLevel).rounded())
        let compression = Int(bank.load(VoiceProcessingIOUnit.Slot.agcCompressionGain).rounded())
        let key = (noise > 0 ? 1 : 0) | (agc ? 2 : 0)
        if force || key != appliedKey || noise != appliedNoise || echo != appliedEcho
            || (agc && (target != appliedTarget || compression != appliedCompression)) {
            let configuration = VoiceProcessor.Configuration(
                echoCancellation: VoiceProcessor.EchoSuppression(rawValue: min(max(echo, 0), 2)) ?? .moderate,
                noiseSuppression: noise > 0 ? VoiceProcessor.NoiseSuppression(rawValue: min(noise, 4) - 1) : nil,
                gainControl: agc ? VoiceProcessor.GainControl(targetLevelDBFS: min(max(target, -31), 0),
                                                             compressionGainDB: min(max(compression, 0), 90)) : nil,
                voiceDetection: true)
            if processor.apply(configuration, libraryDelay: libraryDelays[key]) {
                appliedKey = key; appliedNoise = noise; appliedEcho = echo
                appliedTarget = target; appliedCompression = compression
            }
        }
        let delayFrames = !controls.usesDeviceLatency.load(ordering: .relaxed) ? 0
            : controls.captureLatencyFrames.load(ordering: .relaxed) + controls.playbackLatencyFrames.load(ordering: .relaxed)
        let seconds = Double(delayFrames) / Double(sampleRate) + Double(controls.extraEchoDelayMicroseconds.load(ordering: .relaxed)) / 1e6
        try? processor.setEchoPathDelay(seconds: min(max(seconds, 0), 0.5))
        meters.echoPathDelayMilliseconds.store(processor.echoPathDelayMilliseconds, ordering: .relaxed)
        return bypass
    }

    /// One slot: the library (unless bypassed) on a copy of the microphone, the pad to
    /// ``processingDelay``, a one-frame crossfade when bypass changes, the mute ramp.
    private func processSlot(_ index: Int) {
        let bypass = applySettings()
        let slotFloats = slotCount * chunk
        let slot = index % slotCount
        let length = historyLength, delay = processingDelay
        for c in 0..<microphoneChannels {
            let mic = micSlots + c * slotFloats + slot * chunk
            let out = outSlots + c * slotFloats + slot * chunk
            // Shift the dry history by a frame and append the microphone.
            let dry = dryHistory + c * length
            dry.update(from: dry + chunk, count: length - chunk)
            (dry + length - chunk).update(from: mic, count: chunk)
            out.update(from: mic, count: chunk)
            micTable[c] = out
        }
        for c in 0..<farEndChannels { farTable[c] = farSlots + c * slotFloats + slot * chunk }
        let processes = !bypass || !wasBypassed
        var inputEnergy: Float = 0, outputEnergy: Float = 0
        if processes {
            if let bridge {
                bridge.process(microphone: UnsafePointer(micTable), farEnd: UnsafePointer(farTable), with: processor)
                meters.bridgeShortfall.store(bridge.underflowFrames, ordering: .relaxed)
            } else {
                processor.processFrame(microphone: UnsafePointer(micTable), farEnd: UnsafePointer(farTable))
            }
            let pad = delay - Self.pathDelay(library: processor.libraryDelayFrames, bridge: bridge)
            for c in 0..<microphoneChannels {
                let out = outSlots + c * slotFloats + slot * chunk
                let replaced = NonFinite.scrub(out, frames: chunk)
                if replaced > 0 { meters.nonFiniteOutput.add(replaced, ordering: .relaxed) }
                let wet = wetHistory + c * length
                wet.update(from: wet + chunk, count: length - chunk)
                (wet + length - chunk).update(from: out, count: chunk)
                // The processed frame `pad` frames late, so every configuration lags `delay`.
                out.update(from: wet + length - chunk - pad, count: chunk)
            }
        }
        for c in 0..<microphoneChannels {
            let out = outSlots + c * slotFloats + slot * chunk
            let dry = dryHistory + c * length + length - chunk - delay  // the microphone `delay` late
            for i in 0..<chunk { inputEnergy += dry[i] * dry[i] }
            if bypass && wasBypassed {
                out.update(from: dry, count: chunk)
            } else if bypass != wasBypassed {
                // Crossfade over the frame: to the dry signal when bypass goes on, from it when off.
                let step = 1 / Float(chunk)
                for i in 0..<chunk {
                    let toDry = Float(i) * step
                    let d = bypass ? toDry : 1 - toDry
                    out[i] = d * dry[i] + (1 - d) * out[i]
                }
            }
            for i in 0..<chunk { outputEnergy += out[i] * out[i] }
        }
        wasBypassed = bypass
        bypassed.store(bypass, ordering: .relaxed)
        // Mute: a linear ramp over the frame towards 0 or 1.
        let target: Float = controls.mute.load(ordering: .relaxed) ? 0 : 1
        if target != muteGain || target == 0 {
            let start = muteGain, step = (target - start) / Float(chunk)
            for c in 0..<microphoneChannels {
                let out = outSlots + c * slotFloats + slot * chunk
                for i in 0..<chunk { out[i] *= start + step * Float(i + 1) }
            }
            muteGain = target
        }
        if inputEnergy > 0 {
            bank.store(VoiceProcessingIOUnit.Slot.processingGain, 10 * log10(max(outputEnergy, 1e-20) / inputEnergy))
        }
        if processes {
            let m = processor.metrics()
            // −100 dB is the canceller's offset level: "no figure" before it has one, and again
            // when the residual is too faint to measure (deep cancellation): the last figure holds.
            if let value = m.echoReturnLossEnhancementDB, value > -100 { lastERLE = Float(value) }
            if let value = m.echoReturnLossDB, value > -100 { lastERL = Float(value) }
            meters.erl.store(lastERL.bitPattern, ordering: .relaxed)
            meters.delayEstimateMilliseconds.store(m.delayEstimateMilliseconds ?? -1, ordering: .relaxed)
            // The unit's read-only parameters.
            bank.store(VoiceProcessingIOUnit.Slot.erle, lastERLE)
            bank.store(VoiceProcessingIOUnit.Slot.speechProbability, m.speechProbability ?? .nan)
            bank.store(VoiceProcessingIOUnit.Slot.voiceActivity, m.voiceActive == true ? 1 : 0)
        }
    }
}

// Render: the voice processing's bridge for device rates whose 10 ms is not whole frames (22 050, 11 025 Hz) — the library runs at a rate of its own, libsamplerate both ways, a fixed latency.

/// Runs ``VoiceProcessor`` at a processing rate (the next of 8, 16, 32 or 48 kHz at or above
/// the device's) for a device whose rate is not a multiple of 100 Hz, so that 10 ms is not a
/// whole number of frames there and the library cannot take it. The worker of
/// ``VoiceIOEngine`` gives it one device frame (`rate / 100` frames, rounded down) of
/// microphone and far end at a time; both are converted to the processing rate
/// (``AudioConverter``: libsamplerate's medium-quality sinc, time-aligned), processed in the
/// library's 10 ms frames as they fill, converted back, and handed out from a FIFO that starts
/// with ``prefill`` frames of silence so it never runs short: the path lags the microphone by
/// ``prefill`` plus the library's own delay at the device rate.
/// Thread: the engine's worker (or the offline renderer's thread); made on a control thread.
final class VoiceRateBridge {
    let rate: Int
    let processingRate: Int
    /// Device frames per call, and processing frames per library frame.
    let deviceChunk: Int
    let processingChunk: Int
    /// Frames of silence the output FIFO starts with (device rate).
    let prefill: Int
    /// Device frames handed out as silence because the FIFO ran short (never, by the prefill's sizing).
    private(set) var underflowFrames: UInt64 = 0
    /// The fewest frames the output FIFO held when a device frame was taken from it, after the
    /// first 50 (how much of ``prefill`` was never needed; for measuring its size).
    private(set) var lowestOutputLevel = Int.max
    private var calls = 0

    private let micChannels: Int, farChannels: Int
    private let toProcessingMic: AudioConverter, toProcessingFar: AudioConverter, fromProcessing: AudioConverter
    private let capacity: Int
    /// `[channel][capacity]` FIFOs at the processing rate (microphone, far end) and the device rate (output).
    private let micFIFO: UnsafeMutablePointer<Float>, farFIFO: UnsafeMutablePointer<Float>, outFIFO: UnsafeMutablePointer<Float>
    private var micCount = 0, farCount = 0, outCount: Int
    /// Pointer tables handed to the converters and the library.
    private let rawIn: UnsafeMutablePointer<UnsafeMutableRawPointer>, rawOut: UnsafeMutablePointer<UnsafeMutableRawPointer>
    private let micTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, farTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Owns the FIFOs and tables.
    private let memory: PlanResources

    /// The processing rate for a device rate: the next of 8, 16, 32, 48 kHz at or above it (48 kHz above that).
    static func processingRate(for rate: Int) -> Int { [8_000, 16_000, 32_000, 48_000].first { $0 >= rate } ?? 48_000 }

    /// - Throws: ``AudioUnitError/formatNotSupported`` when a converter cannot be made.
    init(rate: Int, microphoneChannels: Int, farEndChannels: Int) throws(AudioUnitError) {
        self.rate = rate
        processingRate = Self.processingRate(for: rate)
        deviceChunk = max(1, rate / 100)
        processingChunk = processingRate / 100
        micChannels = microphoneChannels
        farChannels = farEndChannels
        let r = Double(rate), p = Double(processingRate)
        let maxIn = max(deviceChunk, processingChunk) * 2
        toProcessingMic = try AudioConverter(from: try .float32(sampleRate: r, channels: UInt32(microphoneChannels)),
                                             to: try .float32(sampleRate: p, channels: UInt32(microphoneChannels)), maximumInputFrames: maxIn)
        toProcessingFar = try AudioConverter(from: try .float32(sampleRate: r, channels: UInt32(farEndChannels)),
                                             to: try .float32(sampleRate: p, channels: UInt32(farEndChannels)), maximumInputFrames: maxIn)
        fromProcessing = try AudioConverter(from: try .float32(sampleRate: p, channels: UInt32(microphoneChannels)),
                                            to: try .float32(sampleRate: r, channels: UInt32(microphoneChannels)), maximumInputFrames: maxIn)
        // What the chain holds back before a frame comes out: up to a library frame being
        // gathered (10 ms) and the resamplers' newest frames (libsamplerate keeps its filter's
        // look-ahead until more input comes). Measured (VoiceRateBridgeTests): the output FIFO
        // never fell more than 92 frames below its start at 22 050 or 11 025 Hz, so a device
        // frame, 10 ms and 64 frames cover it with room to spare.
        prefill = deviceChunk + Int((Double(processingChunk) * r / p).rounded(.up)) + 64
        let capacity = 4 * (prefill + toProcessingMic.maximumOutputFrames(forInputFrames: maxIn) + fromProcessing.maximumOutputFrames(forInputFrames: maxIn)) + 4096
        self.capacity = capacity
        // Zero-filled, freed with the bridge.
        let memory = PlanResources()
        self.memory = memory
        micFIFO = memory.allocate(Float.self, count: microphoneChannels * capacity)
        farFIFO = memory.allocate(Float.self, count: farEndChannels * capacity)
        outFIFO = memory.allocate(Float.self, count: microphoneChannels * capacity)
        outCount = prefill
        let most = max(microphoneChannels, farEndChannels)
        rawIn = memory.allocate(UnsafeMutableRawPointer.self, count: most)
        rawOut = memory.allocate(UnsafeMutableRawPointer.self, count: most)
        micTable = memory.allocate(UnsafeMutablePointer<Float>.self, count: microphoneChannels)
        farTable = memory.allocate(UnsafeMutablePointer<Float>.self, count: farEndChannels)
    }

    /// Converts `frames` device frames of `channels` channels (`source[c]`) into `fifo` after its
    /// `count` frames; returns the new count.
    private func append(_ source: UnsafePointer<UnsafeMutablePointer<Float>>, channels: Int, frames: Int,
                        through converter: AudioConverter, to fifo: UnsafeMutablePointer<Float>, count: Int) -> Int {
        for c in 0..<channels {
            rawIn[c] = UnsafeMutableRawPointer(source[c])
            rawOut[c] = UnsafeMutableRawPointer(fifo + c * capacity + count)
        }
        let made = (try? converter.convert(UnsafePointer(rawIn), frameCount: frames, into: UnsafePointer(rawOut), capacity: capacity - count)) ?? 0
        return count + made
    }

    /// Drops the first `frames` of each channel of `fifo` (holding `count`).
    private func consume(_ fifo: UnsafeMutablePointer<Float>, channels: Int, frames: Int, count: Int) {
        for c in 0..<channels {
            let base = fifo + c * capacity
            base.update(from: base + frames, count: count - frames)
        }
    }

    /// One device frame: `microphone` (`[microphoneChannels]` pointers to ``deviceChunk``
    /// frames) and `farEnd` in; the microphone's buffers replaced by the path's output.
    func process(microphone: UnsafePointer<UnsafeMutablePointer<Float>>, farEnd: UnsafePointer<UnsafeMutablePointer<Float>>,
                 with processor: VoiceProcessor) {
        micCount = append(microphone, channels: micChannels, frames: deviceChunk, through: toProcessingMic, to: micFIFO, count: micCount)
        farCount = append(farEnd, channels: farChannels, frames: deviceChunk, through: toProcessingFar, to: farFIFO, count: farCount)
        while micCount >= processingChunk && farCount >= processingChunk {
            for c in 0..<micChannels { micTable[c] = micFIFO + c * capacity }
            for c in 0..<farChannels { farTable[c] = farFIFO + c * capacity }
            processor.processFrame(microphone: UnsafePointer(micTable), farEnd: UnsafePointer(farTable))
            outCount = append(UnsafePointer(micTable), channels: micChannels, frames: processingChunk, through: fromProcessing,
                              to: outFIFO, count: outCount)
            consume(micFIFO, channels: micChannels, frames: processingChunk, count: micCount)
            consume(farFIFO, channels: farChannels, frames: processingChunk, count: farCount)
            micCount -= processingChunk
            farCount -= processingChunk
        }
        calls += 1
        if calls > 50 { lowestOutputLevel = min(lowestOutputLevel, outCount) }
        let n = min(deviceChunk, outCount)
        for c in 0..<micChannels {
            microphone[c].update(from: outFIFO + c * capacity, count: n)
            (microphone[c] + n).update(repeating: 0, count: deviceChunk - n)
        }
        underflowFrames &+= UInt64(deviceChunk - n)
        consume(outFIFO, channels: micChannels, frames: n, count: outCount)
        outCount -= n
    }
}

// Formats: AudioConverter, the public stream converter (decode, channels, rate, encode).

/// Converts a stream of audio from one ``StreamFormat`` to another: the `AudioConverterRef`
/// analogue, for code outside the graph (taps, recorders, file players, your own threads).
/// Inside a graph, connections whose two ends differ are converted with the same stages.
///
/// Stages, in order (each skipped when not needed):
/// 1. decode Int16 / Int32 / Float32, interleaved or not, to Float32 `[channel][frame]`
///    (integers scaled by 1/32 768 or 1/2³¹);
/// 2. fewer channels: N → 1 is the average of all channels; N → M (M < N) keeps the first M;
/// 3. sample rate: libsamplerate's `SRC_SINC_MEDIUM_QUALITY` band-limited sinc converter
///    (Erik de Castro Lopo; 97 dB SNR, flat to 90 % of the lower Nyquist frequency);
/// 4. more channels: 1 → N copies the channel to all; N → M (M > N) leaves M − N silent;
/// 5. encode to the destination layout: integers rounded to nearest (ties to even) and clipped, no dither.
///
/// Int16 → Float32 → Int16 is exact. The pipeline works in Float32, so Int32 keeps 24
/// significant bits.
///
/// The converter is a stream: with a rate change it keeps filter history between calls and
/// returns a varying number of frames per call (about `frames × ratio`); ``flush(into:capacity:)``
/// drains the tail at the end. ``latencyFrames`` is the delay the resampler adds.
///
/// Thread: create and flush on any ordinary thread; ``convert(_:frameCount:into:capacity:)`` is
/// real-time safe (no allocation, lock or blocking call) and may run on a render thread. One
/// thread at a time.
/// SAFETY (`@unchecked Sendable`): callers use one converter from one thread at a time (documented); it shares no state with other objects.
public final class AudioConverter: @unchecked Sendable {
    /// The format of the buffers passed in.
    public let inputFormat: StreamFormat
    /// The format of the buffers filled.
    public let outputFormat: StreamFormat
    /// Input frames one internal pass handles; longer inputs are converted in passes.
    public let maximumInputFrames: Int
    /// Frames (at the output rate) by which the resampler delays the signal: an impulse at input
    /// frame 0 peaks at output frame `latencyFrames`. Measured when the converter is created; 0
    /// without a rate change, and 0 with libsamplerate, whose output is time-aligned with its
    /// input. (It does hold the newest frames back until more input or a flush arrives: output
    /// counts lag `frames × ratio` by up to the filter's half-length.)
    public let latencyFrames: Int

    private let inLayout: RawLayout
    private let outLayout: RawLayout
    private let work: Int
    private let decoded: ChannelPointers      // [input channels][maximumInputFrames]
    private let reduced: ChannelPointers      // [work][maximumInputFrames]
    private let resampled: ChannelPointers    // [work][resampler output capacity]
    private let expanded: ChannelPointers     // [output channels][resampler output capacity]
    private let resampler: Resampler?
    /// Owns the stage buffers.
    private let memory = PlanResources()

    /// Creates a converter.
    /// - Parameters:
    ///   - source: the input format; must pass ``StreamFormat/validate()``.
    ///   - destination: the output format; must pass ``StreamFormat/validate()``.
    ///   - maximumInputFrames: input frames per internal pass, 1…65 536 (any call may pass more).
    /// - Throws: ``AudioUnitError/formatNotSupported`` for an invalid format or a rate ratio
    ///   outside 1/256…256; ``AudioUnitError/invalidPropertyValue`` for `maximumInputFrames` out
    ///   of bounds.
    public init(from source: StreamFormat, to destination: StreamFormat, maximumInputFrames: Int = 4096) throws(AudioUnitError) {
        try source.validate()
        try destination.validate()
        guard (1...65_536).contains(maximumInputFrames) else { throw .invalidPropertyValue }
        inputFormat = source
        outputFormat = destination
        self.maximumInputFrames = maximumInputFrames
        inLayout = RawLayout(source)
        outLayout = RawLayout(destination)
        let inCh = Int(source.channelsPerFrame), outCh = Int(destination.channelsPerFrame)
        work = min(inCh, outCh)
        if source.sampleRate != destination.sampleRate {
            guard let r = Resampler.make(channels: work, from: source.sampleRate, to: destination.sampleRate,
                                         maxInput: maximumInputFrames) else { throw .formatNotSupported }
            resampler = r
        } else {
            resampler = nil
        }
        let outFrames = resampler?.maxOutput ?? maximumInputFrames
        decoded = memory.allocateChannels(inCh, frames: maximumInputFrames)
        reduced = memory.allocateChannels(work, frames: maximumInputFrames)
        resampled = memory.allocateChannels(work, frames: outFrames)
        expanded = memory.allocateChannels(outCh, frames: outFrames)
        if let resampler {
            latencyFrames = AudioConverter.measureDelay(resampler, scratch: resampled, input: reduced)
        } else {
            latencyFrames = 0
        }
    }

    deinit {
        resampler?.destroy()
    }

    /// The most output frames a call with `frames` input frames can return; size output buffers
    /// with it.
    public func maximumOutputFrames(forInputFrames frames: Int) -> Int {
        guard let resampler else { return frames }
        let passes = (frames + maximumInputFrames - 1) / maximumInputFrames
        return max(1, passes) * resampler.maxOutput
    }

    /// Converts `frameCount` frames.
    ///
    /// - Parameters:
    ///   - input: ``StreamFormat/bufferCount`` pointers of the input format (one per channel
    ///     non-interleaved, else one), each holding `frameCount` frames.
    ///   - frameCount: ≥ 0.
    ///   - output: ``StreamFormat/bufferCount`` pointers of the output format, each with room for
    ///     `capacity` frames.
    ///   - capacity: ≥ ``maximumOutputFrames(forInputFrames:)`` of `frameCount`.
    /// - Returns: frames written to `output`: `frameCount` without a rate change, otherwise
    ///   around `frameCount × ratio`.
    /// - Throws: ``AudioUnitError/tooManyFramesToProcess`` when `capacity` is too small (nothing
    ///   converted, state unchanged).
    /// - Thread: any one thread at a time; real-time safe.
    @_noLocks
    public func convert(_ input: UnsafePointer<UnsafeMutableRawPointer>, frameCount: Int,
                        into output: UnsafePointer<UnsafeMutableRawPointer>, capacity: Int) throws(AudioUnitError) -> Int {
        let passes = (frameCount + maximumInputFrames - 1) / maximumInputFrames
        let needed = resampler == nil ? frameCount : max(1, passes) * (resampler?.maxOutput ?? 0)
        guard capacity >= needed, frameCount >= 0 else { throw .tooManyFramesToProcess }
        var done = 0, written = 0
        while done < frameCount {
            let n = min(maximumInputFrames, frameCount - done)
            SampleConversion.decode(input, inLayout, offset: done, frames: n, into: decoded)
            written += pass(frames: n, into: output, at: written, endOfInput: false)
            done += n
        }
        return written
    }

    /// Drains the resampler's tail (the last ``latencyFrames``-ish frames still inside it) and
    /// resets the converter for a new stream. Without a rate change it returns 0.
    /// - Parameters:
    ///   - output: as for ``convert(_:frameCount:into:capacity:)``.
    ///   - capacity: ≥ ``maximumOutputFrames(forInputFrames:)`` of ``maximumInputFrames``.
    /// - Throws: ``AudioUnitError/tooManyFramesToProcess`` when `capacity` is too small.
    @_noLocks
    public func flush(into output: UnsafePointer<UnsafeMutableRawPointer>, capacity: Int) throws(AudioUnitError) -> Int {
        guard let resampler else { return 0 }
        guard capacity >= resampler.maxOutput else { throw .tooManyFramesToProcess }
        let produced = pass(frames: 0, into: output, at: 0, endOfInput: true)
        resampler.reset()
        return produced
    }

    /// Forgets the resampler's history: the next call starts a new stream.
    @_noLocks
    public func reset() { resampler?.reset() }

    /// One pass over `decoded` (`frames` frames): reduce, resample, expand, encode at `offset`.
    @_noLocks
    private func pass(frames: Int, into output: UnsafePointer<UnsafeMutableRawPointer>, at offset: Int, endOfInput: Bool) -> Int {
        let inCh = inLayout.channels, outCh = outLayout.channels
        var stage = decoded
        if outCh < inCh {
            SampleConversion.mapChannels(decoded, from: inCh, into: reduced, to: outCh, frames: frames)
            stage = reduced
        }
        var count = frames
        if let resampler {
            count = resampler.process(stage, frames: frames, into: resampled, at: 0, endOfInput: endOfInput)
            stage = resampled
        }
        if outCh > inCh {
            SampleConversion.mapChannels(stage, from: inCh, into: expanded, to: outCh, frames: count)
            stage = expanded
        }
        SampleConversion.encode(stage, outLayout, offset: offset, frames: count, into: output)
        return count
    }

    /// The resampler's delay in output frames: where an impulse at input frame 0 peaks.
    private static func measureDelay(_ r: Resampler, scratch: ChannelPointers, input: ChannelPointers) -> Int {
        let chunk = min(256, r.maxInput)
        var best: Float = 0, bestIndex = 0, seen = 0
        for pass in 0..<64 {
            for c in 0..<r.channels {
                input[c].update(repeating: 0, count: chunk)
                if pass == 0 { input[c][0] = 1 }
            }
            let produced = r.process(input, frames: chunk, into: scratch, at: 0)
            for i in 0..<produced where abs(scratch[0][i]) > best {
                best = abs(scratch[0][i]); bestIndex = seen + i
            }
            seen += produced
            if seen > bestIndex + Int(r.ratio * 1024) + 1024 && best > 0.1 { break }
        }
        r.reset()
        for c in 0..<r.channels { input[c].update(repeating: 0, count: chunk) }
        return bestIndex
    }
}

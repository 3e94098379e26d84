// Observers: a tap's consumer side — chunks from the ring, converted and queued as blocks.
import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The consumer side's state: chunks taken from the ring, converted, queued as segments
/// (a new segment starts at each gap or source-format change).
struct TapStream: ~Copyable {
    struct Segment {
        var startTime: Double
        var droppedBefore: UInt64
        /// Graph frames per output frame.
        var ratio: Double
        /// The output format (nil: the source could not be converted; the segment stays empty).
        var format: StreamFormat?
        var buffers: [[UInt8]]
        var frames = 0
        var consumed = 0
        var available: Int { frames - consumed }
    }

    let target: StreamFormat?
    var segments: [Segment] = []
    var conversion: TapConversion?
    var source: (rate: Double, channels: UInt32)?
    var scratch: [UInt8] = []
    var staging: [[Float]] = []

    init(target: StreamFormat?) { self.target = target }

    deinit { conversion?.release() }

    /// Moves every complete chunk from the ring into segments. Returns whether any moved.
    @discardableResult
    mutating func pump(_ core: TapCore) -> Bool {
        var moved = false
        let headerBytes = TapCore.headerBytes
        var header = TapChunkHeader(sampleTime: 0, droppedBefore: 0, sampleRate: 0, frames: 0, channels: 0)
        while jack_ringbuffer_read_space(core.ring) >= headerBytes {
            _ = withUnsafeMutableBytes(of: &header) { jack_ringbuffer_peek(core.ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), headerBytes) }
            let frames = Int(header.frames), channels = Int(header.channels)
            let channelBytes = frames * MemoryLayout<Float>.stride
            // The writer advances once per chunk, so a visible header means a whole chunk.
            jack_ringbuffer_read_advance(core.ring, headerBytes)
            if staging.count < channels { staging.append(contentsOf: Array(repeating: [], count: channels - staging.count)) }
            for c in 0..<channels {
                if staging[c].count < frames { staging[c] = [Float](repeating: 0, count: frames) }
                _ = staging[c].withUnsafeMutableBytes { jack_ringbuffer_read(core.ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), channelBytes) }
            }
            accept(header, frames: frames, channels: channels)
            moved = true
        }
        return moved
    }

    private mutating func accept(_ header: TapChunkHeader, frames: Int, channels: Int) {
        let sourceChanged = source.map { $0.rate != header.sampleRate || $0.channels != header.channels } ?? true
        if sourceChanged || header.droppedBefore > 0 || segments.isEmpty {
            finish()
            if sourceChanged {
                conversion?.release()
                source = (header.sampleRate, header.channels)
                conversion = TapConversion(sourceRate: header.sampleRate, sourceChannels: header.channels, target: target)
            }
            let format = conversion?.output
            segments.append(Segment(startTime: Double(header.sampleTime), droppedBefore: header.droppedBefore,
                                    ratio: header.sampleRate / (format?.sampleRate ?? header.sampleRate), format: format,
                                    buffers: Array(repeating: [], count: format.map { $0.isNonInterleaved ? Int($0.channelsPerFrame) : 1 } ?? 0)))
        }
        guard var conversion else {
            // The source cannot be converted to the tap's format: count it as lost, not as data.
            segments[segments.count - 1].droppedBefore += UInt64(frames)
            return
        }
        let produced = staging.withUnsafeBufferPointer { channelsBuffer in
            conversion.convert(channelsBuffer, frames: frames, into: &segments[segments.count - 1].buffers)
        }
        segments[segments.count - 1].frames += produced
        self.conversion = conversion
    }

    /// Ends the current segment: the conversion's tail goes into it.
    mutating func finish() {
        guard !segments.isEmpty, var conversion else { return }
        segments[segments.count - 1].frames += conversion.flush(into: &segments[segments.count - 1].buffers)
        self.conversion = conversion
    }

    /// Up to `maxFrames` from the first segment. A short take only when `allowShort` or when a
    /// later segment (a gap) follows.
    mutating func take(maxFrames: Int, allowShort: Bool) -> AudioTapBlock? {
        while let first = segments.first {
            let available = first.available
            let more = segments.count > 1
            if available == 0 {
                if more { segments.removeFirst(); continue }
                return nil
            }
            guard available >= maxFrames || allowShort || more else { return nil }
            let n = min(maxFrames, available)
            guard let format = first.format else { return nil }
            let bytesPerFrame = Int(format.bytesPerFrame)
            let start = first.consumed * bytesPerFrame, end = start + n * bytesPerFrame
            let buffers = first.buffers.map { Array($0[start..<end]) }
            let block = AudioTapBlock(format: format, frameCount: n,
                                      sampleTime: first.startTime + Double(first.consumed) * first.ratio,
                                      framesDroppedBefore: first.consumed == 0 ? first.droppedBefore : 0,
                                      buffers: buffers)
            segments[0].consumed += n
            // Drop consumed bytes now and then, so a long segment does not grow without bound.
            if segments[0].consumed >= 65_536 || segments[0].available == 0 {
                let cut = segments[0].consumed * bytesPerFrame
                for b in 0..<segments[0].buffers.count { segments[0].buffers[b].removeFirst(cut) }
                segments[0].startTime += Double(segments[0].consumed) * segments[0].ratio
                segments[0].frames -= segments[0].consumed
                segments[0].consumed = 0
                segments[0].droppedBefore = 0
            }
            return block
        }
        return nil
    }
}

/// The conversion step of a tap's consumer: Float32 non-interleaved slices at the element's
/// rate and channel count in, the tap's format out, through an ``AudioConverter`` (decode,
/// channel mapping, libsamplerate, encode) that keeps its state across calls and gives its
/// tail on flush. No converter when the formats already match.
struct TapConversion {
    /// The format produced, or nil when no converter can be made for this source.
    let output: StreamFormat?
    let sourceChannels: Int
    let converter: AudioConverter?
    private var scratch: [UnsafeMutableRawPointer] = []
    private var scratchFrames = 0

    init(sourceRate: Double, sourceChannels: UInt32, target: StreamFormat?) {
        self.sourceChannels = Int(sourceChannels)
        let source = try? StreamFormat.float32(sampleRate: sourceRate, channels: sourceChannels)
        guard let source else { output = nil; converter = nil; return }
        let wanted = target ?? source
        if wanted == source {
            output = source
            converter = nil
        } else if let made = try? AudioConverter(from: source, to: wanted, maximumInputFrames: 4096) {
            output = wanted
            converter = made
        } else {
            output = nil
            converter = nil
        }
    }

    /// Output buffers with room for `frames` output frames (reused between calls).
    private mutating func buffers(for frames: Int) -> [UnsafeMutableRawPointer] {
        guard let output else { return [] }
        if frames > scratchFrames {
            scratch.forEach { $0.deallocate() }
            scratch = (0..<output.bufferCount).map { _ in
                UnsafeMutableRawPointer.allocate(byteCount: frames * Int(output.bytesPerFrame), alignment: 16)
            }
            scratchFrames = frames
        }
        return scratch
    }

    /// Appends the converted frames to `buffers`; returns how many output frames were added.
    mutating func convert(_ channels: UnsafeBufferPointer<[Float]>, frames: Int, into buffers: inout [[UInt8]]) -> Int {
        guard let output else { return 0 }
        guard let converter else {
            for c in 0..<sourceChannels {
                channels[c].withUnsafeBytes { buffers[c].append(contentsOf: $0.prefix(frames * 4)) }
            }
            return frames
        }
        let capacity = converter.maximumOutputFrames(forInputFrames: frames)
        let out = self.buffers(for: capacity)
        let inputs = (0..<sourceChannels).map { UnsafeMutableRawPointer(mutating: channels[$0].withUnsafeBytes { $0.baseAddress! }) }
        let produced = inputs.withUnsafeBufferPointer { i in
            out.withUnsafeBufferPointer { o in
                (try? converter.convert(i.baseAddress!, frameCount: frames, into: o.baseAddress!, capacity: capacity)) ?? 0
            }
        }
        append(out, frames: produced, format: output, into: &buffers)
        return produced
    }

    /// Appends the conversion's tail (frames still inside the resampler) and resets it for a
    /// new stream; returns how many frames were added.
    mutating func flush(into buffers: inout [[UInt8]]) -> Int {
        guard let output, let converter else { return 0 }
        let capacity = converter.maximumOutputFrames(forInputFrames: converter.maximumInputFrames)
        let out = self.buffers(for: capacity)
        let produced = out.withUnsafeBufferPointer { o in (try? converter.flush(into: o.baseAddress!, capacity: capacity)) ?? 0 }
        append(out, frames: produced, format: output, into: &buffers)
        return produced
    }

    private func append(_ out: [UnsafeMutableRawPointer], frames: Int, format: StreamFormat, into buffers: inout [[UInt8]]) {
        let bytes = frames * Int(format.bytesPerFrame)
        for b in 0..<out.count { buffers[b].append(contentsOf: UnsafeRawBufferPointer(start: out[b], count: bytes)) }
    }

    func release() { scratch.forEach { $0.deallocate() } }
}

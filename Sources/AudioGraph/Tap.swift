import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// A tap copies a node's output element, slice by slice, from the render thread into a
// lock-free single-producer/single-consumer ring (libjack's jack_ringbuffer), and a consumer —
// the tap's own thread, or a caller of `read` — takes it out, converts it and hands it on.
//
// Ring layout: one chunk per slice, made visible whole by a single write_advance:
//   TapChunkHeader (32 bytes) | channel 0: frames × Float32 | channel 1 … | channel n−1
// A slice that does not fit is dropped whole and counted; the next chunk that fits carries the
// count in `droppedBefore`, so the consumer knows exactly where the gap is.

/// The header of one slice in a tap's ring.
struct TapChunkHeader {
    /// Graph sample time of the slice's first frame.
    var sampleTime: UInt64
    /// Frames of this element dropped (ring full) between the previous chunk and this one.
    var droppedBefore: UInt64
    /// The graph's sample rate when the slice rendered, in Hz.
    var sampleRate: Double
    var frames: UInt32
    var channels: UInt32
}

/// The render side of a tap: the ring and its counters. Everything the render thread touches
/// is a `let` (pointers and atomics), so it never takes an exclusivity check or a reference.
final class TapCore: @unchecked Sendable {
    let ring: UnsafeMutablePointer<jack_ringbuffer_t>
    /// Render thread only: the ring's two writable segments, the header being written, and the
    /// frames dropped since the last chunk that fitted.
    let vector: UnsafeMutablePointer<jack_ringbuffer_data_t>
    let header: UnsafeMutablePointer<TapChunkHeader>
    let pendingDropped: UnsafeMutablePointer<UInt64>
    /// Frames dropped in total (ring full). Render thread stores, anyone loads.
    let dropped = Atomic<UInt64>(0)
    /// Frames put into the ring in total.
    let written = Atomic<UInt64>(0)

    static let headerBytes = MemoryLayout<TapChunkHeader>.stride

    /// - Parameter bytes: ring capacity; libjack rounds it up to a power of two.
    init?(bytes: Int) {
        guard let ring = jack_ringbuffer_create(bytes) else { return nil }
        self.ring = ring
        _ = jack_ringbuffer_mlock(ring)  // best effort: keep the ring out of swap
        vector = .allocate(capacity: 2)
        vector.initialize(repeating: jack_ringbuffer_data_t(), count: 2)
        header = .allocate(capacity: 1)
        header.initialize(to: TapChunkHeader(sampleTime: 0, droppedBefore: 0, sampleRate: 0, frames: 0, channels: 0))
        pendingDropped = .allocate(capacity: 1)
        pendingDropped.initialize(to: 0)
    }

    deinit {
        jack_ringbuffer_free(ring)
        vector.deallocate()
        header.deallocate()
        pendingDropped.deallocate()
    }

    /// Copies one slice into the ring, or counts it as dropped if it does not fit. Render thread.
    @_noLocks
    func write(channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, channelCount: Int, frames: Int,
               sampleRate: Double, sampleTime: Double) {
        guard frames > 0, channelCount > 0 else { return }
        let channelBytes = frames &* MemoryLayout<Float>.stride
        let total = TapCore.headerBytes &+ channelCount &* channelBytes
        let ring = self.ring
        let space = _unsafePerformance { jack_ringbuffer_write_space(ring) }
        if space < total {
            pendingDropped[0] &+= UInt64(frames)
            dropped.store(dropped.load(ordering: .relaxed) &+ UInt64(frames), ordering: .relaxed)
            return
        }
        let vector = self.vector
        _unsafePerformance { jack_ringbuffer_get_write_vector(ring, vector) }
        header.pointee = TapChunkHeader(sampleTime: UInt64(sampleTime), droppedBefore: pendingDropped[0],
                                        sampleRate: sampleRate, frames: UInt32(frames), channels: UInt32(channelCount))
        put(UnsafeRawPointer(header), at: 0, bytes: TapCore.headerBytes)
        for c in 0..<channelCount {
            let offset = TapCore.headerBytes &+ c &* channelBytes
            if let channels { put(UnsafeRawPointer(channels[c]), at: offset, bytes: channelBytes) }
            else { put(nil, at: offset, bytes: channelBytes) }
        }
        // One advance: the consumer sees the whole chunk or none of it.
        _unsafePerformance { jack_ringbuffer_write_advance(ring, total) }
        pendingDropped[0] = 0
        written.store(written.load(ordering: .relaxed) &+ UInt64(frames), ordering: .relaxed)
    }

    /// Copies `bytes` from `source` (nil: zeros) to `offset` within the ring's write vector.
    @_noLocks @inline(__always)
    func put(_ source: UnsafeRawPointer?, at offset: Int, bytes: Int) {
        var done = 0
        while done < bytes {
            let position = offset &+ done
            let first = vector[0].len
            let segment = position < first ? vector[0] : vector[1]
            let start = position < first ? position : position &- first
            guard let base = segment.buf else { return }
            let count = min(segment.len &- start, bytes &- done)
            guard count > 0 else { return }
            let destination = UnsafeMutableRawPointer(base) + start
            if let source { destination.copyMemory(from: source + done, byteCount: count) }
            else { destination.initializeMemory(as: UInt8.self, repeating: 0, count: count) }
            done &+= count
        }
    }
}

/// A block of tapped audio in the tap's format, with where it sits in the graph's timeline.
///
/// Shapes: a non-interleaved format has one buffer per channel, `[channel][frame]`; an
/// interleaved one a single buffer, `[frame][channel]`. Each buffer holds
/// `frameCount × format.bytesPerFrame` bytes. The block owns its bytes (valid as long as you keep it).
public struct AudioTapBlock: Sendable, Equatable {
    /// The block's format: the tap's format.
    public let format: StreamFormat
    /// Frames in the block: the tap's block size, except the block before a gap and the last
    /// one delivered on removal, which may be shorter.
    public let frameCount: Int
    /// Graph sample time (frames at the graph's rate since the graph started) of the first
    /// frame. Exact when the tap runs at the graph's rate.
    public let sampleTime: Double
    /// Frames, at the graph's rate, that were lost immediately before this block because the
    /// ring was full (the consumer fell behind). 0 when the block continues the previous one.
    public let framesDroppedBefore: UInt64
    /// The raw bytes, one array per buffer (see the type's documentation for shapes).
    public let buffers: [[UInt8]]

    /// The samples of one channel as Float, for Float32 formats of either layout; nil for
    /// other sample types or a channel out of range.
    public func floatChannel(_ channel: Int) -> [Float]? {
        guard format.isFloat, channel >= 0, channel < Int(format.channelsPerFrame) else { return nil }
        if format.isNonInterleaved {
            return buffers[channel].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        }
        let stride = Int(format.channelsPerFrame)
        return buffers[0].withUnsafeBytes { raw in
            let all = raw.bindMemory(to: Float.self)
            return (0..<frameCount).map { all[$0 * stride + channel] }
        }
    }

    /// The samples of one buffer as Int16, for 16-bit integer formats (interleaved: all
    /// channels, `[frame][channel]`); nil otherwise.
    public func int16Samples(buffer: Int = 0) -> [Int16]? {
        guard format.formatFlags.contains(.isSignedInteger), format.bitsPerChannel == 16,
              buffer >= 0, buffer < buffers.count else { return nil }
        return buffers[buffer].withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }
}

/// A tap on a node's output element: the render thread copies every slice into a lock-free
/// ring; a consumer takes it out, converted to the tap's format.
///
/// Two kinds, both from ``AudioGraph``:
/// - **Push** (``AudioGraph/installTap(on:element:blockFrames:format:bufferDuration:handler:)``):
///   the tap's own thread delivers full blocks of `blockFrames` to your handler as they fill,
///   and on removal the remainder.
/// - **Pull** (``AudioGraph/installTap(on:element:format:bufferDuration:)``): you call
///   ``read(maxFrames:)`` from your own thread, at your own pace.
///
/// Overflow never blocks the render thread: when the ring is full, the slice is dropped whole
/// and counted in ``framesDropped``; the next block says how many frames were lost right
/// before it (``AudioTapBlock/framesDroppedBefore``) and carries its exact ``AudioTapBlock/sampleTime``.
/// A push tap delivers the block before a gap early (short), so no block spans a gap.
///
/// A tap stays installed until ``AudioGraph/removeTap(_:)``: dropping your reference does not
/// remove it (the graph and, for a push tap, its thread keep it alive).
/// Thread: counters from any thread; `read` from one consumer thread at a time.
public final class AudioTap: @unchecked Sendable {
    /// The node tapped.
    public let node: AUNode
    /// The output element tapped.
    public let element: AudioUnitElement
    /// Frames per delivered block (push taps); 0 for pull taps.
    public let blockFrames: Int
    /// The format blocks are delivered in, or nil: Float32 non-interleaved at whatever the
    /// element renders (the graph's rate and the element's channel count).
    public let format: StreamFormat?

    let core: TapCore
    let unit: AudioUnit
    let handler: (@Sendable (AudioTapBlock) -> Void)?
    private let stream: Mutex<TapStream>
    private let stopping = Atomic<Bool>(false)
    private let installed = Atomic<Bool>(true)
    private let delivered = Atomic<UInt64>(0)
    private var thread: ConsumerThread?
    private let pollMicroseconds: UInt32

    init(node: AUNode, element: AudioUnitElement, unit: AudioUnit, core: TapCore, blockFrames: Int,
         format: StreamFormat?, handler: (@Sendable (AudioTapBlock) -> Void)?) {
        self.node = node
        self.element = element
        self.unit = unit
        self.core = core
        self.blockFrames = blockFrames
        self.format = format
        self.handler = handler
        stream = Mutex(TapStream(target: format))
        // Poll a few times per block: 1…10 ms.
        let blockSeconds = format.map { Double(blockFrames) / $0.sampleRate } ?? Double(blockFrames) / 48_000
        pollMicroseconds = UInt32(min(10_000, max(1_000, blockSeconds * 250_000)))
    }

    /// Frames the render thread put into the ring (at the graph's rate). Thread: any.
    public var framesWritten: UInt64 { core.written.load(ordering: .relaxed) }
    /// Frames dropped because the ring was full (at the graph's rate). Thread: any.
    public var framesDropped: UInt64 { core.dropped.load(ordering: .relaxed) }
    /// Frames handed to the handler or returned by `read`, in the tap's format. Thread: any.
    public var framesDelivered: UInt64 { delivered.load(ordering: .relaxed) }
    /// Whether the tap is still installed. Thread: any.
    public var isInstalled: Bool { installed.load(ordering: .acquiring) }

    /// Reads up to `maxFrames` frames that have arrived (pull taps). Returns nil when nothing
    /// is waiting. A read never spans a gap: frames up to a gap come first, and the next read
    /// starts after it with ``AudioTapBlock/framesDroppedBefore`` set. After the tap is removed,
    /// reads return what was left, then nil.
    /// - Parameter maxFrames: 1…; frames in the tap's format.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` (`maxFrames` < 1),
    ///   ``AudioUnitError/cannotDoInCurrentContext`` (a push tap: its thread consumes).
    /// - Thread: one consumer thread at a time (not the render thread); allocates.
    public func read(maxFrames: Int) throws(AudioUnitError) -> AudioTapBlock? {
        guard handler == nil else { throw .cannotDoInCurrentContext }
        guard maxFrames >= 1 else { throw .invalidPropertyValue }
        let block = stream.withLock { s -> AudioTapBlock? in
            if installed.load(ordering: .acquiring) { s.pump(core) }
            return s.take(maxFrames: maxFrames, allowShort: true)
        }
        if let block { delivered.add(UInt64(block.frameCount), ordering: .relaxed) }
        return block
    }

    func startThread() {
        thread = ConsumerThread { [self] in
            while !stopping.load(ordering: .acquiring) {
                let moved = deliver(final: false)
                if !moved { usleep(pollMicroseconds) }
            }
        }
    }

    /// Moves what arrived to the handler; returns whether anything moved.
    @discardableResult
    private func deliver(final: Bool) -> Bool {
        guard let handler else { return false }
        var moved = false
        while true {
            let blocks = stream.withLock { s -> [AudioTapBlock] in
                if s.pump(core) { moved = true }
                if final { s.finish() }
                var out: [AudioTapBlock] = []
                while let block = s.take(maxFrames: blockFrames, allowShort: final) { out.append(block) }
                return out
            }
            if blocks.isEmpty { return moved }
            for block in blocks {
                handler(block)
                delivered.add(UInt64(block.frameCount), ordering: .relaxed)
            }
            moved = true
            if final { return true }
        }
    }

    /// Removal, after the render thread has let go: stop the thread, deliver the rest.
    func finish() {
        guard installed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if let thread {
            stopping.store(true, ordering: .releasing)
            thread.join()
            self.thread = nil
            deliver(final: true)
        } else {
            stream.withLock { s in s.pump(core); s.finish() }
        }
    }
}

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

/// A plain pthread running a closure once (the core does not use Foundation).
final class ConsumerThread {
    private final class Body { let run: () -> Void; init(_ run: @escaping () -> Void) { self.run = run } }
    private var thread = pthread_t()

    init(_ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let status = pthread_create(&thread, nil, { arg in
            let body = Unmanaged<Body>.fromOpaque(arg!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    func join() { pthread_join(thread, nil) }
}

extension AudioGraph {
    /// Installs a push tap on a node's output element: its own thread delivers blocks of
    /// `blockFrames` frames in `format` to `handler` as they fill. Works while running; several
    /// taps may observe the same element. Removal (``removeTap(_:)``) delivers the remainder.
    ///
    /// - Parameters:
    ///   - node: a node of this graph.
    ///   - element: output element: 0, or for the ``IOUnit`` 1 (device input, as the graph
    ///     receives it) or 0 (what the graph sends to the device).
    ///   - blockFrames: frames per block in `format`, 1…1 048 576.
    ///   - format: the blocks' format — any valid ``StreamFormat`` (Int16/Int32/Float32,
    ///     interleaved or not, any rate and channel count), converted on the tap's thread by an
    ///     ``AudioConverter`` — or nil for Float32 non-interleaved at whatever the element renders.
    ///   - bufferDuration: the ring's capacity in seconds of the element's current format,
    ///     0.01…60 (default 2): how long the handler may fall behind before frames are dropped.
    ///   - handler: called on the tap's thread (never the render thread), one block at a time.
    /// - Returns: the tap; keep it to read its counters and to remove it.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/invalidPropertyValue`` (block size or duration out of bounds),
    ///   ``AudioUnitError/formatNotSupported`` (a format the tap cannot produce),
    ///   ``AudioUnitError/failedInitialization`` (the ring could not be allocated),
    ///   ``AudioUnitError/cannotDoInCurrentContext`` (called on the render thread).
    /// - Thread: control thread; allocates; starts a thread; may wait up to one render cycle.
    public func installTap(on node: AUNode, element: AudioUnitElement = 0, blockFrames: Int,
                           format: StreamFormat? = nil, bufferDuration: Double = 2,
                           handler: @escaping @Sendable (AudioTapBlock) -> Void) throws(AudioUnitError) -> AudioTap {
        guard blockFrames >= 1, blockFrames <= 1 << 20 else { throw .invalidPropertyValue }
        return try makeTap(node, element, blockFrames: blockFrames, format: format, bufferDuration: bufferDuration, handler: handler)
    }

    /// Installs a pull tap on a node's output element: nothing is delivered; call
    /// ``AudioTap/read(maxFrames:)`` from your own thread at your own pace.
    /// - Parameters: as for the push tap, without block size and handler.
    /// - Throws: as for the push tap.
    /// - Thread: control thread; allocates; may wait up to one render cycle.
    public func installTap(on node: AUNode, element: AudioUnitElement = 0,
                           format: StreamFormat? = nil, bufferDuration: Double = 2) throws(AudioUnitError) -> AudioTap {
        try makeTap(node, element, blockFrames: 0, format: format, bufferDuration: bufferDuration, handler: nil)
    }

    private func makeTap(_ node: AUNode, _ element: AudioUnitElement, blockFrames: Int, format: StreamFormat?,
                         bufferDuration: Double, handler: (@Sendable (AudioTapBlock) -> Void)?) throws(AudioUnitError) -> AudioTap {
        let unit = try checkObservable(node, element)
        guard bufferDuration.isFinite, bufferDuration >= 0.01, bufferDuration <= 60 else { throw .invalidPropertyValue }
        let current = try unit.streamFormat(scope: .output, element: element)
        if let format {
            try format.validate()
            guard TapConversion(sourceRate: current.sampleRate, sourceChannels: current.channelsPerFrame, target: format).output != nil
            else { throw .formatNotSupported }
        }
        // Room for `bufferDuration` of samples plus a header per 64-frame slice.
        let frames = Int(bufferDuration * current.sampleRate) + 1
        let bytes = frames * (Int(current.channelsPerFrame) * MemoryLayout<Float>.stride + TapCore.headerBytes / 64 + 1)
        guard let core = TapCore(bytes: bytes) else { throw .failedInitialization }
        let tap = AudioTap(node: node, element: element, unit: unit, core: core, blockFrames: blockFrames,
                           format: format, handler: handler)
        if handler != nil { tap.startThread() }
        unit.addObserver(ObserverEntry(kind: .tap, element: element, target: Unmanaged.passUnretained(core).toOpaque()),
                         owner: core)
        return tap
    }

    /// Removes a tap: the render thread stops writing to it, then a push tap's thread delivers
    /// everything still in the ring and the conversion's tail (short last block included) and
    /// ends; a pull tap keeps what is left for ``AudioTap/read(maxFrames:)``. Removing twice does nothing.
    /// - Throws: ``AudioUnitError/cannotDoInCurrentContext`` (called on the render thread).
    /// - Thread: control thread; waits up to one render cycle and for the last handler call.
    public func removeTap(_ tap: AudioTap) throws(AudioUnitError) {
        try checkControlThread()
        tap.unit.removeObserver(target: Unmanaged.passUnretained(tap.core).toOpaque())
        tap.finish()
    }
}

// Observers: taps on a node's output (AudioTap, AudioTapBlock) and installing and removing them.
import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
/// SAFETY (`@unchecked Sendable`): counters are atomics and the consumer state sits behind a ControlLock; the render side is the tap's ring.
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
    private let stream: ControlLock<TapStream>
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
        stream = ControlLock(TapStream(target: format))
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

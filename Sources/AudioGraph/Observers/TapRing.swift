// Observers: a tap's render side — the lock-free ring of slices between the render thread and the consumer.
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
/// SAFETY (`@unchecked Sendable`): only constants, atomics and a single-producer/single-consumer ring (render thread in, one consumer out).
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
        let space = RealTime.ringWriteSpace(ring)
        if space < total {
            pendingDropped[0] &+= UInt64(frames)
            dropped.store(dropped.load(ordering: .relaxed) &+ UInt64(frames), ordering: .relaxed)
            return
        }
        let vector = self.vector
        RealTime.ringWriteVector(ring, vector)
        header.pointee = TapChunkHeader(sampleTime: UInt64(sampleTime), droppedBefore: pendingDropped[0],
                                        sampleRate: sampleRate, frames: UInt32(frames), channels: UInt32(channelCount))
        put(UnsafeRawPointer(header), at: 0, bytes: TapCore.headerBytes)
        for c in 0..<channelCount {
            let offset = TapCore.headerBytes &+ c &* channelBytes
            if let channels { put(UnsafeRawPointer(channels[c]), at: offset, bytes: channelBytes) }
            else { put(nil, at: offset, bytes: channelBytes) }
        }
        // One advance: the consumer sees the whole chunk or none of it.
        RealTime.ringWriteAdvance(ring, total)
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

// Formats: sample encoding and decoding (Int16, Int32, Float32, interleaved or not), rounding and channel mapping.
import CSampleRate
#if canImport(Glibc)
import Glibc
#endif

import CSampleRate
#if canImport(Glibc)
import Glibc
#endif

// The conversion stages shared by ``AudioConverter`` and the render plan's input converters.
// Everything here that runs per slice is `@_noLocks`; setup (allocation, `src_new`) is not.
//
// Pipeline, in the order samples take it:
//   1. decode:   the source layout (Int16 / Int32 / Float32, interleaved or not) → Float32 `[channel][frame]`
//   2. reduce:   when the destination has fewer channels (N → 1 averages, N → M < N drops the rest)
//   3. resample: libsamplerate, at min(source, destination) channels
//   4. expand:   when the destination has more channels (1 → all, N → M > N leaves M − N silent)
//   5. encode:   Float32 `[channel][frame]` → the destination layout (integers rounded to nearest,
//                clipped, no dither)
// Reducing before and expanding after the resampler keeps it at the smaller channel count.

/// The sample type of a valid ``StreamFormat``.
enum SampleKind: UInt8 {
    case float32, int16, int32
}

extension StreamFormat {
    var sampleKind: SampleKind {
        if isFloat { return .float32 }
        return bitsPerChannel == 16 ? .int16 : .int32
    }
    /// Buffers in a buffer list of this format: one per channel non-interleaved, else one.
    public var bufferCount: Int { isNonInterleaved ? Int(channelsPerFrame) : 1 }
    /// Bytes per sample of one channel.
    var bytesPerSample: Int { Int(bitsPerChannel / 8) }
    /// The engine's processing format at this format's rate and channel count.
    var canonical: StreamFormat { (try? StreamFormat.float32(sampleRate: sampleRate, channels: channelsPerFrame)) ?? self }
}

/// Layout of raw buffers as the per-sample loops need it (trivial, usable on the render thread).
struct RawLayout {
    var kind: SampleKind
    var interleaved: Bool
    var channels: Int
    @_noLocks init(kind: SampleKind, interleaved: Bool, channels: Int) {
        self.kind = kind; self.interleaved = interleaved; self.channels = channels
    }
    init(_ format: StreamFormat) {
        self.init(kind: format.sampleKind, interleaved: !format.isNonInterleaved, channels: Int(format.channelsPerFrame))
    }
}

typealias ChannelPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>

/// Full scale of a signed integer sample type: Int16 uses 32 768 (so −32 768 ↔ −1.0 exactly),
/// Int32 uses 2³¹. The usual convention (libsndfile's, Core Audio's converters').
@inline(__always) func fullScale(_ kind: SampleKind) -> Float {
    switch kind {
    case .float32: return 1
    case .int16: return 32_768
    case .int32: return 2_147_483_648
    }
}

enum SampleConversion {
    /// Raw buffers → Float32 `[channel][frame]`. `buffers` holds `layout.interleaved ? 1 : channels`
    /// pointers, each at frame `offset`. Integers are scaled by 1/full scale.
    @_noLocks
    static func decode(_ buffers: UnsafePointer<UnsafeMutableRawPointer>, _ layout: RawLayout, offset: Int, frames: Int,
                       into dst: ChannelPointers) {
        let ch = layout.channels
        for c in 0..<ch {
            let d = dst[c]
            let base = layout.interleaved ? buffers[0] : buffers[c]
            let stride = layout.interleaved ? ch : 1
            let first = (layout.interleaved ? offset &* ch &+ c : offset)
            switch layout.kind {
            case .float32:
                let s = base.assumingMemoryBound(to: Float.self) + first
                for i in 0..<frames { d[i] = s[i &* stride] }
            case .int16:
                let s = base.assumingMemoryBound(to: Int16.self) + first
                for i in 0..<frames { d[i] = Float(s[i &* stride]) * (1 / 32_768) }
            case .int32:
                let s = base.assumingMemoryBound(to: Int32.self) + first
                for i in 0..<frames { d[i] = Float(s[i &* stride]) * (1 / 2_147_483_648) }
            }
        }
    }

    /// Float32 `[channel][frame]` → raw buffers at frame `offset`. Integers: round to nearest
    /// (ties to even, `rint`), clip to the type's range (no dither).
    @_noLocks
    static func encode(_ src: ChannelPointers, _ layout: RawLayout, offset: Int, frames: Int,
                       into buffers: UnsafePointer<UnsafeMutableRawPointer>) {
        let ch = layout.channels
        for c in 0..<ch {
            let s = src[c]
            let base = layout.interleaved ? buffers[0] : buffers[c]
            let stride = layout.interleaved ? ch : 1
            let first = (layout.interleaved ? offset &* ch &+ c : offset)
            switch layout.kind {
            case .float32:
                let d = base.assumingMemoryBound(to: Float.self) + first
                for i in 0..<frames { d[i &* stride] = s[i] }
            case .int16:
                let d = base.assumingMemoryBound(to: Int16.self) + first
                for i in 0..<frames { d[i &* stride] = Int16(clipped(s[i] * 32_768, -32_768, 32_767)) }
            case .int32:
                let d = base.assumingMemoryBound(to: Int32.self) + first
                for i in 0..<frames {
                    // In Double: Float cannot hold 2³¹ − 1.
                    let v = RealTime.rint(Double(s[i]) * 2_147_483_648)
                    d[i &* stride] = Int32(min(max(v, -2_147_483_648), 2_147_483_647))
                }
            }
        }
    }

    /// Rounds to nearest and clips; NaN becomes 0.
    @_noLocks @inline(__always)
    static func clipped(_ x: Float, _ lo: Float, _ hi: Float) -> Float {
        if !(x == x) { return 0 }
        return min(max(RealTime.rintf(x), lo), hi)
    }

    /// Rounds Float32 samples in place to what an integer format can hold (the value a sample
    /// would have after encoding to `kind` and decoding again).
    @_noLocks
    static func quantize(_ buffers: ChannelPointers, channels: Int, frames: Int, kind: SampleKind) {
        switch kind {
        case .float32: return
        case .int16:
            for c in 0..<channels {
                let b = buffers[c]
                for i in 0..<frames { b[i] = clipped(b[i] * 32_768, -32_768, 32_767) * (1 / 32_768) }
            }
        case .int32:
            // Float32 holds 24 significant bits, fewer than Int32's 31: only the clip applies.
            for c in 0..<channels {
                let b = buffers[c]
                for i in 0..<frames { b[i] = min(max(b[i], -1), 1) }
            }
        }
    }

    /// Channel mapping `src` (`from` channels) → `dst` (`to` channels): equal counts copy, 1 → N
    /// copies the channel to all, N → 1 averages, N → M copies the first min(N, M) channels and
    /// leaves the rest silent. `dst` must not alias `src`.
    @_noLocks
    static func mapChannels(_ src: ChannelPointers, from: Int, into dst: ChannelPointers, to: Int, frames: Int) {
        if from == to || (from > 1 && to > 1) {
            for c in 0..<to {
                if c < from { copy(src[c], to: dst[c], frames: frames) } else { dst[c].update(repeating: 0, count: frames) }
            }
        } else if from == 1 {
            for c in 0..<to { copy(src[0], to: dst[c], frames: frames) }
        } else {
            let d = dst[0]
            let scale = 1 / Float(from)
            for i in 0..<frames { d[i] = src[0][i] }
            for c in 1..<from {
                let s = src[c]
                for i in 0..<frames { d[i] += s[i] }
            }
            for i in 0..<frames { d[i] *= scale }
        }
    }
}

// DSP: non-finite samples (NaN, ±Inf) — found with one cheap pass, replaced by silence only when found.

/// Finding and replacing non-finite samples in `[frame]` and `[channel][frame]` Float buffers.
///
/// The render loop runs these where samples enter the graph from outside the engine's own
/// kernels (device input, render callbacks, custom units, file players, converters) and as the
/// last line of defence before the device output; each replaced sample is counted in
/// ``AudioGraph/nonFiniteSampleCount``. The test is one pass summing the buffer in 32
/// independent lanes (one load and one add per 4 samples, so it vectorizes): the sum of finite
/// samples is finite, and a NaN or an Inf makes it NaN or ±Inf (+Inf and −Inf together give
/// NaN). The buffer is only written when the sum is not finite, by a second, exact pass.
/// Thread: any; real-time safe (no allocation, lock or system call).
enum NonFinite {

    /// False when any of the `frames` samples at `p` is NaN or ±Inf; true when all are finite
    /// and their sum is (it overflows only past 3.4e38, far outside audio: then false, and
    /// ``replace(_:frames:)``, which is exact, finds nothing). Real-time safe.
    @_noLocks @inline(__always)
    static func allFinite(_ p: UnsafePointer<Float>, frames: Int) -> Bool {
        var a = SIMD16<Float>(), b = SIMD16<Float>()
        var i = 0
        let raw = UnsafeRawPointer(p)
        while i &+ 32 <= frames {
            a = a + raw.loadUnaligned(fromByteOffset: i &* 4, as: SIMD16<Float>.self)
            b = b + raw.loadUnaligned(fromByteOffset: (i &+ 16) &* 4, as: SIMD16<Float>.self)
            i = i &+ 32
        }
        var s: Float = 0
        while i < frames { s = s + p[i]; i = i &+ 1 }
        return isFinite(a + b, s)
    }

    /// Whether every lane of `lanes` and `tail` is finite: `x − x` is 0 for a finite `x` and NaN
    /// otherwise, compared lane by lane (a few vector operations; a horizontal `sum()` would be
    /// 15 dependent additions, about 60 cycles, on every check).
    @_noLocks @inline(__always)
    static func isFinite(_ lanes: SIMD16<Float>, _ tail: Float) -> Bool {
        all((lanes - lanes) .== SIMD16<Float>()) && tail - tail == 0
    }

    /// Replaces every non-finite sample of `frames` at `p` with 0; returns how many it replaced
    /// (0 without writing when all are finite). Real-time safe.
    @_noLocks @inline(__always)
    static func scrub(_ p: UnsafeMutablePointer<Float>, frames: Int) -> UInt64 {
        if allFinite(p, frames: frames) { return 0 }
        return replace(p, frames: frames)
    }

    /// Replaces the non-finite samples of `channels` buffers of `frames` frames (`[channel][frame]`)
    /// with 0; returns how many it replaced. Real-time safe.
    @_noLocks @inline(__always)
    static func scrub(_ buffers: UnsafePointer<UnsafeMutablePointer<Float>>, channels: Int, frames: Int) -> UInt64 {
        var n: UInt64 = 0
        for c in 0..<channels { n &+= scrub(buffers[c], frames: frames) }
        return n
    }

    /// The slow path, once something non-finite is known to be there.
    @_noLocks
    static func replace(_ p: UnsafeMutablePointer<Float>, frames: Int) -> UInt64 {
        var n: UInt64 = 0
        for i in 0..<frames where !p[i].isFinite {
            p[i] = 0
            n &+= 1
        }
        return n
    }

    /// `x`, or 0 when `x` is non-finite or below 1e-30 in magnitude (a filter's memory kept out
    /// of subnormals and out of NaN/Inf: a NaN or Inf in a recursive filter's memory would
    /// otherwise stay there for ever). Real-time safe.
    @_noLocks @inline(__always)
    static func flush(_ x: Float) -> Float {
        // One unsigned compare on the magnitude's bits, as cheap as the denormal test alone:
        // below 1e-30 wraps round to a huge number, and ±Inf (0x7F800000) and NaN (above it)
        // are at or past the end of the range kept.
        let low = (1e-30 as Float).bitPattern
        let magnitude = x.bitPattern & 0x7FFF_FFFF
        return magnitude &- low < 0x7F80_0000 &- low ? x : 0
    }

    /// The Double form of ``flush(_:)-(Float)`` (the same 1e-30 threshold).
    @_noLocks @inline(__always)
    static func flush(_ x: Double) -> Double {
        let low = (1e-30 as Double).bitPattern
        let magnitude = x.bitPattern & 0x7FFF_FFFF_FFFF_FFFF
        return magnitude &- low < 0x7FF0_0000_0000_0000 &- low ? x : 0
    }

    /// Copies `frames` samples from `src` to `dst` (distinct or the same buffer) and says
    /// whether they were all finite, in one pass (load, store, add); the test is
    /// ``allFinite(_:frames:)``'s. Real-time safe.
    @_noLocks @inline(__always)
    static func copyCheckingFinite(_ src: UnsafePointer<Float>, to dst: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        var a = SIMD16<Float>(), b = SIMD16<Float>()
        var i = 0
        let from = UnsafeRawPointer(src), to = UnsafeMutableRawPointer(dst)
        while i &+ 32 <= frames {
            let x = from.loadUnaligned(fromByteOffset: i &* 4, as: SIMD16<Float>.self)
            let y = from.loadUnaligned(fromByteOffset: (i &+ 16) &* 4, as: SIMD16<Float>.self)
            to.storeBytes(of: x, toByteOffset: i &* 4, as: SIMD16<Float>.self)
            to.storeBytes(of: y, toByteOffset: (i &+ 16) &* 4, as: SIMD16<Float>.self)
            a = a + x
            b = b + y
            i = i &+ 32
        }
        var s: Float = 0
        while i < frames { let x = src[i]; dst[i] = x; s = s + x; i = i &+ 1 }
        return isFinite(a + b, s)
    }
}

extension KernelKind {
    /// Whether the render loop replaces NaN and ±Inf in this kernel's outputs after it runs:
    /// the kernels whose samples come from outside the engine (the application's process
    /// callback, a file). The engine's own kernels keep finite input finite and flush their
    /// memory (``NonFinite/flush(_:)-(Float)``), so they are not scanned. A new kind must say
    /// which it is (a hosted plugin: true).
    var scrubsOutput: Bool {
        @_noLocks @inline(__always) get {
            switch self {
            case .custom, .filePlayer: return true
            case .passthrough, .mixer, .muteGate, .routing, .convolution, .dynamics, .peakLimiter,
                 .oscillator, .noise, .constantSource, .biquadFilter, .nBandEQ, .delay, .sampleDelay,
                 .varispeed, .timePitch: return false
            }
        }
    }
}

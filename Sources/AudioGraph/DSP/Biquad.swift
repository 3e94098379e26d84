// DSP: the biquad — RBJ cookbook coefficients and a direct-form-I filter over `[frame]` buffers.
#if canImport(Glibc)
import Glibc
#endif

/// A biquad's coefficients, normalized by a0:
/// `y[n] = b0·x[n] + b1·x[n−1] + b2·x[n−2] − a1·y[n−1] − a2·y[n−2]`. Trivial.
struct BiquadCoefficients: Equatable {
    var b0: Float, b1: Float, b2: Float, a1: Float, a2: Float

    /// The RBJ Audio EQ Cookbook low-pass (Robert Bristow-Johnson): w0 = 2π f/fs,
    /// α = sin(w0)/(2Q), b0 = b2 = (1−cos w0)/2, b1 = 1−cos w0, a0 = 1+α, a1 = −2 cos w0,
    /// a2 = 1−α, all divided by a0. Computed in Double, stored as Float.
    /// - Parameters:
    ///   - cutoff: Hz; clamped to 10…0.49 × sampleRate, so the filter stays stable at the top.
    ///   - q: the quality factor, > 0 (1/√2 is Butterworth: −3.01 dB at the cutoff).
    ///   - sampleRate: Hz, > 0.
    /// - Thread: any; real-time safe (libm only).
    @_noLocks @inline(__always)
    static func lowPass(cutoff: Float, q: Double, sampleRate: Float) -> BiquadCoefficients {
        let fs = Double(sampleRate)
        let f = min(max(Double(cutoff), 10), 0.49 * fs)
        let w0 = 2 * Double.pi * f / fs
        let cosw = RealTime.cos(w0)
        let sinw = RealTime.sin(w0)
        let alpha = sinw / (2 * q)
        let a0 = 1 + alpha
        let b0 = Float((1 - cosw) / 2 / a0)
        return BiquadCoefficients(b0: b0, b1: Float((1 - cosw) / a0), b2: b0,
                                  a1: Float(-2 * cosw / a0), a2: Float((1 - alpha) / a0))
    }
}

/// One channel's direct-form-I memory: the last two inputs and outputs. Direct form I keeps
/// the signal itself as state, so new coefficients continue from the same signal without the
/// transient that transposed forms show when coefficients change. Trivial; zero is silence.
struct BiquadMemory: Equatable {
    var x1: Float = 0, x2: Float = 0, y1: Float = 0, y2: Float = 0

    /// Denormals: a decaying recursive filter fed silence drifts into subnormal numbers, which
    /// many CPUs process tens of times slower, and can hang there. Memory below 1e-30
    /// (−600 dBFS) is set to exact zero, so silence in gives exact zeros out.
    @_noLocks @inline(__always)
    static func flush(_ x: Float) -> Float { abs(x) < 1e-30 ? 0 : x }

    /// The memory with every value below 1e-30 in magnitude set to exact zero.
    var flushed: BiquadMemory {
        @_noLocks @inline(__always) get {
            BiquadMemory(x1: Self.flush(x1), x2: Self.flush(x2), y1: Self.flush(y1), y2: Self.flush(y2))
        }
    }
}

/// Runs biquads over buffers. Each call processes a contiguous run of frames and leaves the
/// memory where the run ended (flushed of denormals), so consecutive calls continue the signal.
enum Biquad {
    /// Filters one channel: `output[f]` for `f` in `0..<frames`, reading `input[f]`, or silence
    /// when `input` is nil (the filter rings out). `input` and `output` may be the same buffer.
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func process(_ c: BiquadCoefficients, _ memory: inout BiquadMemory,
                        input: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>, frames: Int) {
        let b0 = c.b0, b1 = c.b1, b2 = c.b2, a1 = c.a1, a2 = c.a2
        var x1 = memory.x1, x2 = memory.x2, y1 = memory.y1, y2 = memory.y2
        if let input {
            for f in 0..<frames {
                let x = input[f]
                let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = x
                y2 = y1; y1 = y
                output[f] = y
            }
        } else {
            for f in 0..<frames {
                let y = b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = 0
                y2 = y1; y1 = y
                output[f] = y
            }
        }
        memory = BiquadMemory(x1: x1, x2: x2, y1: y1, y2: y2).flushed
    }

    /// Filters two channels with the same coefficients as the two lanes of one vector: two
    /// independent recurrences per iteration keep the FPU busy while each waits on its own
    /// previous output (the loop is latency-bound, not throughput-bound). Each lane does the same
    /// operations in the same order as ``process(_:_:input:output:frames:)``, so each channel's
    /// result is bit-identical to filtering it alone.
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func processPair(_ c: BiquadCoefficients, _ a: inout BiquadMemory, _ b: inout BiquadMemory,
                            inputs: (UnsafePointer<Float>, UnsafePointer<Float>),
                            outputs: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>), frames: Int) {
        var x1 = SIMD2<Float>(a.x1, b.x1), x2 = SIMD2<Float>(a.x2, b.x2)
        var y1 = SIMD2<Float>(a.y1, b.y1), y2 = SIMD2<Float>(a.y2, b.y2)
        let vb0 = SIMD2<Float>(repeating: c.b0), vb1 = SIMD2<Float>(repeating: c.b1), vb2 = SIMD2<Float>(repeating: c.b2)
        let va1 = SIMD2<Float>(repeating: c.a1), va2 = SIMD2<Float>(repeating: c.a2)
        let srcA = inputs.0, srcB = inputs.1
        let dstA = outputs.0, dstB = outputs.1
        for f in 0..<frames {
            let x = SIMD2<Float>(srcA[f], srcB[f])
            let y = vb0 * x + vb1 * x1 + vb2 * x2 - va1 * y1 - va2 * y2
            x2 = x1; x1 = x; y2 = y1; y1 = y
            dstA[f] = y[0]
            dstB[f] = y[1]
        }
        a = BiquadMemory(x1: x1[0], x2: x2[0], y1: y1[0], y2: y2[0]).flushed
        b = BiquadMemory(x1: x1[1], x2: x2[1], y1: y1[1], y2: y2[1]).flushed
    }
}

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
    /// a2 = 1−α, all divided by a0. Computed in Double, stored as Float. The same as
    /// `design(.lowPass, frequency: cutoff, bandwidth: .q(q), gain: 0, sampleRate: sampleRate)`.
    /// - Parameters:
    ///   - cutoff: Hz; clamped to 10…0.49 × sampleRate, so the filter stays stable at the top.
    ///   - q: the quality factor, > 0 (1/√2 is Butterworth: −3.01 dB at the cutoff).
    ///   - sampleRate: Hz, > 0.
    /// - Thread: any; real-time safe (libm only).
    @_noLocks @inline(__always)
    static func lowPass(cutoff: Float, q: Double, sampleRate: Float) -> BiquadCoefficients {
        design(.lowPass, frequency: cutoff, bandwidth: .q(q), gain: 0, sampleRate: sampleRate)
    }

    /// Any RBJ cookbook design (``BiquadCoefficients64/design(_:frequency:bandwidth:gain:sampleRate:)``),
    /// rounded to Float.
    /// - Thread: any; real-time safe (libm only).
    @_noLocks @inline(__always)
    static func design(_ response: BiquadResponse, frequency: Float, bandwidth: BiquadBandwidth, gain: Double,
                       sampleRate: Float) -> BiquadCoefficients {
        BiquadCoefficients(BiquadCoefficients64.design(response, frequency: frequency, bandwidth: bandwidth, gain: gain,
                                                       sampleRate: sampleRate))
    }

    /// Each coefficient rounded to Float.
    @_noLocks @inline(__always)
    init(_ c: BiquadCoefficients64) {
        b0 = Float(c.b0); b1 = Float(c.b1); b2 = Float(c.b2); a1 = Float(c.a1); a2 = Float(c.a2)
    }

    /// Coefficients with these values.
    @_noLocks @inline(__always)
    init(b0: Float, b1: Float, b2: Float, a1: Float, a2: Float) {
        self.b0 = b0; self.b1 = b1; self.b2 = b2; self.a1 = a1; self.a2 = a2
    }
}

/// A biquad's coefficients in Double, normalized by a0, for the Float64 recursion
/// (``Biquad/process64(_:_:input:output:frames:)``). Float coefficients cannot place a pole
/// close to z = 1 (a shelf whose poles sit an octave or more below a low corner, or any filter
/// below about 1/5000 of the sample rate): 1 + a1 + a2, the distance that sets the response
/// near DC, falls below Float's resolution and rounds to zero, and the filter integrates. In
/// Double it is exact to 1e-16. Trivial.
struct BiquadCoefficients64: Equatable {
    var b0: Double, b1: Double, b2: Double, a1: Double, a2: Double

    /// Coefficients with these values.
    @_noLocks @inline(__always)
    init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0; self.b1 = b1; self.b2 = b2; self.a1 = a1; self.a2 = a2
    }

    /// Largest α a design uses: a bandwidth of many octaves near Nyquist makes the cookbook's α
    /// huge (w0/sin(w0) grows without bound there; 10 octaves at 0.49 × fs gives 1e73), a2 then
    /// rounds to −1 and a pole sits on the unit circle. At α = 1000 every response is already
    /// at its wide-band limit, with its poles inside the circle.
    static var maximumAlpha: Double { @_noLocks @inline(__always) get { 1000 } }

    /// Any RBJ Audio EQ Cookbook design (Robert Bristow-Johnson, "Cookbook formulae for audio EQ
    /// biquad filter coefficients"): w0 = 2π f/fs, A = 10^(gain/40), α from the bandwidth (see
    /// ``BiquadBandwidth``), then the response's b0, b1, b2, a0, a1, a2 as the cookbook lists
    /// them, all divided by a0, in Double.
    /// - Parameters:
    ///   - response: which cookbook filter.
    ///   - frequency: Hz — cutoff (low/high-pass), centre (band-pass, notch, all-pass, peaking)
    ///     or shelf midpoint (the frequency at half the shelf's gain in dB); clamped to
    ///     10…0.49 × sampleRate, so the filter stays stable at the top.
    ///   - bandwidth: Q or bandwidth in octaves, > 0; α is capped at ``maximumAlpha``.
    ///   - gain: dB, for peaking and shelves (ignored by the others); finite.
    ///   - sampleRate: Hz, > 0.
    /// - Thread: any; real-time safe (libm only).
    @_noLocks
    static func design(_ response: BiquadResponse, frequency: Float, bandwidth: BiquadBandwidth, gain: Double,
                       sampleRate: Float) -> BiquadCoefficients64 {
        let fs = Double(sampleRate)
        let f = min(max(Double(frequency), 10), 0.49 * fs)
        let w0 = 2 * Double.pi * f / fs
        let cosw = RealTime.cos(w0)
        let sinw = RealTime.sin(w0)
        var alpha: Double
        switch bandwidth {
        case .q(let q):
            alpha = sinw / (2 * q)
        case .octaves(let octaves):
            // α = sin(w0)·sinh(ln(2)/2 · BW · w0/sin(w0)), sinh through exp.
            let x = 0.34657359027997264 * octaves * w0 / sinw  // ln(2)/2
            alpha = sinw * (RealTime.exp(x) - RealTime.exp(-x)) / 2
        }
        alpha = min(alpha, maximumAlpha)
        switch response {
        case .lowPass:
            let a0 = 1 + alpha
            let b0 = (1 - cosw) / 2 / a0
            return BiquadCoefficients64(b0: b0, b1: (1 - cosw) / a0, b2: b0,
                                        a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
        case .highPass:
            let a0 = 1 + alpha
            let b0 = (1 + cosw) / 2 / a0
            return BiquadCoefficients64(b0: b0, b1: -(1 + cosw) / a0, b2: b0,
                                        a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
        case .bandPass:
            let a0 = 1 + alpha
            return BiquadCoefficients64(b0: alpha / a0, b1: 0, b2: -alpha / a0,
                                        a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
        case .notch:
            let a0 = 1 + alpha
            let a1 = -2 * cosw / a0
            return BiquadCoefficients64(b0: 1 / a0, b1: a1, b2: 1 / a0, a1: a1, a2: (1 - alpha) / a0)
        case .allPass:
            let a0 = 1 + alpha
            let a1 = -2 * cosw / a0
            return BiquadCoefficients64(b0: (1 - alpha) / a0, b1: a1, b2: 1, a1: a1, a2: (1 - alpha) / a0)
        case .peaking:
            let a = RealTime.pow(10, gain / 40)
            let a0 = 1 + alpha / a
            let a1 = -2 * cosw / a0
            return BiquadCoefficients64(b0: (1 + alpha * a) / a0, b1: a1, b2: (1 - alpha * a) / a0,
                                        a1: a1, a2: (1 - alpha / a) / a0)
        case .lowShelf:
            let a = RealTime.pow(10, gain / 40)
            let twoRootAAlpha = 2 * RealTime.pow(10, gain / 80) * alpha  // 2√A·α
            let a0 = (a + 1) + (a - 1) * cosw + twoRootAAlpha
            return BiquadCoefficients64(b0: a * ((a + 1) - (a - 1) * cosw + twoRootAAlpha) / a0,
                                        b1: 2 * a * ((a - 1) - (a + 1) * cosw) / a0,
                                        b2: a * ((a + 1) - (a - 1) * cosw - twoRootAAlpha) / a0,
                                        a1: -2 * ((a - 1) + (a + 1) * cosw) / a0,
                                        a2: ((a + 1) + (a - 1) * cosw - twoRootAAlpha) / a0)
        case .highShelf:
            let a = RealTime.pow(10, gain / 40)
            let twoRootAAlpha = 2 * RealTime.pow(10, gain / 80) * alpha  // 2√A·α
            let a0 = (a + 1) - (a - 1) * cosw + twoRootAAlpha
            return BiquadCoefficients64(b0: a * ((a + 1) + (a - 1) * cosw + twoRootAAlpha) / a0,
                                        b1: -2 * a * ((a - 1) + (a + 1) * cosw) / a0,
                                        b2: a * ((a + 1) + (a - 1) * cosw - twoRootAAlpha) / a0,
                                        a1: 2 * ((a - 1) - (a + 1) * cosw) / a0,
                                        a2: ((a + 1) - (a - 1) * cosw - twoRootAAlpha) / a0)
        }
    }
}

/// The RBJ Audio EQ Cookbook's filter types. Trivial.
enum BiquadResponse: UInt8 {
    /// Low-pass: 12 dB/octave above the cutoff.
    case lowPass
    /// High-pass: 12 dB/octave below the cutoff.
    case highPass
    /// Band-pass with a constant 0 dB peak gain at the centre.
    case bandPass
    /// Notch (band-stop): a zero on the unit circle at the centre.
    case notch
    /// All-pass: unity magnitude everywhere, 360° of phase turn around the centre.
    case allPass
    /// Peaking EQ: `gain` dB at the centre, 0 dB far from it.
    case peaking
    /// Low shelf: `gain` dB below the midpoint, 0 dB above.
    case lowShelf
    /// High shelf: `gain` dB above the midpoint, 0 dB below.
    case highShelf

    /// Whether `other` is the same response (`==` without the synthesized, unchecked call).
    @_noLocks @inline(__always)
    func isSame(as other: BiquadResponse) -> Bool { rawValue == other.rawValue }
}

/// How a cookbook design's width is given (the cookbook's α). Trivial.
enum BiquadBandwidth: Equatable {
    /// The quality factor Q > 0: α = sin(w0)/(2Q). For shelves Q = 1/√2 is the cookbook's shelf
    /// slope S = 1, the steepest slope without overshoot.
    case q(Double)
    /// Bandwidth in octaves > 0, between the −3 dB frequencies (band-pass, notch) or the
    /// half-gain frequencies in dB (peaking), measured on the digital filter:
    /// α = sin(w0)·sinh(ln(2)/2 · BW · w0/sin(w0)).
    case octaves(Double)
}

/// One channel's direct-form-I memory: the last two inputs and outputs. Direct form I keeps
/// the signal itself as state, so new coefficients continue from the same signal without the
/// transient that transposed forms show when coefficients change. Trivial; zero is silence.
struct BiquadMemory: Equatable {
    var x1: Float, x2: Float, y1: Float, y2: Float

    /// Silence (explicit initializers: kernels in other files may not call implicit ones under `@_noLocks`).
    @_noLocks @inline(__always)
    init() { x1 = 0; x2 = 0; y1 = 0; y2 = 0 }

    /// Memory holding these values.
    @_noLocks @inline(__always)
    init(x1: Float, x2: Float, y1: Float, y2: Float) {
        self.x1 = x1; self.x2 = x2; self.y1 = y1; self.y2 = y2
    }

    /// Denormals: a decaying recursive filter fed silence drifts into subnormal numbers, which
    /// many CPUs process tens of times slower, and can hang there. Memory below 1e-30
    /// (−600 dBFS) is set to exact zero, so silence in gives exact zeros out. Non-finite memory
    /// (NaN or ±Inf from a NaN/Inf input) is set to zero too, so a burst of them does not latch
    /// the filter: output is finite again from the first run after the input is.
    @_noLocks @inline(__always)
    static func flush(_ x: Float) -> Float { NonFinite.flush(x) }

    /// The memory with every value below 1e-30 in magnitude, and every NaN or ±Inf, set to exact zero.
    var flushed: BiquadMemory {
        @_noLocks @inline(__always) get {
            BiquadMemory(x1: Self.flush(x1), x2: Self.flush(x2), y1: Self.flush(y1), y2: Self.flush(y2))
        }
    }
}

/// One channel's direct-form-I memory for the Float64 recursion (``BiquadMemory``'s, in
/// Double). Trivial; zero is silence.
struct BiquadMemory64: Equatable {
    var x1: Double, x2: Double, y1: Double, y2: Double

    /// Silence.
    @_noLocks @inline(__always)
    init() { x1 = 0; x2 = 0; y1 = 0; y2 = 0 }

    /// Memory holding these values.
    @_noLocks @inline(__always)
    init(x1: Double, x2: Double, y1: Double, y2: Double) {
        self.x1 = x1; self.x2 = x2; self.y1 = y1; self.y2 = y2
    }

    /// The memory with every value below 1e-30 in magnitude, and every NaN or ±Inf, set to
    /// exact zero (see ``BiquadMemory/flush(_:)``).
    var flushed: BiquadMemory64 {
        @_noLocks @inline(__always) get {
            BiquadMemory64(x1: NonFinite.flush(x1), x2: NonFinite.flush(x2),
                           y1: NonFinite.flush(y1), y2: NonFinite.flush(y2))
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

    /// ``process(_:_:input:output:frames:)`` with the recursion in Double: samples are read as
    /// Float, filtered with Double coefficients and memory, and written as Float. Poles close to
    /// z = 1 stay where the design put them (see ``BiquadCoefficients64``). Outputs below 1e-30
    /// in magnitude are written as exact zeros (a fast decay within one run would otherwise
    /// round to subnormal Floats).
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func process64(_ c: BiquadCoefficients64, _ memory: inout BiquadMemory64,
                          input: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>, frames: Int) {
        let b0 = c.b0, b1 = c.b1, b2 = c.b2, a1 = c.a1, a2 = c.a2
        var x1 = memory.x1, x2 = memory.x2, y1 = memory.y1, y2 = memory.y2
        if let input {
            for f in 0..<frames {
                let x = Double(input[f])
                let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = x
                y2 = y1; y1 = y
                output[f] = abs(y) < 1e-30 ? 0 : Float(y)
            }
        } else {
            for f in 0..<frames {
                let y = b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = 0
                y2 = y1; y1 = y
                output[f] = abs(y) < 1e-30 ? 0 : Float(y)
            }
        }
        memory = BiquadMemory64(x1: x1, x2: x2, y1: y1, y2: y2).flushed
    }

    /// ``processPair(_:_:_:inputs:outputs:frames:)`` with the recursion in Double: two
    /// independent recurrences per iteration, written as two scalar chains (the compiler keeps
    /// them in registers side by side; `SIMD2<Double>` measured 1.8× slower here, its lanes
    /// packed and unpacked around every Float load and store). Each channel is bit-identical to
    /// ``process64(_:_:input:output:frames:)``.
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func processPair64(_ c: BiquadCoefficients64, _ a: inout BiquadMemory64, _ b: inout BiquadMemory64,
                              inputs: (UnsafePointer<Float>, UnsafePointer<Float>),
                              outputs: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>), frames: Int) {
        let b0 = c.b0, b1 = c.b1, b2 = c.b2, a1 = c.a1, a2 = c.a2
        var ax1 = a.x1, ax2 = a.x2, ay1 = a.y1, ay2 = a.y2
        var bx1 = b.x1, bx2 = b.x2, by1 = b.y1, by2 = b.y2
        let srcA = inputs.0, srcB = inputs.1
        let dstA = outputs.0, dstB = outputs.1
        for f in 0..<frames {
            let xa = Double(srcA[f]), xb = Double(srcB[f])
            let ya = b0 * xa + b1 * ax1 + b2 * ax2 - a1 * ay1 - a2 * ay2
            let yb = b0 * xb + b1 * bx1 + b2 * bx2 - a1 * by1 - a2 * by2
            ax2 = ax1; ax1 = xa; ay2 = ay1; ay1 = ya
            bx2 = bx1; bx1 = xb; by2 = by1; by1 = yb
            dstA[f] = abs(ya) < 1e-30 ? 0 : Float(ya)
            dstB[f] = abs(yb) < 1e-30 ? 0 : Float(yb)
        }
        a = BiquadMemory64(x1: ax1, x2: ax2, y1: ay1, y2: ay2).flushed
        b = BiquadMemory64(x1: bx1, x2: bx2, y1: by1, y2: by2).flushed
    }
}

// Tests, DSP: an independent RBJ Audio EQ Cookbook in Double (written from the cookbook's text, not from the engine's code) and frequency responses measured from impulse responses.
import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The cookbook's filters, computed the way its text lists them, in Double.
enum Cookbook {
    enum Filter: String, CaseIterable { case lpf, hpf, bpf, notch, apf, peakingEQ, lowShelf, highShelf }

    /// How α is given: Q, or BW in octaves (digital, with the w0/sin(w0) correction).
    enum Width { case q(Double), octaves(Double) }

    /// (b0, b1, b2) and (a0, a1, a2), not normalized.
    static func coefficients(_ filter: Filter, f0: Double, fs: Double, width: Width, dBgain: Double = 0) -> (b: [Double], a: [Double]) {
        let A = pow(10, dBgain / 40)
        let w0 = 2 * Double.pi * f0 / fs
        let alpha: Double
        switch width {
        case .q(let q): alpha = sin(w0) / (2 * q)
        case .octaves(let bw): alpha = sin(w0) * sinh(log(2) / 2 * bw * w0 / sin(w0))
        }
        let c = cos(w0)
        switch filter {
        case .lpf: return ([(1 - c) / 2, 1 - c, (1 - c) / 2], [1 + alpha, -2 * c, 1 - alpha])
        case .hpf: return ([(1 + c) / 2, -(1 + c), (1 + c) / 2], [1 + alpha, -2 * c, 1 - alpha])
        case .bpf: return ([alpha, 0, -alpha], [1 + alpha, -2 * c, 1 - alpha])
        case .notch: return ([1, -2 * c, 1], [1 + alpha, -2 * c, 1 - alpha])
        case .apf: return ([1 - alpha, -2 * c, 1 + alpha], [1 + alpha, -2 * c, 1 - alpha])
        case .peakingEQ: return ([1 + alpha * A, -2 * c, 1 - alpha * A], [1 + alpha / A, -2 * c, 1 - alpha / A])
        case .lowShelf:
            let r = 2 * sqrt(A) * alpha
            return ([A * ((A + 1) - (A - 1) * c + r), 2 * A * ((A - 1) - (A + 1) * c), A * ((A + 1) - (A - 1) * c - r)],
                    [(A + 1) + (A - 1) * c + r, -2 * ((A - 1) + (A + 1) * c), (A + 1) + (A - 1) * c - r])
        case .highShelf:
            let r = 2 * sqrt(A) * alpha
            return ([A * ((A + 1) + (A - 1) * c + r), -2 * A * ((A - 1) + (A + 1) * c), A * ((A + 1) + (A - 1) * c - r)],
                    [(A + 1) - (A - 1) * c + r, 2 * ((A - 1) - (A + 1) * c), (A + 1) - (A - 1) * c - r])
        }
    }

    /// H(e^jw) at `f` Hz, as (re, im).
    static func response(_ c: (b: [Double], a: [Double]), at f: Double, fs: Double) -> (re: Double, im: Double) {
        let w = 2 * Double.pi * f / fs
        func poly(_ k: [Double]) -> (Double, Double) {
            (k[0] + k[1] * cos(w) + k[2] * cos(2 * w), -(k[1] * sin(w) + k[2] * sin(2 * w)))
        }
        let (nr, ni) = poly(c.b), (dr, di) = poly(c.a)
        let d = dr * dr + di * di
        return ((nr * dr + ni * di) / d, (ni * dr - nr * di) / d)
    }

    /// |H| in dB at `f` Hz.
    static func magnitudeDB(_ c: (b: [Double], a: [Double]), at f: Double, fs: Double) -> Double {
        let h = response(c, at: f, fs: fs)
        return 10 * log10(h.re * h.re + h.im * h.im)
    }
}

/// 20 test frequencies, log-spaced from 20 Hz to 20 kHz.
let twentyFrequencies: [Double] = (0..<20).map { 20 * pow(1000, Double($0) / 19) }

/// The DFT of an impulse response at `f` Hz (exact frequency, any f), as (re, im).
func spectrum(_ h: [Float], at f: Double, fs: Double) -> (re: Double, im: Double) {
    let w = 2 * Double.pi * f / fs
    var re = 0.0, im = 0.0
    // Rotate a phasor instead of calling cos/sin per sample; renormalized now and then.
    var cr = 1.0, ci = 0.0
    let sr = cos(w), si = -sin(w)
    for (n, x) in h.enumerated() {
        re += Double(x) * cr
        im += Double(x) * ci
        (cr, ci) = (cr * sr - ci * si, cr * si + ci * sr)
        if n & 1023 == 1023 { let m = (cr * cr + ci * ci).squareRoot(); cr /= m; ci /= m }
    }
    return (re, im)
}

/// |DFT| of an impulse response in dB at `f` Hz.
func measuredDB(_ h: [Float], at f: Double, fs: Double) -> Double {
    let s = spectrum(h, at: f, fs: fs)
    return 10 * log10(s.re * s.re + s.im * s.im)
}

/// The impulse response of `unit` (mono, in a graph: IO → unit → IO), `frames` long.
func impulseResponse(of unit: AudioUnit, frames: Int = 1 << 17, sampleRate: Double = 48_000) throws -> [Float] {
    let chain = try Chain([unit], channels: 1, sampleRate: sampleRate)
    var impulse = [Float](repeating: 0, count: frames)
    impulse[0] = 1
    return try chain.render([impulse], slice: 256)[0]
}

/// The largest |dB difference| between a measured impulse response and an analytic response
/// over ``twentyFrequencies`` (frequencies above Nyquist skipped), and where.
func worstDeviation(_ h: [Float], _ analytic: (Double) -> Double, fs: Double = 48_000) -> (dB: Double, at: Double) {
    var worst = (dB: 0.0, at: 0.0)
    for f in twentyFrequencies where f < fs / 2 {
        let d = abs(measuredDB(h, at: f, fs: fs) - analytic(f))
        if d > worst.dB { worst = (d, f) }
    }
    return worst
}

/// How click-like a signal is: over 240-frame blocks, the largest second difference
/// (curvature) divided by the block's largest magnitude, worst block. A sine of f Hz scores
/// (2π f/fs)² (0.0171 at 1 kHz, 48 kHz) whatever its level or how smoothly its level moves;
/// a step or kink scores far more.
func clickiness(_ x: ArraySlice<Float>) -> Float {
    var worst: Float = 0
    var start = x.startIndex + 2
    while start + 240 <= x.endIndex {
        var curvature: Float = 0, peak: Float = 0
        for i in start..<(start + 240) {
            curvature = max(curvature, abs(x[i] - 2 * x[i - 1] + x[i - 2]))
            peak = max(peak, abs(x[i]))
        }
        worst = max(worst, curvature / max(peak, 1e-9))
        start += 240
    }
    return worst
}

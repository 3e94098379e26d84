// DSP: dynamics — the compressor/expander's static curve (a gain computer with soft knees) and its smooth branching peak detector.

/// The static curve of a compressor/expander in dB: the gain a steady level receives. Trivial.
///
/// The gain computer of Giannoulis, Massberg and Reiss, "Digital Dynamic Range Compressor
/// Design — A Tutorial and Analysis" (JAES 60(6), 2012), eq. 4 (a compressor with a soft knee of
/// width W), with a downward expander below a second threshold built the same way. For a level
/// x (dBFS) the gain G(x) (dB, ≤ 0) is the sum of two parts:
///
/// - compression above `threshold` T with ratio R (slope 1/R above the knee):
///   0 for 2(x − T) < −W; (1/R − 1)(x − T + W/2)² / (2W) for 2|x − T| ≤ W; (1/R − 1)(x − T) above.
/// - expansion below `expansionThreshold` E with ratio Rₑ (slope Rₑ below the knee):
///   0 for 2(x − E) > W; −(Rₑ − 1)(x − E − W/2)² / (2W) for 2|x − E| ≤ W; (Rₑ − 1)(x − E) below.
///
/// Each knee joins its two lines with a parabola tangent to both, so the curve and its slope are
/// continuous. AUDynamicsProcessor's headroom model sets R: a 0 dBFS level comes out at
/// T + H dBFS (H = headroom), so R = −T / H, and at least 1 (no compression when T ≥ −H). This
/// holds exactly when the compressor's knee ends below 0 dBFS (T ≤ −W/2).
struct DynamicsCurve: Equatable {
    /// Compression threshold T, dBFS.
    var threshold: Float
    /// Compression ratio R ≥ 1 (1 = none).
    var ratio: Float
    /// Expansion threshold E, dBFS.
    var expansionThreshold: Float
    /// Expansion ratio Rₑ ≥ 1 (1 = none).
    var expansionRatio: Float
    /// Knee width W, dB, > 0.
    var knee: Float

    /// A curve (an explicit initializer: kernels in other files may not call an implicit one
    /// under `@_noLocks`).
    @_noLocks @inline(__always)
    init(threshold: Float, ratio: Float, expansionThreshold: Float, expansionRatio: Float, knee: Float) {
        self.threshold = threshold
        self.ratio = ratio
        self.expansionThreshold = expansionThreshold
        self.expansionRatio = expansionRatio
        self.knee = knee
    }

    /// The curve AUDynamicsProcessor's parameters describe: R = max(1, −threshold / headroom).
    /// - Parameters: threshold: dBFS; headroom: dB, > 0; expansionThreshold: dBFS;
    ///   expansionRatio: ≥ 1; knee: dB, > 0.
    @_noLocks @inline(__always)
    static func headroom(threshold: Float, headroom: Float, expansionThreshold: Float, expansionRatio: Float,
                         knee: Float) -> DynamicsCurve {
        DynamicsCurve(threshold: threshold, ratio: max(1, -threshold / max(headroom, 1e-6)),
                      expansionThreshold: expansionThreshold, expansionRatio: max(1, expansionRatio), knee: knee)
    }

    /// G(x): the curve's gain in dB (≤ 0) for a level of `x` dBFS (finite).
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    func gain(_ x: Float) -> Float {
        let w = knee, half = knee / 2
        var g: Float = 0
        let overT = x - threshold
        if overT > half {
            g = (1 / ratio - 1) * overT
        } else if overT >= -half {
            let d = overT + half
            g = (1 / ratio - 1) * d * d / (2 * w)
        }
        let overE = x - expansionThreshold
        if overE < -half {
            g += (expansionRatio - 1) * overE
        } else if overE <= half {
            let d = overE - half
            g -= (expansionRatio - 1) * d * d / (2 * w)
        }
        return g
    }

    /// The levels (dBFS) between which the curve is exactly 0 dB: from the expander's knee top
    /// (E + W/2) to the compressor's knee foot (T − W/2). Empty (low > high) when they overlap.
    var unityRange: (low: Float, high: Float) {
        @_noLocks @inline(__always) get { (expansionThreshold + knee / 2, threshold - knee / 2) }
    }
}

/// The smooth branching peak detector of Giannoulis, Massberg and Reiss (2012), eq. 17, on the
/// rectified signal: y[n] = α_A·y[n−1] + (1 − α_A)·x[n] while x[n] > y[n−1] (attack), else
/// α_R·y[n−1] + (1 − α_R)·x[n] (release), with α = e^(−1/(τ·fs)): a step in x is followed to
/// 1 − 1/e of its size in τ. Here x is a frame's largest |sample| over the channels (linked
/// detection: every channel gets the same gain, so a stereo image stays put).
enum PeakDetector {
    /// The coefficient α = e^(−1/(τ·fs)) of a time constant.
    /// - Parameters: seconds: τ, > 0; sampleRate: Hz, > 0.
    /// - Thread: any; real-time safe (libm only).
    @_noLocks @inline(__always)
    static func coefficient(seconds: Float, sampleRate: Float) -> Float {
        Float(RealTime.exp(-1 / (Double(seconds) * Double(sampleRate))))
    }

    /// One step of the detector: the new envelope for the previous `envelope` and the rectified
    /// input `x` (≥ 0).
    @_noLocks @inline(__always)
    static func step(_ envelope: Float, _ x: Float, attack: Float, release: Float) -> Float {
        let a = x > envelope ? attack : release
        return a * envelope + (1 - a) * x
    }
}

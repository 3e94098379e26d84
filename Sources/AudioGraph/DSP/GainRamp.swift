// DSP: gains that change without clicks — a linear ramp across a piece, a fixed-rate ramp toward a target, the balance pan law.

/// Gain stages whose gain moves linearly across one run of frames: the usual de-zippering of
/// a gain change (it lands exactly on the new gain at the run's last frame).
enum LinearGain {
    /// `dst[f] = (first ? 0 : dst[f]) + src[f] × g[f]` for `f` in `0..<frames`, with
    /// `g[f] = g0 + (g1 − g0)·(f + 1)/frames` (constant `g1` when `g0 == g1`). At unity gain
    /// with `first` the samples are copied bit for bit.
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func accumulate(_ src: UnsafeMutablePointer<Float>, into dst: UnsafeMutablePointer<Float>, frames: Int,
                           from g0: Float, to g1: Float, first: Bool) {
        if g0 == g1 {
            if first {
                if g1 == 1 { copy(src, to: dst, frames: frames) } else { for f in 0..<frames { dst[f] = src[f] * g1 } }
            } else {
                for f in 0..<frames { dst[f] += src[f] * g1 }
            }
            return
        }
        let step = (g1 - g0) / Float(max(frames, 1))
        if first { for f in 0..<frames { dst[f] = src[f] * (g0 + step * Float(f + 1)) } }
        else { for f in 0..<frames { dst[f] += src[f] * (g0 + step * Float(f + 1)) } }
    }

    /// `buffer[f] ×= g[f]`, `g` ramping as in ``accumulate(_:into:frames:from:to:first:)``.
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func scale(_ buffer: UnsafeMutablePointer<Float>, frames: Int, from g0: Float, to g1: Float) {
        if g0 == g1 { for f in 0..<frames { buffer[f] *= g1 }; return }
        let step = (g1 - g0) / Float(max(frames, 1))
        for f in 0..<frames { buffer[f] *= g0 + step * Float(f + 1) }
    }

    /// The balance pan law on a stereo output, unity at the centre: left gain =
    /// volume × min(1, 1 − pan), right gain = volume × min(1, 1 + pan). Returns (volume, volume)
    /// when `stereo` is false (pan is ignored).
    /// - Parameters: volume: linear gain; pan: −1 (left) … 1 (right).
    @_noLocks @inline(__always)
    static func balance(volume: Float, pan: Float, stereo: Bool) -> (left: Float, right: Float) {
        guard stereo else { return (volume, volume) }
        return (volume * min(1, 1 - pan), volume * min(1, 1 + pan))
    }
}

/// A gain that moves toward a target by a fixed step per frame, then holds it: a gate's fade.
enum GainRamp {
    /// `output[f] = input[f] × g[f]` for `f` in `0..<frames`, where `g` starts at `gain` and
    /// moves by `increment` per frame toward `target` (never past it). Returns the gain after
    /// the last frame. `input` and `output` may be the same buffer.
    /// - Parameters: increment: > 0, the change per frame (1 / ramp frames for a full 0 ↔ 1 fade).
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func apply(from gain: Float, toward target: Float, increment: Float,
                      input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, frames: Int) -> Float {
        var g = gain
        for f in 0..<frames {
            g = g < target ? min(target, g + increment) : max(target, g - increment)
            output[f] = input[f] * g
        }
        return g
    }
}

// DSP: delay lines — a power-of-two ring of past frames per channel, read at a gliding fractional delay (with feedback through a low-pass) or at a whole number of frames.

/// How one run of a feedback delay moves: each value goes linearly from its `…0` to its `…1`
/// across the run (reaching `…1` on the run's last frame; constant when the two are equal).
/// Trivial.
struct FeedbackDelayRun {
    /// Delay in frames, ≥ 1 and ≤ the line's capacity − 2.
    var delay0: Double, delay1: Double
    /// Fraction of the low-passed delayed signal fed back, −1 < feedback < 1.
    var feedback0: Float, feedback1: Float
    /// Gains of the input (dry) and the delayed signal (wet) in the output.
    var dry0: Float, dry1: Float
    var wet0: Float, wet1: Float

    /// A run (explicit, for `@_noLocks` callers in other files).
    @_noLocks @inline(__always)
    init(delay0: Double, delay1: Double, feedback0: Float, feedback1: Float, dry0: Float, dry1: Float, wet0: Float, wet1: Float) {
        self.delay0 = delay0; self.delay1 = delay1
        self.feedback0 = feedback0; self.feedback1 = feedback1
        self.dry0 = dry0; self.dry1 = dry1
        self.wet0 = wet0; self.wet1 = wet1
    }
}

/// Delay lines over `[frame]` buffers. A line is a ring of `capacity` floats (a power of two,
/// so positions wrap with a mask); frame `write` is the next one written. Every call
/// processes one channel's run of frames; the caller advances `write` by the run's length
/// once for all its channels.
enum DelayLine {
    /// The ring length for delays of up to `maximumDelay` frames: the next power of two that
    /// also holds the interpolation's extra frame and the frame being written.
    /// - Thread: any; real-time safe.
    @_noLocks
    static func capacity(maximumDelay: Int) -> Int {
        var capacity = 1
        while capacity < maximumDelay + 2 { capacity <<= 1 }
        return capacity
    }

    /// A feedback delay (a feedback comb filter with a low-pass in its loop) over one channel:
    /// for each frame, `delayed` is the line read `delay` frames back, linearly interpolated
    /// between its two neighbouring frames (exact at whole frames); the line receives
    /// `input + feedback × lowPass(delayed)` (values below 1e-30 in magnitude, and NaN or ±Inf, as exact zero,
    /// so a decaying loop never lingers in subnormal numbers nor keeps a NaN); the output is
    /// `dry × input + wet × delayed`. So an impulse comes out after `delay` frames, and each
    /// repeat is the previous one through the low-pass, times `feedback`.
    /// - Parameters:
    ///   - line: the channel's ring, `mask + 1` floats.
    ///   - write: the ring position of this run's first frame.
    ///   - input: `[frame]` source, or nil for silence.
    ///   - output: `[frame]` destination (may be `input`).
    ///   - run: how delay, feedback and gains move across the run.
    ///   - lowPass: the loop's filter, run in Double (its DC gain is exactly 1, so the loop's
    ///     gain never exceeds |feedback|); `memory` is its direct-form-I memory, left where the run ends.
    /// - Thread: render thread; real-time safe.
    @_noLocks
    static func feedback(line: UnsafeMutablePointer<Float>, mask: Int, write: Int,
                         input: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>, frames: Int,
                         run: FeedbackDelayRun, lowPass: BiquadCoefficients64, memory: inout BiquadMemory64) {
        let b0 = lowPass.b0, b1 = lowPass.b1, b2 = lowPass.b2, a1 = lowPass.a1, a2 = lowPass.a2
        var x1 = memory.x1, x2 = memory.x2, y1 = memory.y1, y2 = memory.y2
        var w = write
        if run.delay0 == run.delay1 && run.feedback0 == run.feedback1 && run.dry0 == run.dry1 && run.wet0 == run.wet1,
           let input {
            // Steady: one whole/fraction split and one set of gains for the run.
            let whole = Int(run.delay0), fraction = Float(run.delay0 - Double(whole))
            let feedback = run.feedback0, dry = run.dry0, wet = run.wet0
            for f in 0..<frames {
                let x = input[f]
                let r = (w &- whole) & mask
                let near = line[r], far = line[(r &- 1) & mask]
                let delayed = near + fraction * (far - near)
                let d = Double(delayed)
                let y = b0 * d + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = d; y2 = y1; y1 = y
                let v = x + feedback * Float(y)
                line[w] = NonFinite.flush(v)
                output[f] = dry * x + wet * delayed
                w = (w &+ 1) & mask
            }
        } else {
            let n = Double(max(frames, 1)), m = Float(max(frames, 1))
            let delayStep = (run.delay1 - run.delay0) / n
            let feedbackStep = (run.feedback1 - run.feedback0) / m
            let dryStep = (run.dry1 - run.dry0) / m, wetStep = (run.wet1 - run.wet0) / m
            for f in 0..<frames {
                var x: Float = 0
                if let input { x = input[f] }
                let last = f == frames - 1
                let delay = last ? run.delay1 : run.delay0 + delayStep * Double(f + 1)
                let feedback = last ? run.feedback1 : run.feedback0 + feedbackStep * Float(f + 1)
                let dry = last ? run.dry1 : run.dry0 + dryStep * Float(f + 1)
                let wet = last ? run.wet1 : run.wet0 + wetStep * Float(f + 1)
                let whole = Int(delay), fraction = Float(delay - Double(whole))
                let r = (w &- whole) & mask
                let near = line[r], far = line[(r &- 1) & mask]
                let delayed = near + fraction * (far - near)
                let d = Double(delayed)
                let y = b0 * d + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                x2 = x1; x1 = d; y2 = y1; y1 = y
                let v = x + feedback * Float(y)
                line[w] = NonFinite.flush(v)
                output[f] = dry * x + wet * delayed
                w = (w &+ 1) & mask
            }
        }
        memory = BiquadMemory64(x1: x1, x2: x2, y1: y1, y2: y2).flushed
    }

    /// A whole-frame delay over one channel: the run is written into the line, then
    /// `output[f]` = the frame `delay` frames before input frame `f` — bit for bit, silence
    /// before the line has been filled. Copies (no arithmetic).
    /// - Parameters:
    ///   - line: the channel's ring, `mask + 1` floats.
    ///   - write: the ring position of this run's first frame.
    ///   - input: `[frame]` source, or nil for silence.
    ///   - output: `[frame]` destination, not `input`.
    ///   - delay: frames, 0…mask − frames + 1 (the run must not overwrite what it reads).
    /// - Thread: render thread; real-time safe.
    @_noLocks
    static func whole(line: UnsafeMutablePointer<Float>, mask: Int, write: Int,
                      input: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>, frames: Int, delay: Int) {
        ringWrite(line, mask: mask, at: write, from: input, frames: frames)
        ringRead(line, mask: mask, at: (write &- delay) & mask, into: output, frames: frames)
    }

    /// A crossfade between two whole-frame delays over one channel: the run is written into
    /// the line, then `output[f] = (1 − g)·line[from] + g·line[to]`, g moving from `fade0` by
    /// `increment` per frame (never past 1). Returns g after the run.
    /// - Thread: render thread; real-time safe.
    @_noLocks
    static func crossfade(line: UnsafeMutablePointer<Float>, mask: Int, write: Int,
                          input: UnsafePointer<Float>?, output: UnsafeMutablePointer<Float>, frames: Int,
                          from: Int, to: Int, fade0: Float, increment: Float) -> Float {
        ringWrite(line, mask: mask, at: write, from: input, frames: frames)
        var g = fade0
        for f in 0..<frames {
            g = min(1, g + increment)
            let a = line[(write &+ f &- from) & mask], b = line[(write &+ f &- to) & mask]
            output[f] = (1 - g) * a + g * b
        }
        return g
    }

    /// Copies `frames` frames (or zeros) into the ring at `position`, wrapping.
    @_noLocks @inline(__always)
    static func ringWrite(_ line: UnsafeMutablePointer<Float>, mask: Int, at position: Int, from input: UnsafePointer<Float>?, frames: Int) {
        let first = min(frames, mask + 1 - position)
        if let input {
            copy(UnsafeMutablePointer(mutating: input), to: line + position, frames: first)
            if first < frames { copy(UnsafeMutablePointer(mutating: input + first), to: line, frames: frames - first) }
        } else {
            (line + position).update(repeating: 0, count: first)
            if first < frames { line.update(repeating: 0, count: frames - first) }
        }
    }

    /// Copies `frames` frames out of the ring from `position`, wrapping.
    @_noLocks @inline(__always)
    static func ringRead(_ line: UnsafeMutablePointer<Float>, mask: Int, at position: Int, into output: UnsafeMutablePointer<Float>, frames: Int) {
        let first = min(frames, mask + 1 - position)
        copy(line + position, to: output, frames: first)
        if first < frames { copy(line, to: output + first, frames: frames - first) }
    }
}

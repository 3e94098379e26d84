// DSP: the look-ahead peak limiter — a delay line, a sliding minimum of the gains each frame needs, a moving average, a release smoother.

/// A look-ahead peak limiter's state, followed in memory by its rings (see ``byteCount(channels:capacity:)``).
/// Trivial; made usable by ``reset(_:lookAhead:attack:)``.
///
/// The algorithm (the "hold then average" look-ahead limiter; e.g. Geraint Luff, "Designing a
/// straightforward limiter", Signalsmith Audio 2022, and the look-ahead discussion in Giannoulis,
/// Massberg and Reiss, JAES 2012): for every input frame n (after the pre-gain) the gain it needs
/// is r[n] = min(1, c / max over channels |x[n]|), c the ceiling. The audio is delayed by D frames
/// (the look-ahead, the latency). The gain for the frame leaving the delay is the average over A
/// frames (the attack) of a sliding minimum over A frames of r, taken A − 1 frames ahead of it:
/// every term of that average covers the leaving frame, so the gain is at most what that frame
/// needs, and a peak is approached by a straight ramp A frames long and left by one as long. A
/// one-pole smoother then slows the recovery (time constant: the decay time) and never the
/// reduction. Last, the gain is capped at what the leaving frame needs under the ceiling in
/// force now (only rounding, or a ceiling or attack just changed, make this bite), so no sample on
/// the sample grid ever exceeds the ceiling. Inter-sample (true) peaks may: by 0.44 dB on the
/// tests' speech raised 20 dB (4× oversampled), more for content near the Nyquist frequency.
///
/// The sliding minimum is a monotonic deque (Lemire, "Streaming maximum-minimum filter using no
/// more than three comparisons per element", 2006): amortized O(1) per frame.
struct LookAheadLimiterState {
    /// Ring length in frames, a power of two ≥ 2 × look-ahead + 2.
    var capacity: Int
    /// Channels the audio ring holds.
    var channels: Int
    /// D: frames the audio is delayed, 1…(capacity − 2) / 2.
    var lookAhead: Int
    /// A: frames of the attack ramp, 1…D.
    var attack: Int
    /// Frames written so far: the index of the next input frame.
    var position: Int
    /// Sum of the last A window minima (the moving average's numerator).
    var sum: Double
    /// How many of the last A window minima are below 1. At 0 the sum is set back to exactly A,
    /// so rounding never accumulates and a recovered limiter passes audio bit for bit.
    var reduced: Int
    /// The smoothed gain reduction, 1 − gain, 0…1: kept as the reduction (not the gain) so its
    /// recovery converges to exactly 0 instead of stalling a few ulps below unity gain in Float.
    var reduction: Float
    /// Deque of window minima: positions of its first and one-past-last entries.
    var head: Int
    var tail: Int

    /// Bytes for a limiter of `channels` channels and rings of `capacity` frames.
    static func byteCount(channels: Int, capacity: Int) -> Int {
        MemoryLayout<LookAheadLimiterState>.stride + capacity * (channels + 4) * MemoryLayout<Float>.stride
            + capacity * MemoryLayout<Int>.stride
    }

    /// The smallest power of two that holds a look-ahead of `lookAhead` frames.
    static func capacity(lookAhead: Int) -> Int {
        var n = 16
        while n < 2 * lookAhead + 2 { n *= 2 }
        return n
    }

    /// `[channel][capacity]` delayed audio.
    @_noLocks @inline(__always)
    static func audio(_ s: UnsafeMutablePointer<LookAheadLimiterState>) -> UnsafeMutablePointer<Float> {
        UnsafeMutableRawPointer(s + 1).assumingMemoryBound(to: Float.self)
    }
    /// `[capacity]` the gain each input frame needs, r[n].
    @_noLocks @inline(__always)
    static func needed(_ s: UnsafeMutablePointer<LookAheadLimiterState>) -> UnsafeMutablePointer<Float> {
        audio(s) + s.pointee.channels * s.pointee.capacity
    }
    /// `[capacity]` the window minima the average sums, by frame.
    @_noLocks @inline(__always)
    static func minima(_ s: UnsafeMutablePointer<LookAheadLimiterState>) -> UnsafeMutablePointer<Float> {
        needed(s) + s.pointee.capacity
    }
    /// `[capacity]` the deque's values.
    @_noLocks @inline(__always)
    static func dequeValues(_ s: UnsafeMutablePointer<LookAheadLimiterState>) -> UnsafeMutablePointer<Float> {
        minima(s) + s.pointee.capacity
    }
    /// `[capacity]` the deque's frame indices.
    @_noLocks @inline(__always)
    static func dequeFrames(_ s: UnsafeMutablePointer<LookAheadLimiterState>) -> UnsafeMutablePointer<Int> {
        UnsafeMutableRawPointer(dequeValues(s) + s.pointee.capacity).assumingMemoryBound(to: Int.self)
    }
}

/// Runs a ``LookAheadLimiterState``.
enum LookAheadLimiter {
    /// Clears the limiter: silence in the delay line, unity gain everywhere.
    /// - Parameters: lookAhead: D, 1…(capacity − 2) / 2 (clamped); attack: A, 1…D (clamped).
    /// - Thread: whoever owns the state; real-time safe (writes the rings once).
    @_noLocks
    static func reset(_ s: UnsafeMutablePointer<LookAheadLimiterState>, lookAhead: Int, attack: Int) {
        let capacity = s.pointee.capacity
        let d = max(1, min(lookAhead, (capacity - 2) / 2))
        s.pointee.lookAhead = d
        s.pointee.attack = max(1, min(attack, d))
        s.pointee.position = 0
        s.pointee.reduction = 0
        LookAheadLimiterState.audio(s).update(repeating: 0, count: capacity * s.pointee.channels)
        LookAheadLimiterState.needed(s).update(repeating: 1, count: capacity)
        LookAheadLimiterState.minima(s).update(repeating: 1, count: capacity)
        s.pointee.sum = Double(s.pointee.attack)
        s.pointee.reduced = 0
        s.pointee.head = 0
        s.pointee.tail = 0
        rebuildWindow(s)
    }

    /// A new attack length A (clamped to 1…D): the deque is rebuilt for the new window, and the
    /// average's history is filled with the least gain any of its frames may need under the new
    /// window (at most what the exact history would hold, so the ceiling still holds; at most a
    /// brief extra dip near a recent peak).
    /// - Thread: whoever owns the state; real-time safe (O(A)).
    @_noLocks
    static func setAttack(_ s: UnsafeMutablePointer<LookAheadLimiterState>, _ attack: Int) {
        let a = max(1, min(attack, s.pointee.lookAhead))
        if a == s.pointee.attack { return }
        s.pointee.attack = a
        let mask = s.pointee.capacity - 1
        let needed = LookAheadLimiterState.needed(s), minima = LookAheadLimiterState.minima(s)
        let n = s.pointee.position, d = s.pointee.lookAhead
        // The frames the next A averaged minima (frames n − A … n − 1) cover: n − A − D … n − D + A − 2.
        var least: Float = 1
        var i = n - a - d
        while i <= n - d + a - 2 {
            least = min(least, needed[i & mask])
            i += 1
        }
        for j in (n - a)..<n { minima[j & mask] = least }
        s.pointee.sum = Double(least) * Double(a)
        s.pointee.reduced = least < 1 ? a : 0
        rebuildWindow(s)
    }

    /// The deque for the window that ends A − 1 frames ahead of the next leaving frame.
    @_noLocks
    static func rebuildWindow(_ s: UnsafeMutablePointer<LookAheadLimiterState>) {
        s.pointee.head = 0
        s.pointee.tail = 0
        let n = s.pointee.position, d = s.pointee.lookAhead, a = s.pointee.attack
        let last = n - 1 - d + a - 1
        var q = last - a + 1
        while q <= last {
            push(s, frame: q)
            q += 1
        }
    }

    /// Adds r[frame] to the back of the deque (dropping larger values it makes useless).
    @_noLocks @inline(__always)
    static func push(_ s: UnsafeMutablePointer<LookAheadLimiterState>, frame: Int) {
        let mask = s.pointee.capacity - 1
        let values = LookAheadLimiterState.dequeValues(s), frames = LookAheadLimiterState.dequeFrames(s)
        let v = LookAheadLimiterState.needed(s)[frame & mask]
        var tail = s.pointee.tail
        while tail > s.pointee.head && values[(tail - 1) & mask] >= v { tail -= 1 }
        values[tail & mask] = v
        frames[tail & mask] = frame
        s.pointee.tail = tail + 1
    }

    /// Limits `frames` frames of every channel of the state: `output[c][f]` is `input[c][f]` × a
    /// gain ramping from `gain0` to `gain1` (the pre-gain, linear), delayed by D frames, times the
    /// limiter's gain; the ceiling (linear, > 0) ramps from `ceiling0` to `ceiling1` across the
    /// run. A nil `input`, and channels past `inputChannels`, are silence.
    /// - Parameters: release: the smoother's coefficient e^(−1/(decay × fs)), 0…1.
    /// - Thread: render thread; real-time safe.
    @_noLocks
    static func process(_ s: UnsafeMutablePointer<LookAheadLimiterState>,
                        input: UnsafePointer<UnsafeMutablePointer<Float>>?, inputChannels: Int,
                        output: UnsafePointer<UnsafeMutablePointer<Float>>, offset: Int, frames: Int,
                        gain0: Float, gain1: Float, ceiling0: Float, ceiling1: Float, release: Float) {
        let mask = s.pointee.capacity - 1, capacity = s.pointee.capacity
        let channels = s.pointee.channels
        let d = s.pointee.lookAhead, a = s.pointee.attack
        let audio = LookAheadLimiterState.audio(s), needed = LookAheadLimiterState.needed(s)
        let minima = LookAheadLimiterState.minima(s)
        let values = LookAheadLimiterState.dequeValues(s), dequeFrames = LookAheadLimiterState.dequeFrames(s)
        let inChannels = input == nil ? 0 : min(inputChannels, channels)  // the rest: silence
        let steps = Float(max(frames, 1))
        let gainStep = (gain1 - gain0) / steps, ceilingStep = (ceiling1 - ceiling0) / steps
        // Aim a hair below the ceiling, so Float rounding of x × (c / |x|) cannot cross it.
        let margin: Float = 1 - 1.0 / 1_048_576
        var n = s.pointee.position
        var sum = s.pointee.sum
        var reduced = s.pointee.reduced
        var reduction = s.pointee.reduction
        var head = s.pointee.head, tail = s.pointee.tail
        let inverseA = 1 / Double(a)
        // Wrapping integer arithmetic in the loop: positions are frame counts (no overflow in
        // centuries of audio), and the checks of ordinary + and − cost a fifth of the loop.
        for f in 0..<frames {
            let k = Float(f &+ 1)
            let preGain = gain0 == gain1 ? gain1 : gain0 + gainStep * k
            let ceiling = (ceiling0 == ceiling1 ? ceiling1 : ceiling0 + ceilingStep * k) * margin
            // 1. The input frame into the delay line (silence for channels without input), and
            //    the gain it needs.
            let w = n & mask
            var peak: Float = 0
            if let input {
                for c in 0..<inChannels {
                    let y = input[c][offset &+ f] * preGain
                    audio[c &* capacity &+ w] = y
                    peak = max(peak, abs(y))
                }
            }
            for c in inChannels..<channels { audio[c &* capacity &+ w] = 0 }
            needed[w] = peak > ceiling ? ceiling / peak : 1
            // 2. The sliding minimum over the A frames ending at q = n − D + A − 1.
            let q = n &- d &+ a &- 1
            let v = needed[q & mask]
            while tail > head && values[(tail &- 1) & mask] >= v { tail = tail &- 1 }
            values[tail & mask] = v
            dequeFrames[tail & mask] = q
            tail = tail &+ 1
            while dequeFrames[head & mask] <= q &- a { head = head &+ 1 }
            let h = values[head & mask]
            // 3. Its average over the last A frames.
            let leaving = minima[(n &- a) & mask]
            if leaving < 1 { reduced = reduced &- 1 }
            if h < 1 { reduced = reduced &+ 1 }
            minima[w] = h
            var average: Float = 1
            if reduced == 0 {
                sum = Double(a)
            } else {
                sum += Double(h) - Double(leaving)
                average = min(1, Float(sum * inverseA))
            }
            // 4. Down at once, up with the decay time constant (landing on exactly 1).
            let wanted = 1 - average
            if wanted > reduction {
                reduction = wanted
            } else {
                reduction = wanted + (reduction - wanted) * release
                if reduction < 1e-7 { reduction = 0 }
            }
            let envelope = 1 - reduction
            // 5. The frame leaving the delay line, capped under the ceiling in force now.
            let m = (n &- d) & mask
            var out: Float = 0
            for c in 0..<channels { out = max(out, abs(audio[c &* capacity &+ m])) }
            let g = out > ceiling ? min(envelope, ceiling / out) : envelope
            for c in 0..<channels { output[c][offset &+ f] = audio[c &* capacity &+ m] * g }
            n = n &+ 1
        }
        s.pointee.position = n
        s.pointee.sum = sum
        s.pointee.reduced = reduced
        s.pointee.reduction = reduction
        s.pointee.head = head
        s.pointee.tail = tail
    }
}

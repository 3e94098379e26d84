// DSP: noise — the PCG32 generator (white, uniform) and Paul Kellet's pink filter.

/// PCG32, the "XSH RR" member of Melissa O'Neill's PCG family ("PCG: A Family of Simple Fast
/// Space-Efficient Statistically Good Algorithms for Random Number Generation", 2014;
/// pcg-random.org, `pcg32_random_r`): a 64-bit linear congruential state, 32-bit output by an
/// xorshift and a random rotation. Deterministic: the same seed gives the same sequence on every
/// machine. Trivial.
struct PCG32: Equatable {
    var state: UInt64
    /// The stream selector (odd), fixed: `pcg32_srandom_r`'s `initseq` 54, as in PCG's demo.
    static var increment: UInt64 { @_noLocks @inline(__always) get { (54 << 1) | 1 } }

    /// A generator seeded as `pcg32_srandom_r(seed, 54)`.
    @_noLocks @inline(__always)
    init(seed: UInt64) {
        state = 0
        _ = next()
        state &+= seed
        _ = next()
    }

    /// The next 32 random bits.
    @_noLocks @inline(__always)
    mutating func next() -> UInt32 {
        let old = state
        state = old &* 6_364_136_223_846_793_005 &+ PCG32.increment
        let xorshifted = UInt32(truncatingIfNeeded: ((old >> 18) ^ old) >> 27)
        let rotation = UInt32(truncatingIfNeeded: old >> 59)
        return (xorshifted >> rotation) | (xorshifted << ((0 &- rotation) & 31))
    }

    /// The next sample, uniform on the 2^24 values k/2^23, −1 ≤ k/2^23 < 1 (the top 24 bits as
    /// a signed integer, exact in Float).
    @_noLocks @inline(__always)
    mutating func nextSample() -> Float {
        Float(Int32(bitPattern: next()) >> 8) * (1.0 / 8_388_608)
    }
}

/// Paul Kellet's refined pink-noise filter ("pk3", posted to the music-dsp mailing list, 1999;
/// musicdsp.org "Pink Noise Filters"): six one-pole low-passes and a direct path summed, within
/// ±0.05 dB of −3 dB/octave from 9.2 Hz to the Nyquist frequency at 44.1 kHz (the coefficients
/// are fixed, so at another rate the band's corners move in proportion: 10 Hz…24 kHz at 48 kHz).
/// The output is scaled by 0.3276 (= 1/√Σh², h the filter's impulse response) so that pink noise
/// has the RMS level of the white noise that drives it. Trivial; zero is a valid start.
struct PinkFilter: Equatable {
    var b0: Float = 0, b1: Float = 0, b2: Float = 0, b3: Float = 0, b4: Float = 0, b5: Float = 0, b6: Float = 0

    /// A silent filter (an explicit initializer, for kernels in other files under `@_noLocks`).
    @_noLocks @inline(__always)
    init() {}

    /// One pink sample from one white sample.
    @_noLocks @inline(__always)
    mutating func process(_ white: Float) -> Float {
        b0 = 0.99886 * b0 + white * 0.0555179
        b1 = 0.99332 * b1 + white * 0.0750759
        b2 = 0.96900 * b2 + white * 0.1538520
        b3 = 0.86650 * b3 + white * 0.3104856
        b4 = 0.55000 * b4 + white * 0.5329522
        b5 = -0.7616 * b5 - white * 0.0168980
        let pink = b0 + b1 + b2 + b3 + b4 + b5 + b6 + white * 0.5362
        b6 = white * 0.115926
        return pink * 0.32759737
    }
}

// Test support: SplitMix64, the deterministic random source of the stress, soak and real-time tests — the same seed, the same choices, so a failure can be replayed.

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): the same sequence on every run from the same seed. A `RandomNumberGenerator`
/// for `Int.random(in:using:)` and friends, and callable for a number in 0..<n.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    /// A generator whose first step starts from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<n (n ≥ 1): the next value modulo n.
    public mutating func callAsFunction(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

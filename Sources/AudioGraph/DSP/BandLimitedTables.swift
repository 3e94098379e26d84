// DSP: band-limited wavetables — Web Audio's square, sawtooth and triangle as Fourier series cut below the Nyquist frequency, and their lookup.
#if canImport(Glibc)
import Glibc
#endif

/// The oscillator's waveforms as band-limited wavetables: one period of 4,096 samples per table,
/// built once per process on a control thread (additive synthesis, in Double) and read by every
/// oscillator's render thread (never written again).
///
/// Each shape is its Fourier series as Web Audio defines it (the "Oscillator Coefficients" of the
/// Web Audio API, §OscillatorNode), Σ bₖ sin(2πkφ):
/// - square: bₖ = 4/(πk) for odd k (+1 for the first half period, −1 for the second);
/// - sawtooth: bₖ = (−1)^(k+1) · 2/(πk) (0 at φ = 0, rising to +1 just before φ = ½, then −1);
/// - triangle: bₖ = 8 sin(πk/2)/(πk)² (0 at φ = 0, +1 at φ = ¼).
/// The series are not renormalized: square and sawtooth overshoot to about ±1.09 (Gibbs).
///
/// Band limiting: the shape has one table per harmonic count in ``harmonicCounts`` (about two per
/// octave, up to 2,047 harmonics). A note of normalized frequency F = f/fs reads the table with
/// the most harmonics K such that K·F ≤ ½, so no harmonic passes the Nyquist frequency and none
/// aliases; the highest one present is above fs/(2√2) (17 kHz at 48 kHz) except below
/// fs/4094 (11.7 Hz at 48 kHz), where 2,047 harmonics reach what they reach. Samples between
/// table points are interpolated linearly; with 4,096 points its error products lie at least
/// 60 dB below the fundamental (the band-limited tables hold at most 2,047 harmonics, a table
/// oversampled at least twice, and a harmonic's interpolation images fall with its square
/// distance from the table's Nyquist point).
/// SAFETY (`@unchecked Sendable`): the memory is written once, in the initializer, and only read after.
final class BandLimitedTables: @unchecked Sendable {
    /// The tables every oscillator reads, built on first use. Thread: any (the first use, on a
    /// control thread, builds them: an ``OscillatorUnit``'s initializer).
    static let shared = BandLimitedTables()

    /// Samples per period; each table stores one more (a copy of the first) for interpolation.
    static let size = 4096
    /// The harmonic counts of the tables, ascending (about √2 apart).
    static let harmonicCounts: [Int32] = [1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256, 362, 512, 724, 1024, 1448, 2047]
    /// The band-limited shapes, in table order.
    enum Shape: Int { case square = 0, sawtooth, triangle }

    /// `[sine][size + 1]`, then `[shape][table][size + 1]`.
    let samples: UnsafeMutablePointer<Float>
    /// ``harmonicCounts`` where the render thread can read it.
    let counts: UnsafeMutablePointer<Int32>

    private init() {
        let n = Self.size, stride = n + 1, tableCount = Self.harmonicCounts.count
        samples = .allocate(capacity: stride * (1 + 3 * tableCount))
        counts = .allocate(capacity: tableCount)
        for (i, k) in Self.harmonicCounts.enumerated() { counts[i] = k }
        // sin(2π m/n) for every m: harmonic k at sample i is sine[(k·i) mod n], exactly.
        let sine = UnsafeMutablePointer<Double>.allocate(capacity: n)
        defer { sine.deallocate() }
        for m in 0..<n { sine[m] = Glibc.sin(2 * Double.pi * Double(m) / Double(n)) }
        for i in 0...n { samples[i] = Float(sine[i % n]) }
        let sum = UnsafeMutablePointer<Double>.allocate(capacity: n)
        defer { sum.deallocate() }
        for shape in 0..<3 {
            sum.initialize(repeating: 0, count: n)
            var done: Int32 = 0
            for (t, count) in Self.harmonicCounts.enumerated() {
                // Tables share their lower harmonics: add only the new ones to the running sum.
                for k in Int(done + 1)...Int(count) {
                    let b = Self.coefficient(Shape(rawValue: shape)!, harmonic: k)
                    if b == 0 { continue }
                    var index = 0
                    for i in 0..<n {
                        sum[i] += b * sine[index]
                        index = (index + k) & (n - 1)
                    }
                }
                done = count
                let table = samples + stride * (1 + shape * tableCount + t)
                for i in 0..<n { table[i] = Float(sum[i]) }
                table[n] = table[0]
            }
        }
    }

    /// bₖ, the sine coefficient of harmonic `k` (≥ 1) of `shape` (Web Audio's definitions).
    static func coefficient(_ shape: Shape, harmonic k: Int) -> Double {
        let pk = Double.pi * Double(k)
        switch shape {
        case .square: return k % 2 == 1 ? 4 / pk : 0
        case .sawtooth: return (k % 2 == 1 ? 2 : -2) / pk
        case .triangle: return k % 2 == 1 ? (k % 4 == 1 ? 8 : -8) / (pk * pk) : 0
        }
    }
}

/// Reads the tables on the render thread: a pointer to the samples and one to the harmonic
/// counts, taken from ``BandLimitedTables/shared`` on a control thread. Trivial.
struct WavetableReader {
    let samples: UnsafePointer<Float>
    let counts: UnsafePointer<Int32>
    let tableCount: Int

    /// A reader of the shared tables. Control thread (builds them on first use).
    init() {
        let tables = BandLimitedTables.shared
        samples = UnsafePointer(tables.samples)
        counts = UnsafePointer(tables.counts)
        tableCount = BandLimitedTables.harmonicCounts.count
    }

    /// Samples per period.
    static var size: Int { @_noLocks @inline(__always) get { 4096 } }

    /// The sine table.
    var sine: UnsafePointer<Float> { @_noLocks @inline(__always) get { samples } }

    /// The table of `shape` (0 square, 1 sawtooth, 2 triangle) for notes up to normalized
    /// frequency `f` (cycles per frame, 0…0.5): the one with the most harmonics whose highest
    /// stays at or below the Nyquist frequency. 0 reads the table with the most.
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    func table(shape: Int, maximumFrequency f: Double) -> UnsafePointer<Float> {
        var t = tableCount - 1
        if f > 0 {
            let allowed = 0.5 / f
            while t > 0 && Double(counts[t]) > allowed { t -= 1 }
        }
        return samples + (WavetableReader.size + 1) * (1 + shape * tableCount + t)
    }

    /// One period's value at `phase` (0 ≤ phase < 1), interpolated linearly between table points.
    /// - Thread: any; real-time safe.
    @_noLocks @inline(__always)
    static func read(_ table: UnsafePointer<Float>, phase: Double) -> Float {
        let x = phase * 4096
        let i = min(Int(x), 4095)
        let frac = Float(x - Double(i))
        let a = table[i], b = table[i + 1]
        return a + frac * (b - a)
    }
}

// Tests, DSP: every RBJ cookbook design against the cookbook (no graph), its stability at the parameter extremes, and the gliding filter.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Biquad designs (DSP, no graph)")
struct BiquadDesignTests {
    static let pairs: [(BiquadResponse, Cookbook.Filter)] = [
        (.lowPass, .lpf), (.highPass, .hpf), (.bandPass, .bpf), (.notch, .notch),
        (.allPass, .apf), (.peaking, .peakingEQ), (.lowShelf, .lowShelf), (.highShelf, .highShelf),
    ]

    /// Double coefficients within 1e-12 of the cookbook's (normalized by a0), and their Float
    /// rounding within one unit in the last place.
    func expectCookbook(_ c: BiquadCoefficients64, _ reference: (b: [Double], a: [Double]), _ label: String) {
        let a0 = reference.a[0]
        let expected = [reference.b[0], reference.b[1], reference.b[2], reference.a[1], reference.a[2]].map { $0 / a0 }
        let actual = [c.b0, c.b1, c.b2, c.a1, c.a2]
        for (x, e) in zip(actual, expected) {
            #expect(abs(x - e) <= 1e-12 * max(1, abs(e)), "\(label): \(actual) vs cookbook \(expected)")
        }
        let rounded = BiquadCoefficients(c)
        for (x, e) in zip([rounded.b0, rounded.b1, rounded.b2, rounded.a1, rounded.a2], expected.map { Float($0) }) {
            #expect(abs(x - e) <= max(e.ulp, Float.leastNormalMagnitude), "\(label) in Float")
        }
    }

    @Test(arguments: 0..<8)
    func everyResponseIsTheCookbooks(index: Int) {
        let (response, filter) = Self.pairs[index]
        for (f0, fs) in [(1000.0, 48_000.0), (60, 44_100), (15_000, 96_000)] {
            for gain in [-18.0, 0, 9] {
                for q in [0.3, 0.7071067811865476, 4] {
                    let c = BiquadCoefficients64.design(response, frequency: Float(f0), bandwidth: .q(q), gain: gain, sampleRate: Float(fs))
                    expectCookbook(c, Cookbook.coefficients(filter, f0: f0, fs: fs, width: .q(q), dBgain: gain), "\(response) \(f0) Hz Q \(q) \(gain) dB")
                }
                for octaves in [0.1, 1, 3] {
                    let c = BiquadCoefficients64.design(response, frequency: Float(f0), bandwidth: .octaves(octaves), gain: gain, sampleRate: Float(fs))
                    expectCookbook(c, Cookbook.coefficients(filter, f0: f0, fs: fs, width: .octaves(octaves), dBgain: gain),
                                   "\(response) \(f0) Hz \(octaves) oct \(gain) dB")
                }
            }
        }
    }

    @Test func theLowPassIsTheGeneralDesignBitForBit() {
        for cutoff: Float in [10, 440, 6900, 23_000] {
            for q in [0.0707, 0.7071067811865476, 70.7] {
                #expect(BiquadCoefficients.lowPass(cutoff: cutoff, q: q, sampleRate: 48_000)
                        == .design(.lowPass, frequency: cutoff, bandwidth: .q(q), gain: 0, sampleRate: 48_000))
            }
        }
    }

    @Test func landmarksOfEachResponse() {
        let fs = 48_000.0
        func db(_ c: BiquadCoefficients64, _ f: Double) -> Double {
            Cookbook.magnitudeDB(([c.b0, c.b1, c.b2], [1, c.a1, c.a2]), at: f, fs: fs)
        }
        let peak = BiquadCoefficients64.design(.peaking, frequency: 1000, bandwidth: .q(2), gain: 10, sampleRate: 48_000)
        #expect(abs(db(peak, 1000) - 10) < 0.01 && abs(db(peak, 20)) < 0.01 && abs(db(peak, 20_000)) < 0.05)
        let low = BiquadCoefficients64.design(.lowShelf, frequency: 200, bandwidth: .q(0.7071067811865476), gain: -12, sampleRate: 48_000)
        #expect(abs(db(low, 1) + 12) < 0.01 && abs(db(low, 200) + 6) < 0.01 && abs(db(low, 20_000)) < 0.01)
        let high = BiquadCoefficients64.design(.highShelf, frequency: 5000, bandwidth: .q(0.7071067811865476), gain: 8, sampleRate: 48_000)
        #expect(abs(db(high, 10)) < 0.01 && abs(db(high, 5000) - 4) < 0.01 && abs(db(high, 23_900) - 8) < 0.05)
        let bandPass = BiquadCoefficients64.design(.bandPass, frequency: 1000, bandwidth: .octaves(1), gain: 0, sampleRate: 48_000)
        #expect(abs(db(bandPass, 1000)) < 0.001)
        let notch = BiquadCoefficients64.design(.notch, frequency: 1000, bandwidth: .octaves(1), gain: 0, sampleRate: 48_000)
        #expect(db(notch, 1000) < -80 && abs(db(notch, 20)) < 0.01)
        let allPass = BiquadCoefficients64.design(.allPass, frequency: 1000, bandwidth: .q(0.7), gain: 0, sampleRate: 48_000)
        for f in twentyFrequencies { #expect(abs(db(allPass, f)) < 0.001, "all-pass at \(f) Hz") }
        let h = Cookbook.response(([allPass.b0, allPass.b1, allPass.b2], [1, allPass.a1, allPass.a2]), at: 1000, fs: fs)
        #expect(abs(h.re + 1) < 1e-4 && abs(h.im) < 1e-4, "180° at the centre: \(h)")
    }

    /// Every pole strictly inside the unit circle: the stability triangle, 1 + a1 + a2 > 0,
    /// 1 − a1 + a2 > 0, a2 < 1, evaluated exactly (in Double) on the coefficients the filter runs.
    func isStable(a1: Double, a2: Double, _ all: [Double]) -> Bool {
        all.allSatisfy(\.isFinite) && 1 + a1 + a2 > 0 && 1 - a1 + a2 > 0 && a2 < 1
    }

    @Test func everyFloat64DesignIsStableAtEveryParameterExtreme() {
        // Every response at the edges of every unit's ranges (and beyond), at every common rate.
        var unstable: [String] = []
        for fs: Float in [8_000, 44_100, 48_000, 96_000, 192_000] {
            for f: Float in [10, 20, 200, 10_000, fs * 0.49, fs / 2, 1e9] {
                for (r, _) in Self.pairs {
                    for width: BiquadBandwidth in [.q(0.0707), .q(0.1), .q(0.7071067811865476), .q(20), .q(70.8),
                                                   .octaves(0.05), .octaves(5), .octaves(10)] {
                        for gain in [-96.0, -40, 0, 24, 40] {
                            let c = BiquadCoefficients64.design(r, frequency: f, bandwidth: width, gain: gain, sampleRate: fs)
                            if !isStable(a1: c.a1, a2: c.a2, [c.b0, c.b1, c.b2, c.a1, c.a2]) {
                                unstable.append("\(r) \(f) Hz \(width) \(gain) dB at \(fs)")
                            }
                        }
                    }
                }
            }
        }
        #expect(unstable.isEmpty, "\(unstable.count) unstable designs, e.g. \(unstable.prefix(4))")
    }

    @Test func theFloat32LowPassIsStableAcrossItsRange() {
        // The low-pass unit's own ranges (10 Hz…Nyquist, resonance −20…40 dB) in Float.
        var unstable: [String] = []
        for fs: Float in [8_000, 44_100, 48_000, 96_000, 192_000] {
            for f: Float in [10, 11, 13, 17, 20, 30, 100, 1000, fs * 0.49] {
                for resonance in stride(from: -20.0, through: 40, by: 5) {
                    let c = BiquadCoefficients.lowPass(cutoff: f, q: pow(10, resonance / 20) * 0.7071067811865476, sampleRate: fs)
                    let all = [c.b0, c.b1, c.b2, c.a1, c.a2].map(Double.init)
                    if !isStable(a1: Double(c.a1), a2: Double(c.a2), all) { unstable.append("\(f) Hz \(resonance) dB at \(fs)") }
                }
            }
        }
        #expect(unstable.isEmpty, "\(unstable)")
    }

    @Test func aGlidingFilterAtItsTargetIsThePlainBiquad() {
        // Designed once at the target, the filter is Biquad.process with those coefficients, bit for bit.
        let input = noise(frames: 4000, seed: 3)
        let design = BiquadDesign(.peaking, .q)
        let target = BiquadTarget(design: design, frequency: 700, shape: 3, gain: -7)
        var state = BiquadFilterState(coefficients: BiquadCoefficients64(b0: 0, b1: 0, b2: 0, a1: 0, a2: 0), frequency: 0, shape: 0,
                                      gain: 0, designRate: 0, design: design)
        var memory = [BiquadMemory64()]
        var output = [Float](repeating: 0, count: input.count)
        var source = input
        source.withUnsafeMutableBufferPointer { src in
            output.withUnsafeMutableBufferPointer { dst in
                var ins = [src.baseAddress!], outs = [dst.baseAddress!]
                for start in stride(from: 0, to: 4000, by: 500) {
                    BiquadFilter.render(&state, &memory, toward: target, sampleRate: 48_000, snaps: false,
                                        input: &ins, inputChannels: 1, output: &outs, channels: 1, offset: start, frames: 500)
                }
            }
        }
        let c = BiquadCoefficients64.design(.peaking, frequency: 700, bandwidth: .q(3), gain: -7, sampleRate: 48_000)
        var plain = [Float](repeating: 0, count: input.count)
        var m = BiquadMemory64()
        input.withUnsafeBufferPointer { src in plain.withUnsafeMutableBufferPointer { dst in
            Biquad.process64(c, &m, input: src.baseAddress!, output: dst.baseAddress!, frames: 4000)
        } }
        #expect(output == plain)
    }

    @Test func frequencyAndGainGlideAndArrive() {
        // From 200 Hz, +12 dB to 5 kHz, −12 dB: in log-frequency and in dB, τ = 5 ms.
        let design = BiquadDesign(.peaking, .q)
        var state = BiquadFilterState(coefficients: BiquadCoefficients64(b0: 0, b1: 0, b2: 0, a1: 0, a2: 0), frequency: 0, shape: 0,
                                      gain: 0, designRate: 0, design: design)
        BiquadFilter.begin(&state, toward: BiquadTarget(design: design, frequency: 200, shape: 1, gain: 12), sampleRate: 48_000, snaps: false)
        #expect(state.frequency == 200 && state.gain == 12, "the first design is at the target")
        let target = BiquadTarget(design: design, frequency: 5000, shape: 1, gain: -12)
        BiquadFilter.begin(&state, toward: target, sampleRate: 48_000, snaps: false)
        var frames = 0, checked = false
        while BiquadFilter.isGliding(&state, toward: target) {
            frames += BiquadFilter.advance(&state, toward: target, sampleRate: 48_000, frames: 1000)
            if frames == 256 {  // 8 glide pieces, 1.07 τ: 1 − e^(−256/240) of the way, in octaves and in dB
                let expected = 1 - exp(-256.0 / 240)
                let octaves = log2(Double(state.frequency) / 200) / log2(25)
                #expect(abs(octaves - expected) < 0.01, "\(octaves) of the way after 256 frames")
                #expect(abs((12 - Double(state.gain)) / 24 - expected) < 0.01)
                checked = true
            }
        }
        #expect(checked)
        // Arrives within 1e-3 of the frequency, 0.01 dB of the gain: ln(1e-3·…) ≈ 7–8 τ.
        #expect(frames > 240 * 5 && frames < 240 * 10, "arrived after \(frames) frames")
        #expect(state.coefficients == BiquadCoefficients64.design(.peaking, frequency: 5000, bandwidth: .q(1), gain: -12, sampleRate: 48_000))
    }
}

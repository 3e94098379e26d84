// Tests, Units: the single-biquad units (high-pass, band-pass, shelves, parametric EQ, notch, all-pass, and the low-pass they share a kernel with) — responses measured through a graph against the cookbook, extremes, glides, Apple's parameter tables.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Biquad filter units")
struct BiquadFilterUnitTests {
    /// A unit, its settings (parameter ID → value), and the cookbook filter it should be.
    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let make: @Sendable () -> BiquadFilterUnit
        let settings: [(AudioUnitParameterID, Float)]
        let filter: Cookbook.Filter
        let f0: Double
        let width: Cookbook.Width
        let gain: Double
        var description: String { name }
    }

    static let butterworth = 0.7071067811865476
    static let cases: [Case] = [
        Case(name: "low-pass 1 kHz +6 dB", make: { LowPassFilterUnit() }, settings: [(0, 1000), (1, 6)],
             filter: .lpf, f0: 1000, width: .q(pow(10, 6.0 / 20) * butterworth), gain: 0),
        Case(name: "high-pass 1 kHz 0 dB", make: { HighPassFilterUnit() }, settings: [(0, 1000), (1, 0)],
             filter: .hpf, f0: 1000, width: .q(butterworth), gain: 0),
        Case(name: "high-pass 150 Hz +12 dB", make: { HighPassFilterUnit() }, settings: [(0, 150), (1, 12)],
             filter: .hpf, f0: 150, width: .q(pow(10, 12.0 / 20) * butterworth), gain: 0),
        Case(name: "band-pass 1 kHz 1200 cents", make: { BandPassFilterUnit() }, settings: [(0, 1000), (1, 1200)],
             filter: .bpf, f0: 1000, width: .octaves(1), gain: 0),
        Case(name: "band-pass 5 kHz 300 cents", make: { BandPassFilterUnit() }, settings: [(0, 5000), (1, 300)],
             filter: .bpf, f0: 5000, width: .octaves(0.25), gain: 0),
        Case(name: "low shelf 100 Hz +12 dB", make: { LowShelfFilterUnit() }, settings: [(0, 100), (1, 12)],
             filter: .lowShelf, f0: 100, width: .q(butterworth), gain: 12),
        Case(name: "low shelf 200 Hz −30 dB", make: { LowShelfFilterUnit() }, settings: [(0, 200), (1, -30)],
             filter: .lowShelf, f0: 200, width: .q(butterworth), gain: -30),
        Case(name: "high shelf 12 kHz +9 dB", make: { HighShelfFilterUnit() }, settings: [(0, 12_000), (1, 9)],
             filter: .highShelf, f0: 12_000, width: .q(butterworth), gain: 9),
        Case(name: "parametric 1 kHz Q 2 +10 dB", make: { ParametricEQUnit() }, settings: [(0, 1000), (1, 2), (2, 10)],
             filter: .peakingEQ, f0: 1000, width: .q(2), gain: 10),
        Case(name: "parametric 300 Hz Q 0.5 −15 dB", make: { ParametricEQUnit() }, settings: [(0, 300), (1, 0.5), (2, -15)],
             filter: .peakingEQ, f0: 300, width: .q(0.5), gain: -15),
        Case(name: "notch 1 kHz 600 cents", make: { NotchFilterUnit() }, settings: [(0, 1000), (1, 600)],
             filter: .notch, f0: 1000, width: .octaves(0.5), gain: 0),
        Case(name: "all-pass 2 kHz Q 0.7", make: { AllPassFilterUnit() }, settings: [(0, 2000), (1, 0.7)],
             filter: .apf, f0: 2000, width: .q(0.7), gain: 0),
    ]

    func configured(_ c: Case) throws -> BiquadFilterUnit {
        let unit = c.make()
        for (id, value) in c.settings { try unit.setParameter(id, value, scope: .global) }
        return unit
    }

    @Test(arguments: cases)
    func magnitudeResponseIsTheCookbooksAtTwentyFrequencies(_ c: Case) throws {
        // The unit's impulse response through a graph (IO → unit → IO), its DFT at 20
        // frequencies from 20 Hz to 20 kHz, against the cookbook's analytic response.
        let h = try impulseResponse(of: configured(c))
        let reference = Cookbook.coefficients(c.filter, f0: c.f0, fs: 48_000, width: c.width, dBgain: c.gain)
        let worst = worstDeviation(h) { Cookbook.magnitudeDB(reference, at: $0, fs: 48_000) }
        #expect(worst.dB <= 0.05, "\(c.name): \(worst.dB) dB off at \(worst.at) Hz")
    }

    @Test func theAllPassTurnsThePhaseByHalfACircleAtItsCentre() throws {
        let unit = AllPassFilterUnit()
        try unit.setParameter(AllPassFilterUnit.Parameter.centerFrequency, 3000, scope: .global)
        let h = try impulseResponse(of: unit)
        let s = spectrum(h, at: 3000, fs: 48_000)
        #expect(abs(s.re + 1) < 1e-3 && abs(s.im) < 1e-3, "H(3 kHz) = \(s)")
    }

    @Test func aUnitIsTheBiquadBitForBit() throws {
        // The shared kernel through a graph against the DSP type alone, stereo (a channel pair).
        let unit = ParametricEQUnit()
        try unit.setParameter(ParametricEQUnit.Parameter.centerFrequency, 1234, scope: .global)
        try unit.setParameter(ParametricEQUnit.Parameter.q, 3, scope: .global)
        try unit.setParameter(ParametricEQUnit.Parameter.gain, -9, scope: .global)
        let chain = try Chain([unit], channels: 3)
        let input = (0..<3).map { noise(frames: 6000, seed: 40 + UInt64($0)) }
        let output = try chain.render(input, slice: 256)
        let c = BiquadCoefficients64.design(.peaking, frequency: 1234, bandwidth: .q(3), gain: -9, sampleRate: 48_000)
        for ch in 0..<3 {
            var m = BiquadMemory64()
            var plain = [Float](repeating: 0, count: 6000)
            input[ch].withUnsafeBufferPointer { src in plain.withUnsafeMutableBufferPointer { dst in
                for start in stride(from: 0, to: 6000, by: 256) {
                    Biquad.process64(c, &m, input: src.baseAddress! + start, output: dst.baseAddress! + start, frames: min(256, 6000 - start))
                }
            } }
            #expect(output[ch] == plain, "channel \(ch)")
        }
    }

    /// Every parameter at its minimum and maximum, in every combination, at 48 kHz and 8 kHz:
    /// noise in, finite and bounded out; then silence in, no subnormal number out (the most
    /// resonant corners ring for a minute before reaching exact zero; the next test waits for that).
    @Test(arguments: [0, 1, 2, 3, 4, 5, 6, 7])
    func stableAndFiniteAtEveryParameterExtreme(kind: Int) throws {
        let makers: [() -> BiquadFilterUnit] = [
            { LowPassFilterUnit() }, { HighPassFilterUnit() }, { BandPassFilterUnit() }, { LowShelfFilterUnit() },
            { HighShelfFilterUnit() }, { ParametricEQUnit() }, { NotchFilterUnit() }, { AllPassFilterUnit() },
        ]
        for rate in [48_000.0, 8_000] {
            let template = makers[kind]()
            let infos = template.parameterList(scope: .global)
            for combination in 0..<(1 << infos.count) {
                let unit = makers[kind]()
                try unit.setStreamFormat(.float32(sampleRate: rate, channels: 2), scope: .output, element: 0)
                for (i, info) in infos.enumerated() {
                    try unit.setParameter(info.id, combination & (1 << i) == 0 ? -1e9 : 1e9, scope: .global)  // clamped to min / max
                }
                let chain = try Chain([unit], channels: 2, sampleRate: rate)
                let loud = try chain.render([noise(frames: 24_000, seed: 1), noise(frames: 24_000, seed: 2)])
                let peak = loud.flatMap { $0 }.map { abs($0) }.max()!
                let values = infos.map { (try? unit.parameter($0.id, scope: .global)) ?? .nan }
                #expect(loud.allSatisfy { $0.allSatisfy(\.isFinite) } && peak < 1000, "\(type(of: unit)) \(values) at \(rate): peak \(peak)")
                let quiet = try chain.render([[Float](repeating: 0, count: 48_000), [Float](repeating: 0, count: 48_000)])
                #expect(!quiet.contains { $0.contains { $0.isSubnormal } }, "\(type(of: unit)) \(values) at \(rate): no subnormal numbers")
            }
        }
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 6, 7])
    func silenceAfterLoudInputDecaysToExactZeros(kind: Int) throws {
        let units: [BiquadFilterUnit] = [LowPassFilterUnit(), HighPassFilterUnit(), BandPassFilterUnit(), LowShelfFilterUnit(),
                                         HighShelfFilterUnit(), ParametricEQUnit(), NotchFilterUnit(), AllPassFilterUnit()]
        // Each at its defaults, the boosting ones boosted: ringing decays, then exact zeros.
        let unit = units[kind]
        if unit is ParametricEQUnit { try unit.setParameter(ParametricEQUnit.Parameter.gain, 20, scope: .global) }
        if unit is LowShelfFilterUnit || unit is HighShelfFilterUnit { try unit.setParameter(1, 40, scope: .global) }
        let chain = try Chain([unit])
        _ = try chain.render([noise(frames: 48_000, seed: 5), noise(frames: 48_000, seed: 6)])
        let out = try chain.render([[Float](repeating: 0, count: 4 * 48_000), [Float](repeating: 0, count: 4 * 48_000)])
        #expect(out.allSatisfy { $0.suffix(4096).allSatisfy { $0 == 0 } }, "\(type(of: unit)): last value \(out[0].last!)")
        // The Float32 low-pass may pass a subnormal sample on the way down (its output is kept
        // as it always was); the Float64 filters write exact zeros below 1e-30.
        if !(unit is LowPassFilterUnit) { #expect(!out[0].contains { $0.isSubnormal }) }
    }

    @Test(arguments: [
        (0, Float(300), Float(5000), "parametric centre"),
        (2, Float(20), Float(-20), "parametric gain"),
    ] as [(Int, Float, Float, String)])
    func changesGlideWithoutAClickAndKeepTheState(id: Int, from: Float, to: Float, label: String) throws {
        // A 1 kHz tone through a +12 dB, Q 1 peak at 1 kHz; one parameter jumps from `from` to
        // `to` between slices. Glided, the output during the change is no more click-like than
        // the steady tone (``clickiness``: curvature relative to level); the same change as a
        // scheduled immediate step is measured beside it, and is a click.
        func run(step: Bool) throws -> (steady: Float, change: Float) {
            let unit = ParametricEQUnit()
            try unit.setParameter(ParametricEQUnit.Parameter.centerFrequency, 1000, scope: .global)
            try unit.setParameter(ParametricEQUnit.Parameter.q, 1, scope: .global)
            try unit.setParameter(ParametricEQUnit.Parameter.gain, 12, scope: .global)
            try unit.setParameter(AudioUnitParameterID(id), from, scope: .global)
            let chain = try Chain([unit], channels: 1)
            let tone = sine(frequency: 1000, frames: 9600, amplitude: 0.2)
            let before = try chain.render([tone])[0]
            if step { try unit.setParameter(AudioUnitParameterID(id), to, scope: .global, bufferOffset: 0) }
            else { try unit.setParameter(AudioUnitParameterID(id), to, scope: .global) }
            let after = try chain.render([tone])[0] + chain.render([tone])[0]
            // The change starts on a slice boundary: measure across it.
            let changing = Array(before.suffix(240)) + after.prefix(4800)
            return (max(clickiness(before[4800...]), clickiness(after[14_400...])), clickiness(changing[...]))
        }
        let glided = try run(step: false), stepped = try run(step: true)
        // Measured: glided 1.03–1.18 × the steady tone's; stepped 9.7–10.4 ×.
        #expect(glided.change <= glided.steady * 1.25, "\(label): glide \(glided.change), steady \(glided.steady)")
        #expect(stepped.change > glided.steady * 3, "\(label): the unsmoothed step is a click the test sees (\(stepped.change))")
    }

    @Test func appleParameterTables() throws {
        // (unit, [(ID, name, unit, min, max at 48 kHz, default)]) from AudioUnitParameters.h.
        typealias Row = (AudioUnitParameterID, String, AudioUnitParameterUnit, Float, Float, Float)
        let tables: [(AudioUnit, [Row])] = [
            (HighPassFilterUnit(), [(0, "CutoffFrequency", .hertz, 10, 24_000, 6900), (1, "Resonance", .decibels, -20, 40, 0)]),
            (BandPassFilterUnit(), [(0, "CenterFrequency", .hertz, 20, 24_000, 5000), (1, "Bandwidth", .cents, 100, 12_000, 600)]),
            (LowShelfFilterUnit(), [(0, "CutoffFrequency", .hertz, 10, 200, 80), (1, "Gain", .decibels, -40, 40, 0)]),
            (HighShelfFilterUnit(), [(0, "CutoffFrequency", .hertz, 10_000, 24_000, 10_000), (1, "Gain", .decibels, -40, 40, 0)]),
            (ParametricEQUnit(), [(0, "CenterFrequency", .hertz, 20, 24_000, 2000), (1, "Q", .generic, 0.1, 20, 1),
                                  (2, "Gain", .decibels, -20, 20, 0)]),
            (NotchFilterUnit(), [(0, "CenterFrequency", .hertz, 20, 24_000, 5000), (1, "Bandwidth", .cents, 100, 12_000, 600)]),
            (AllPassFilterUnit(), [(0, "CenterFrequency", .hertz, 20, 24_000, 2000), (1, "Q", .generic, 0.1, 20, 1)]),
        ]
        for (unit, rows) in tables {
            let list = unit.parameterList(scope: .global)
            #expect(list.count == rows.count, "\(unit)")
            for (row, info) in zip(rows, list) {
                #expect(info.id == row.0 && info.name == row.1 && info.unit == row.2 && info.minValue == row.3
                        && info.maxValue == row.4 && info.defaultValue == row.5, "\(unit): \(info)")
                #expect(try unit.parameter(row.0, scope: .global) == row.5)
            }
            #expect(throws: AudioUnitError.invalidParameter) { try unit.setParameter(AudioUnitParameterID(rows.count), 1, scope: .global) }
            #expect(throws: AudioUnitError.invalidParameter) { try unit.setParameter(0, .nan, scope: .global) }
            #expect(throws: AudioUnitError.invalidScope) { try unit.setParameter(0, 1, scope: .input) }
        }
        // The Nyquist bound follows the unit's rate.
        let highPass = HighPassFilterUnit()
        try highPass.setStreamFormat(.float32(sampleRate: 44_100, channels: 2), scope: .input, element: 0)
        #expect(try highPass.parameterInfo(HighPassFilterUnit.Parameter.cutoffFrequency, scope: .global).maxValue == 22_050)
        try highPass.setParameter(HighPassFilterUnit.Parameter.cutoffFrequency, 1e6, scope: .global)
        #expect(try highPass.parameter(HighPassFilterUnit.Parameter.cutoffFrequency, scope: .global) == 22_050)
        #expect(highPass.type == .highPassFilter && ParametricEQUnit().type == .parametricEQ)
    }
}

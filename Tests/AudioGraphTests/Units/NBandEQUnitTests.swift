// Tests, Units: the N-band EQ — each filter type against the cookbook, the EQ equal to the cascade of its bands, the band count property, bypass crossfades, extremes, Apple's parameter IDs.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("N-band EQ")
struct NBandEQUnitTests {
    typealias P = NBandEQUnit.Parameter
    static let butterworth = 0.7071067811865476

    /// The cookbook filter and width each FilterType is, for a band of `octaves` bandwidth.
    static func cookbook(_ type: NBandEQUnit.FilterType, octaves: Double) -> (Cookbook.Filter, Cookbook.Width) {
        switch type {
        case .parametric: return (.peakingEQ, .octaves(octaves))
        case .butterworthLowPass: return (.lpf, .q(butterworth))
        case .butterworthHighPass: return (.hpf, .q(butterworth))
        case .resonantLowPass: return (.lpf, .octaves(octaves))
        case .resonantHighPass: return (.hpf, .octaves(octaves))
        case .bandPass: return (.bpf, .octaves(octaves))
        case .bandStop: return (.notch, .octaves(octaves))
        case .lowShelf: return (.lowShelf, .q(butterworth))
        case .highShelf: return (.highShelf, .q(butterworth))
        case .resonantLowShelf: return (.lowShelf, .octaves(octaves))
        case .resonantHighShelf: return (.highShelf, .octaves(octaves))
        case .allPass: return (.apf, .octaves(octaves))
        }
    }

    /// Sets band `b` and takes it out of bypass.
    func setBand(_ eq: NBandEQUnit, _ b: Int, _ type: NBandEQUnit.FilterType, frequency: Float, gain: Float, octaves: Float) throws {
        let band = AudioUnitParameterID(b)
        try eq.setParameter(P.filterType + band, Float(type.rawValue), scope: .global)
        try eq.setParameter(P.frequency + band, frequency, scope: .global)
        try eq.setParameter(P.gain + band, gain, scope: .global)
        try eq.setParameter(P.bandwidth + band, octaves, scope: .global)
        try eq.setParameter(P.bypassBand + band, 0, scope: .global)
    }

    @Test(arguments: [1, 64, 256, 1000])
    func aNewEQPassesItsInputThroughBitForBit(slice: Int) throws {
        let eq = NBandEQUnit()
        let chain = try Chain([eq])
        let input = [noise(frames: 5000, seed: 1), noise(frames: 5000, seed: 2)]
        #expect(try chain.render(input, slice: slice) == input)
    }

    @Test(arguments: NBandEQUnit.FilterType.allCases)
    func eachFilterTypeIsTheCookbooksAtTwentyFrequencies(_ type: NBandEQUnit.FilterType) throws {
        for (frequency, gain, octaves) in [(Float(1000), Float(6), Float(1)), (150, -12, 0.3), (7000, 9, 2.5)] {
            let eq = NBandEQUnit(bands: 1)
            try setBand(eq, 0, type, frequency: frequency, gain: gain, octaves: octaves)
            let h = try impulseResponse(of: eq)
            let (filter, width) = Self.cookbook(type, octaves: Double(octaves))
            let reference = Cookbook.coefficients(filter, f0: Double(frequency), fs: 48_000, width: width, dBgain: Double(gain))
            let worst = worstDeviation(h) { Cookbook.magnitudeDB(reference, at: $0, fs: 48_000) }
            #expect(worst.dB <= 0.05, "\(type) \(frequency) Hz \(gain) dB \(octaves) oct: \(worst.dB) dB off at \(worst.at) Hz")
        }
    }

    /// Six bands, one of them bypassed, and a global gain.
    static let bands: [(NBandEQUnit.FilterType, Float, Float, Float)] = [
        (.butterworthHighPass, 40, 0, 0.5), (.lowShelf, 120, 4, 0.5), (.parametric, 700, -9, 0.7),
        (.bandStop, 2500, 0, 0.2), (.resonantHighShelf, 9000, -6, 1.5), (.allPass, 300, 0, 1),
    ]

    func cascadeEQ() throws -> NBandEQUnit {
        let eq = NBandEQUnit(bands: 8)
        for (b, band) in Self.bands.enumerated() { try setBand(eq, b, band.0, frequency: band.1, gain: band.2, octaves: band.3) }
        try eq.setParameter(P.bypassBand + 3, 1, scope: .global)  // the band-stop: out
        try eq.setParameter(P.globalGain, -3, scope: .global)
        return eq
    }

    @Test func theEQIsTheCascadeOfItsBandsBitForBit() throws {
        let chain = try Chain([try cascadeEQ()], channels: 3)
        let input = (0..<3).map { noise(frames: 8000, seed: 20 + UInt64($0)) }
        let output = try chain.render(input, slice: 256)
        let gain = Float(pow(10, -3.0 / 20))
        for c in 0..<3 {
            var signal = input[c]
            for (b, band) in Self.bands.enumerated() where b != 3 {
                let (_, width) = Self.cookbook(band.0, octaves: Double(band.3))
                let bandwidth: BiquadBandwidth
                switch width { case .q(let q): bandwidth = .q(q); case .octaves(let o): bandwidth = .octaves(o) }
                let response = NBandEQKernel.design(type: Float(band.0.rawValue)).response
                let coefficients = BiquadCoefficients64.design(response, frequency: band.1, bandwidth: bandwidth, gain: Double(band.2), sampleRate: 48_000)
                var memory = BiquadMemory64()
                var next = signal
                signal.withUnsafeBufferPointer { src in next.withUnsafeMutableBufferPointer { dst in
                    for start in stride(from: 0, to: 8000, by: 256) {
                        Biquad.process64(coefficients, &memory, input: src.baseAddress! + start, output: dst.baseAddress! + start,
                                         frames: min(256, 8000 - start))
                    }
                } }
                signal = next
            }
            #expect(output[c] == signal.map { $0 * gain }, "channel \(c)")
        }
    }

    @Test func theEQsResponseIsTheProductOfItsBandsResponses() throws {
        let h = try impulseResponse(of: try cascadeEQ())
        let worst = worstDeviation(h) { f in
            var db = -3.0
            for (b, band) in Self.bands.enumerated() where b != 3 {
                let (filter, width) = Self.cookbook(band.0, octaves: Double(band.3))
                db += Cookbook.magnitudeDB(Cookbook.coefficients(filter, f0: Double(band.1), fs: 48_000, width: width, dBgain: Double(band.2)),
                                           at: f, fs: 48_000)
            }
            return db
        }
        #expect(worst.dB <= 0.05, "\(worst.dB) dB off at \(worst.at) Hz")
    }

    @Test func numberOfBandsIsApplesProperty() throws {
        let eq = NBandEQUnit()
        #expect(eq.numberOfBands == 16)
        guard case .uint32(16) = try eq.getProperty(.nBandEQMaxNumberOfBands, scope: .global, element: 0) else { Issue.record("max"); return }
        try eq.setParameter(P.frequency + 2, 5000, scope: .global)
        try eq.setParameter(P.gain + 9, -4, scope: .global)
        try eq.setParameter(P.globalGain, 6, scope: .global)
        try eq.setProperty(.nBandEQNumberOfBands, scope: .global, element: 0, .uint32(4))
        guard case .uint32(4) = try eq.getProperty(.nBandEQNumberOfBands, scope: .global, element: 0) else { Issue.record("count"); return }
        #expect(eq.parameterList(scope: .global).count == 1 + 4 * 5)
        #expect(try eq.parameter(P.frequency + 2, scope: .global) == 5000, "bands that stay keep their values")
        #expect(try eq.parameter(P.globalGain, scope: .global) == 6)
        #expect(throws: AudioUnitError.invalidParameter) { try eq.setParameter(P.gain + 4, 1, scope: .global) }
        #expect(throws: AudioUnitError.invalidParameter) { try eq.parameter(P.gain + 9, scope: .global) }
        try eq.setNumberOfBands(10)
        #expect(try eq.parameter(P.gain + 9, scope: .global) == 0, "a band that comes back starts at the defaults")
        #expect(try eq.parameter(P.bypassBand + 9, scope: .global) == 1)
        // Refused, nothing changed.
        for bad: UInt32 in [0, 17, 1000] {
            #expect(throws: AudioUnitError.invalidPropertyValue) { try eq.setProperty(.nBandEQNumberOfBands, scope: .global, element: 0, .uint32(bad)) }
        }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try eq.setProperty(.nBandEQNumberOfBands, scope: .global, element: 0, .float64(4)) }
        #expect(throws: AudioUnitError.invalidScope) { try eq.setProperty(.nBandEQNumberOfBands, scope: .input, element: 0, .uint32(4)) }
        #expect(throws: AudioUnitError.propertyNotWritable) { try eq.setProperty(.nBandEQMaxNumberOfBands, scope: .global, element: 0, .uint32(4)) }
        #expect(throws: AudioUnitError.invalidProperty) { try LowPassFilterUnit().getProperty(.nBandEQNumberOfBands, scope: .global, element: 0) }
        #expect(eq.numberOfBands == 10)
        // Initialized: only the same count.
        let chain = try Chain([eq])
        #expect(throws: AudioUnitError.initialized) { try eq.setNumberOfBands(3) }
        try eq.setNumberOfBands(10)
        _ = try chain.render([noise(frames: 512, seed: 1), noise(frames: 512, seed: 2)])
    }

    @Test func applesParameterIDsNamesAndRanges() throws {
        let eq = NBandEQUnit()
        let list = eq.parameterList(scope: .global)
        #expect(list.count == 81)
        typealias Row = (AudioUnitParameterID, String, AudioUnitParameterUnit, Float, Float, Float)
        let rows: [Row] = [
            (0, "GlobalGain", .decibels, -96, 24, 0),
            (1000, "BypassBand0", .boolean, 0, 1, 1), (2000, "FilterType0", .indexed, 0, 11, 0),
            (3000, "Frequency0", .hertz, 20, 24_000, 1000), (4000, "Gain0", .decibels, -96, 24, 0),
            (5000, "Bandwidth0", .octaves, 0.05, 5, 0.5),
            (1015, "BypassBand15", .boolean, 0, 1, 1), (5015, "Bandwidth15", .octaves, 0.05, 5, 0.5),
        ]
        for row in rows {
            let info = try eq.parameterInfo(row.0, scope: .global)
            #expect(info.name == row.1 && info.unit == row.2 && info.minValue == row.3 && info.maxValue == row.4
                    && info.defaultValue == row.5, "\(info)")
        }
        #expect(throws: AudioUnitError.invalidParameter) { try eq.parameterInfo(1016, scope: .global) }
        #expect(NBandEQUnit.FilterType.allCases.map(\.rawValue) == Array(0...11))
        #expect(eq.type == .nBandEQ)
    }

    @Test func bypassCrossfadesInAndOutWithoutAClick() throws {
        // A +20 dB peak on a 1 kHz tone, switched in and out: ``clickiness`` stays the steady
        // tone's; the same switch as a scheduled immediate change is a click.
        func run(step: Bool) throws -> (steady: Float, change: Float, bypassed: [Float], tone: [Float]) {
            let eq = NBandEQUnit(bands: 2)
            try setBand(eq, 1, .parametric, frequency: 1000, gain: 20, octaves: 1)
            let chain = try Chain([eq], channels: 1)
            let tone = sine(frequency: 1000, frames: 9600, amplitude: 0.05)
            let before = try chain.render([tone])[0]
            if step { try eq.setParameter(P.bypassBand + 1, 1, scope: .global, bufferOffset: 0) }
            else { try eq.setParameter(P.bypassBand + 1, 1, scope: .global) }
            let out = try chain.render([tone])[0]
            let after = try chain.render([tone])[0]
            if step { try eq.setParameter(P.bypassBand + 1, 0, scope: .global, bufferOffset: 0) }
            else { try eq.setParameter(P.bypassBand + 1, 0, scope: .global) }
            let back = try chain.render([tone])[0]
            let steady = max(clickiness(before[4800...]), clickiness(after[...]), clickiness(back[4800...]))
            // The changes start on slice boundaries: measure across them.
            let switchingOut = Array(before.suffix(240)) + out.prefix(2400)
            let switchingIn = Array(after.suffix(240)) + back.prefix(2400)
            return (steady, max(clickiness(switchingOut[...]), clickiness(switchingIn[...])), after, tone)
        }
        let faded = try run(step: false), stepped = try run(step: true)
        #expect(faded.change <= faded.steady * 1.25, "crossfade \(faded.change), steady \(faded.steady)")
        #expect(stepped.change > faded.steady * 3, "the unsmoothed switch is a click the test sees: \(stepped.change)")
        #expect(faded.bypassed == faded.tone, "once faded out, the input passes through bit for bit")
    }

    @Test(arguments: NBandEQUnit.FilterType.allCases)
    func stableAndFiniteAtEveryParameterExtreme(_ type: NBandEQUnit.FilterType) throws {
        for rate in [48_000.0, 8_000] {
            for frequency: Float in [20, 1e9] {
                for gain: Float in [-96, 24] {
                    for octaves: Float in [0.05, 5] {
                        let eq = NBandEQUnit(bands: 1)
                        try eq.setStreamFormat(.float32(sampleRate: rate, channels: 2), scope: .output, element: 0)
                        try setBand(eq, 0, type, frequency: frequency, gain: gain, octaves: octaves)
                        try eq.setParameter(P.globalGain, 24, scope: .global)
                        let chain = try Chain([eq], channels: 2, sampleRate: rate)
                        let loud = try chain.render([noise(frames: 12_000, seed: 1), noise(frames: 12_000, seed: 2)])
                        let peak = loud.flatMap { $0 }.map { abs($0) }.max()!
                        let label = "\(type) \(frequency) Hz \(gain) dB \(octaves) oct at \(rate)"
                        #expect(loud.allSatisfy { $0.allSatisfy(\.isFinite) } && peak < 10_000, "\(label): peak \(peak)")
                        let quiet = try chain.render([[Float](repeating: 0, count: 12_000), [Float](repeating: 0, count: 12_000)])
                        #expect(!quiet.contains { $0.contains { $0.isSubnormal } }, "\(label): no subnormal numbers")
                    }
                }
            }
        }
    }

    @Test func aTypeChangeKeepsTheBandsMemory() throws {
        // Low-pass → low shelf at 0 dB... a type change redesigns from the same memory: a DC
        // level through a low-pass stays where it is when the band becomes a 0 dB shelf.
        let eq = NBandEQUnit(bands: 1)
        try setBand(eq, 0, .butterworthLowPass, frequency: 500, gain: 0, octaves: 1)
        let chain = try Chain([eq], channels: 1)
        _ = try chain.render([[Float](repeating: 0.5, count: 9600)])
        try eq.setParameter(P.filterType, Float(NBandEQUnit.FilterType.lowShelf.rawValue), scope: .global)
        let after = try chain.render([[Float](repeating: 0.5, count: 256)])[0]
        #expect(after.allSatisfy { abs($0 - 0.5) < 1e-4 }, "first sample after the change: \(after[0])")
    }
}

// Tests, Units: the generators — oscillator frequency and aliasing, sample-accurate ramps, white and pink noise spectra, the constant source.
import AudioGraph
import AudioGraphTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// IO ← generator: `frames` frames of its `channels`-channel output at `rate`.
func renderGenerator(_ unit: AudioUnit, frames: Int, channels: Int = 1, rate: Double = 48_000, slice: Int = 256,
                     before: ((OfflineRenderer) throws -> Void)? = nil) throws -> [[Float]] {
    let graph = AudioGraph()
    let io = IOUnit()
    let ioNode = try graph.addNode(io)
    let node = try graph.addNode(unit)
    try unit.setStreamFormat(.float32(sampleRate: rate, channels: UInt32(channels)), scope: .output, element: 0)
    try graph.connectNodeInput(node, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
    let renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: channels, sampleRate: rate)
    try graph.initialize()
    try graph.start()
    try before?(renderer)
    return try renderer.render(input: [], frameCount: frames, sliceFrames: slice)
}

/// An in-place iterative radix-2 FFT (Cooley–Tukey), for the tests' spectra.
func fft(_ re: inout [Double], _ im: inout [Double]) {
    let n = re.count
    var j = 0
    for i in 1..<n {
        var bit = n >> 1
        while j & bit != 0 { j ^= bit; bit >>= 1 }
        j |= bit
        if i < j { re.swapAt(i, j); im.swapAt(i, j) }
    }
    var length = 2
    while length <= n {
        let angle = -2 * Double.pi / Double(length)
        for start in stride(from: 0, to: n, by: length) {
            for k in 0..<(length / 2) {
                let wr = cos(angle * Double(k)), wi = sin(angle * Double(k))
                let a = start + k, b = a + length / 2
                let tr = re[b] * wr - im[b] * wi, ti = re[b] * wi + im[b] * wr
                re[b] = re[a] - tr; im[b] = im[a] - ti
                re[a] += tr; im[a] += ti
            }
        }
        length *= 2
    }
}

/// |X[k]|² for k = 0…n/2 of a real signal of power-of-two length n.
func powerSpectrum(_ x: ArraySlice<Float>, window: Bool = false) -> [Double] {
    let n = x.count
    var re = x.enumerated().map { i, v in Double(v) * (window ? 0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n)) : 1) }
    var im = [Double](repeating: 0, count: n)
    fft(&re, &im)
    return (0...(n / 2)).map { re[$0] * re[$0] + im[$0] * im[$0] }
}

@Suite("Generators: oscillator, noise, constant source")
struct GeneratorTests {
    typealias Osc = OscillatorUnit.Parameter

    func oscillator(_ waveform: OscillatorUnit.Waveform, frequency: Float, detune: Float = 0) throws -> OscillatorUnit {
        let unit = OscillatorUnit()
        try unit.setParameter(Osc.waveform, Float(waveform.rawValue), scope: .global)
        try unit.setParameter(Osc.frequency, frequency, scope: .global)
        try unit.setParameter(Osc.detune, detune, scope: .global)
        return unit
    }

    /// Frequency from rising zero crossings (linearly interpolated) over the whole signal.
    func zeroCrossingFrequency(_ x: [Float], rate: Double) -> Double {
        var crossings: [Double] = []
        for n in 1..<x.count where x[n - 1] < 0 && x[n] >= 0 {
            crossings.append(Double(n - 1) + Double(-x[n - 1]) / Double(x[n] - x[n - 1]))
        }
        return Double(crossings.count - 1) / (crossings.last! - crossings.first!) * rate
    }

    @Test(arguments: [(OscillatorUnit.Waveform.sine, Float(440), Float(0)), (.sine, 1234.5, 0), (.triangle, 440, 1200),
                      (.sine, 100, -700), (.triangle, 7000, 0)])
    func frequencyWithin0point01Percent(waveform: OscillatorUnit.Waveform, frequency: Float, detune: Float) throws {
        let unit = try oscillator(waveform, frequency: frequency, detune: detune)
        let out = try renderGenerator(unit, frames: 480_000)[0]  // 10 s
        let expected = Double(frequency) * pow(2, Double(detune) / 1200)
        let measured = zeroCrossingFrequency(out, rate: 48_000)
        #expect(abs(measured / expected - 1) < 1e-4, "\(waveform) \(frequency) Hz \(detune) cents: \(measured) Hz, expected \(expected)")
    }

    /// Energy at the bins that are not harmonics below the Nyquist frequency, relative to the
    /// fundamental's, in dB. The frequency is m × fs / 65536, so the signal is periodic in the
    /// 65,536-frame window: every harmonic and every alias lands on a bin (no window, no leakage).
    func aliasing(_ waveform: OscillatorUnit.Waveform, bin m: Int) throws -> (aliases: Double, worst: Double) {
        let n = 65_536
        let unit = try oscillator(waveform, frequency: Float(Double(m) * 48_000 / Double(n)))
        // Float rounds the frequency: recover the exact bin from the parameter as stored.
        let stored = Double(try unit.parameter(Osc.frequency, scope: .global)) * Double(n) / 48_000
        #expect(stored == Double(m), "frequency \(stored) bins: choose m so that it is exact in Float")
        let out = try renderGenerator(unit, frames: n)[0]
        let power = powerSpectrum(out[...])
        var harmonic = Set<Int>()
        var k = 1
        while k * m <= n / 2 { harmonic.insert(k * m); k += 1 }
        let fundamental = power[m]
        var aliasEnergy = 0.0, worst = 0.0
        for (bin, p) in power.enumerated() where !harmonic.contains(bin) && bin != 0 {
            aliasEnergy += p
            worst = max(worst, p)
        }
        return (10 * log10(aliasEnergy / fundamental + 1e-300), 10 * log10(worst / fundamental + 1e-300))
    }

    @Test(arguments: [OscillatorUnit.Waveform.sawtooth, .square, .triangle])
    func bandLimitedShapesDoNotAlias(waveform: OscillatorUnit.Waveform) throws {
        // 6827 bins = 5000.24 Hz, 1365 ≈ 999.8 Hz, 15019 ≈ 11.0 kHz, 137 ≈ 100.3 Hz, 21000 ≈ 15.4 kHz.
        for m in [6827, 1365, 15_019, 137, 21_000] {
            let (aliases, worst) = try aliasing(waveform, bin: m)
            #expect(aliases < -60, "\(waveform) at \(Double(m) * 48_000 / 65_536) Hz: non-harmonic energy \(aliases) dB (worst bin \(worst) dB)")
        }
    }

    @Test func bandLimitedShapesHaveWebAudiosHarmonics() throws {
        // 5 kHz at 48 kHz: harmonics 1…4 present with Web Audio's amplitudes, relative to the fundamental.
        let m = 6827
        let cases: [(OscillatorUnit.Waveform, [Double])] = [(.sawtooth, [1, 1 / 2, 1 / 3, 1 / 4]),
                                                            (.square, [1, 0, 1 / 3, 0]), (.triangle, [1, 0, 1 / 9, 0])]
        for (waveform, expected) in cases {
            let unit = try oscillator(waveform, frequency: Float(Double(m) * 48_000 / 65_536))
            let power = powerSpectrum(try renderGenerator(unit, frames: 65_536)[0][...])
            for (i, amplitude) in expected.enumerated() {
                let measured = (power[(i + 1) * m] / power[m]).squareRoot()
                #expect(abs(measured - amplitude) < 1e-3, "\(waveform) harmonic \(i + 1): \(measured), expected \(amplitude)")
            }
            // The fundamental's amplitude itself: 2/π (saw), 4/π (square), 8/π² (triangle).
            let fundamental = (power[m]).squareRoot() * 2 / 65_536
            let b1 = waveform == .sawtooth ? 2 / Double.pi : waveform == .square ? 4 / Double.pi : 8 / (Double.pi * Double.pi)
            #expect(abs(fundamental - b1) < 1e-3, "\(waveform) fundamental \(fundamental), expected \(b1)")
        }
    }

    @Test func frequencyRampIsSampleAccurate() throws {
        let unit = try oscillator(.sine, frequency: 200)
        let start = 100, duration = 24_000, frames = 48_000
        let out = try renderGenerator(unit, frames: frames, slice: 256) { _ in
            try unit.scheduleParameter(AudioUnitParameterEvent(id: Osc.frequency, scope: .global, bufferOffset: start,
                                                               .linearRamp(to: 2000, durationFrames: duration)))
        }[0]
        // The frequency in force from frame f to f + 1, as the automation defines a ramp:
        // 200 + 1800 × (f − start + 1) / duration, clamped to the ramp.
        var phase = 0.0, worst: Float = 0
        for f in 0..<frames {
            worst = max(worst, abs(out[f] - Float(sin(2 * Double.pi * phase))))
            let progress = min(1, max(0, Double(f - start + 1) / Double(duration)))
            phase += (f < start ? 200 : 200 + 1800 * progress) / 48_000
            phase -= phase.rounded(.down)
        }
        #expect(worst < 1e-4, "largest deviation from the integrated ramp: \(worst)")
    }

    @Test func detuneRampAndAmplitude() throws {
        let unit = try oscillator(.sine, frequency: 440)
        try unit.setParameter(Osc.amplitude, 0.25, scope: .global)
        let out = try renderGenerator(unit, frames: 96_000) { renderer in
            _ = try renderer.render(input: [], frameCount: 48_000)
            try unit.scheduleParameter(AudioUnitParameterEvent(id: Osc.detune, scope: .global, .target(1200, timeConstant: 0.01)))
        }[0]
        let peak = out.map(abs).max()!
        #expect(abs(peak - 0.25) < 1e-4, "amplitude 0.25: peak \(peak)")
        let settled = zeroCrossingFrequency(Array(out[24_000...]), rate: 48_000)
        #expect(abs(settled / 880 - 1) < 1e-4, "+1200 cents: \(settled) Hz")
    }

    @Test func everyChannelCarriesTheSameSignal() throws {
        for unit in [try oscillator(.sawtooth, frequency: 1000) as AudioUnit, NoiseUnit(), ConstantSourceUnit()] {
            let out = try renderGenerator(unit, frames: 4096, channels: 3)
            #expect(out[1] == out[0] && out[2] == out[0], "\(unit)")
            #expect(out[0].contains { $0 != 0 })
        }
    }

    @Test func whiteNoiseIsUniformDeterministicAndFlat() throws {
        let a = try renderGenerator(NoiseUnit(), frames: 1 << 19)[0]
        let b = try renderGenerator(NoiseUnit(), frames: 1 << 19, slice: 77)[0]
        #expect(a == b, "the same seed: the same samples, whatever the slicing")
        let other = NoiseUnit()
        try other.setParameter(NoiseUnit.Parameter.seed, 12_345, scope: .global)
        let c = try renderGenerator(other, frames: 4096)[0]
        #expect(c != Array(a[..<4096]), "another seed, another sequence")
        #expect(a.allSatisfy { $0 >= -1 && $0 < 1 })
        let mean = a.reduce(0.0) { $0 + Double($1) } / Double(a.count)
        #expect(abs(mean) < 0.005 && abs(rms(a[...]) - (1.0 / 3).squareRoot()) < 0.005, "uniform: mean \(mean), RMS \(rms(a[...]))")
        let bands = octaveBandDensities(a)
        for (i, d) in bands.enumerated() {
            #expect(abs(d - bands[0]) < 1, "flat: band \(i) at \(d - bands[0]) dB from the first")
        }
    }

    /// Mean power spectral density (dB) in the octaves 375–750, 750–1500, 1500–3000, 3000–6000,
    /// 6000–12000 Hz: Welch's method, 4096-point Hann-windowed segments.
    func octaveBandDensities(_ x: [Float]) -> [Double] {
        let n = 4096
        var psd = [Double](repeating: 0, count: n / 2 + 1)
        var segments = 0
        for start in stride(from: 0, through: x.count - n, by: n / 2) {
            let p = powerSpectrum(x[start..<(start + n)], window: true)
            for k in psd.indices { psd[k] += p[k] }
            segments += 1
        }
        let binHz = 48_000.0 / Double(n)
        return [375.0, 750, 1500, 3000, 6000].map { low in
            let bins = Int((low / binHz).rounded())..<Int((2 * low / binHz).rounded())
            return 10 * log10(bins.reduce(0.0) { $0 + psd[$1] } / Double(bins.count) / Double(segments))
        }
    }

    @Test func pinkNoiseFallsThreeDecibelsPerOctave() throws {
        let unit = NoiseUnit()
        try unit.setParameter(NoiseUnit.Parameter.color, Float(NoiseUnit.Color.pink.rawValue), scope: .global)
        let pink = try renderGenerator(unit, frames: 1 << 19)[0]
        let bands = octaveBandDensities(pink)
        for i in 1..<bands.count {
            let slope = bands[i] - bands[i - 1]
            #expect(abs(slope + 3) < 1, "octave \(i): \(slope) dB, expected −3 ± 1")
        }
        let overall = (bands.last! - bands.first!) / Double(bands.count - 1)
        #expect(abs(overall + 3) < 0.25, "over four octaves: \(overall) dB per octave")
        #expect(abs(decibels(rms(pink[...]) / (1.0 / 3).squareRoot())) < 0.5, "pink has white's RMS: \(rms(pink[...]))")
    }

    @Test func constantSourceIsExactAndStepsOnItsFrame() throws {
        let unit = ConstantSourceUnit()
        var out = try renderGenerator(unit, frames: 1000, channels: 2)
        #expect(out.allSatisfy { $0.allSatisfy { $0 == 1 } }, "default Offset 1, exactly")
        let stepped = ConstantSourceUnit()
        try stepped.setParameter(ConstantSourceUnit.Parameter.offset, -0.3, scope: .global)
        out = try renderGenerator(stepped, frames: 2048, slice: 512) { renderer in
            _ = try renderer.render(input: [], frameCount: 512)
            try stepped.setParameter(ConstantSourceUnit.Parameter.offset, 0.75, scope: .global, bufferOffset: 100)
            try stepped.scheduleParameter(AudioUnitParameterEvent(id: ConstantSourceUnit.Parameter.offset, scope: .global,
                                                                  bufferOffset: 600, .linearRamp(to: 0.25, durationFrames: 500)))
        }
        let x = out[0]
        #expect(x[..<100].allSatisfy { $0 == -0.3 } && x[100..<600].allSatisfy { $0 == 0.75 }, "a step on frame 100, exact")
        var worst: Float = 0
        for f in 600..<1100 { worst = max(worst, abs(x[f] - (0.75 - 0.5 * Float(f - 600 + 1) / 500))) }
        #expect(worst < 1e-6, "a linear ramp frame by frame: \(worst)")
        #expect(x[1100...].allSatisfy { $0 == 0.25 })
        // Any finite value, Web Audio's whole Float range.
        try stepped.setParameter(ConstantSourceUnit.Parameter.offset, -1000, scope: .global)
        #expect(try stepped.parameter(ConstantSourceUnit.Parameter.offset, scope: .global) == -1000)
        let info = try stepped.parameterInfo(ConstantSourceUnit.Parameter.offset, scope: .global)
        #expect(info.minValue == -.greatestFiniteMagnitude && info.maxValue == .greatestFiniteMagnitude && info.defaultValue == 1)
        #expect(throws: AudioUnitError.invalidParameter) { try stepped.setParameter(ConstantSourceUnit.Parameter.offset, .infinity, scope: .global) }
    }

    @Test func waveformIsAChoice() throws {
        let unit = OscillatorUnit()
        try unit.setParameter(Osc.waveform, 2.4, scope: .global)
        #expect(try unit.parameter(Osc.waveform, scope: .global) == 2, "indexed: rounded")
        try unit.setParameter(Osc.waveform, 9, scope: .global)
        #expect(try unit.parameter(Osc.waveform, scope: .global) == 3, "clamped to triangle")
        #expect(throws: AudioUnitError.invalidParameter) {
            try unit.scheduleParameter(AudioUnitParameterEvent(id: Osc.waveform, scope: .global, .linearRamp(to: 1, durationFrames: 10)))
        }
        #expect(try unit.parameterInfo(Osc.frequency, scope: .global).maxValue == 24_000)
        #expect(unit.elementCount(.input) == 0)
    }

    @Test func oscillatorStaysFiniteAtTheExtremes() throws {
        for (f, d) in [(Float(0), Float(0)), (24_000, 0), (1, -153_600), (440, 153_600), (23_999, 1)] {
            for waveform in OscillatorUnit.Waveform.allCases {
                let out = try renderGenerator(try oscillator(waveform, frequency: f, detune: d), frames: 2048)[0]
                #expect(out.allSatisfy { $0.isFinite && abs($0) < 1.2 }, "\(waveform) \(f) Hz \(d) cents")
            }
        }
    }
}

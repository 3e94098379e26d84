// Tests, Observers: the analyser against the Web Audio formulas — peak bin and level, smoothing, bytes, time data, errors.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `|Σ w[n]·e^(−2πi·δn/N)|` for the Blackman window of N points: the window's spectrum `δ` bins
/// from its centre.
func blackmanSpectrum(offset delta: Double, size n: Int) -> Double {
    var re = 0.0, im = 0.0
    for i in 0..<n {
        let x = 2 * Double.pi * Double(i) / Double(n)
        let w = 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x)
        re += w * cos(2 * Double.pi * delta * Double(i) / Double(n))
        im -= w * sin(2 * Double.pi * delta * Double(i) / Double(n))
    }
    return (re * re + im * im).squareRoot()
}

/// `|(1/N)·Σ x[n]·w[n]·e^(−2πi·kn/N)|` in Double: bin `k` of the windowed frames, as Web Audio defines it.
func windowedBin(_ x: [Float], bin k: Int) -> Double {
    let n = x.count
    var re = 0.0, im = 0.0
    for i in 0..<n {
        let t = 2 * Double.pi * Double(i) / Double(n)
        let v = Double(x[i]) * (0.42 - 0.5 * cos(t) + 0.08 * cos(2 * t))
        re += v * cos(Double(k) * t)
        im -= v * sin(Double(k) * t)
    }
    return (re * re + im * im).squareRoot() / Double(n)
}

/// IO input → IO output, `channels` channels at 48 kHz, with an analyser on the device input.
func analysedChain(channels: Int = 1, fftSize: Int = 2048, smoothing: Double = 0) throws -> (Chain, Analyser) {
    let chain = try Chain([], channels: channels)
    let analyser = try chain.graph.installAnalyser(on: chain.ioNode, element: IOUnit.inputElement, fftSize: fftSize,
                                                   smoothingTimeConstant: smoothing)
    return (chain, analyser)
}

@Suite("Analyser")
struct AnalyserTests {
    /// A 1 kHz sine (amplitude 0.5): the peak bin is 1 kHz ± one bin, its level within 0.5 dB of
    /// the windowed peak `(A/2)·|W(δ)|/N` (δ: the bin's distance from 1 kHz) and within 0.01 dB of
    /// the windowed DFT of the same frames computed here.
    @Test(arguments: [256, 2048, 32_768])
    func sinePeakBinAndLevel(fftSize: Int) throws {
        let (chain, analyser) = try analysedChain(fftSize: fftSize)
        let frames = fftSize + 4096
        let x = sine(frequency: 1000, frames: frames, amplitude: 0.5)
        _ = try chain.render([x], slice: 256)
        let data = analyser.floatFrequencyData()
        #expect(data.count == fftSize / 2 && analyser.frequencyBinCount == fftSize / 2)
        let peak = data.indices.max { data[$0] < data[$1] }!
        let binWidth = 48_000 / Double(fftSize)
        #expect(abs(analyser.frequency(ofBin: peak) - 1000) <= binWidth, "peak at \(analyser.frequency(ofBin: peak)) Hz")
        let delta = Double(peak) - 1000 / binWidth
        let expected = 20 * log10(0.25 * blackmanSpectrum(offset: delta, size: fftSize) / Double(fftSize))
        let exact = 20 * log10(windowedBin(Array(x.suffix(fftSize)), bin: peak))
        print("analyser N = \(fftSize): peak bin \(peak) (\(analyser.frequency(ofBin: peak)) Hz) at \(data[peak]) dB; windowed peak \(expected) dB, DFT \(exact) dB")
        #expect(abs(Double(data[peak]) - expected) <= 0.5)
        #expect(abs(Double(data[peak]) - exact) <= 0.01)
    }

    /// A full-scale sine centred on bin 43 reads 20·log10(0.42/2) = −13.56 dB there.
    @Test func binCentredSineReadsTheWindowsMean() throws {
        let (chain, analyser) = try analysedChain(fftSize: 2048)
        let f = 43 * 48_000.0 / 2048
        _ = try chain.render([sine(frequency: f, frames: 8192, amplitude: 1)], slice: 256)
        let data = analyser.floatFrequencyData()
        #expect(abs(Double(data[43]) - 20 * log10(0.21)) <= 0.05, "\(data[43]) dB")
    }

    /// Smoothing per Web Audio: X̂ = τ·X̂_previous + (1 − τ)·|X|. With τ = 0.75, the first reading
    /// is the unsmoothed one + 20·log10(0.25) in every bin; after a window of silence, the
    /// previous one + 20·log10(0.75); a call with no new frames returns the same data without
    /// smoothing again.
    @Test func smoothingFollowsTheWebAudioFormula() throws {
        let (chain, raw) = try analysedChain(fftSize: 1024, smoothing: 0)
        let smoothed = try chain.graph.installAnalyser(on: chain.ioNode, element: IOUnit.inputElement, fftSize: 1024,
                                                       smoothingTimeConstant: 0.75)
        _ = try chain.render([noise(frames: 4096, seed: 9)], slice: 256)
        let unsmoothed = raw.floatFrequencyData(), first = smoothed.floatFrequencyData()
        for k in 0..<512 { #expect(abs(first[k] - (unsmoothed[k] + Float(20 * log10(0.25)))) <= 1e-3, "bin \(k)") }
        #expect(smoothed.floatFrequencyData() == first, "no new frames: the same data")
        _ = try chain.render([[Float](repeating: 0, count: 1024)], slice: 256)
        let second = smoothed.floatFrequencyData()
        for k in 0..<512 { #expect(abs(second[k] - (first[k] + Float(20 * log10(0.75)))) <= 1e-3, "bin \(k)") }
        #expect(raw.floatFrequencyData().allSatisfy { $0 == -.infinity }, "silence reads −∞ unsmoothed")
    }

    /// Byte data: ⌊255/(max − min)·(Y − min)⌋ clamped; time-domain bytes ⌊128·(1 + x)⌋.
    @Test func byteData() throws {
        let (chain, analyser) = try analysedChain(fftSize: 512)
        try analyser.setDecibelRange(minDecibels: -90, maxDecibels: -10)
        _ = try chain.render([sine(frequency: 3000, frames: 2048, amplitude: 0.8)], slice: 256)
        let decibels = analyser.floatFrequencyData(), bytes = analyser.byteFrequencyData()
        var clampedLow = 0, clampedHigh = 0
        for k in 0..<256 {
            let expected = max(0, min(255, (255 / 80 * (Double(decibels[k]) + 90)).rounded(.down)))
            #expect(Double(bytes[k]) == expected, "bin \(k): \(decibels[k]) dB → \(bytes[k])")
            if expected == 0 { clampedLow += 1 } else if expected == 255 { clampedHigh += 1 }
        }
        #expect(clampedHigh == 0 && bytes.max()! > 200, "the peak near the top, not clipped")
        var time = [UInt8](repeating: 0, count: 512)
        analyser.getByteTimeDomainData(&time)
        let frames = analyser.floatTimeDomainData()
        for i in 0..<512 { #expect(Double(time[i]) == max(0, min(255, (128 * (1 + Double(frames[i]))).rounded(.down)))) }
    }

    /// Time-domain data: the latest fftSize frames exactly, the channels' average on stereo,
    /// zeros before the first frame; a shorter array gets the first values.
    @Test func timeDomainDataIsTheLatestFrames() throws {
        let (chain, analyser) = try analysedChain(channels: 2, fftSize: 1024)
        var early = analyser.floatTimeDomainData()
        #expect(early == [Float](repeating: 0, count: 1024))
        let left = noise(frames: 700, seed: 1), right = noise(frames: 700, seed: 2)
        _ = try chain.render([left, right], slice: 100)
        early = analyser.floatTimeDomainData()
        #expect(Array(early[0..<324]) == [Float](repeating: 0, count: 324))
        #expect(Array(early[324...]) == zip(left, right).map { ($0 + $1) * 0.5 })
        let more = noise(frames: 3000, seed: 3)
        _ = try chain.render([more, more], slice: 256)
        #expect(analyser.floatTimeDomainData() == Array(more.suffix(1024)))
        var short = [Float](repeating: 9, count: 10)
        analyser.getFloatTimeDomainData(&short)
        #expect(short == Array(more.suffix(1024).prefix(10)))
        #expect(analyser.framesSeen == 3700)
    }

    /// Settings out of bounds are refused with invalidPropertyValue (Web Audio's IndexSizeError)
    /// and change nothing; a new size applies to the next reading.
    @Test func badSettingsAreRefused() throws {
        let (chain, analyser) = try analysedChain(fftSize: 2048, smoothing: 0.8)
        let graph = chain.graph, io = chain.ioNode
        for size in [0, 16, 31, 100, 2047, 65_536] {
            #expect(throws: AudioUnitError.invalidPropertyValue) { _ = try graph.installAnalyser(on: io, element: 1, fftSize: size) }
            #expect(throws: AudioUnitError.invalidPropertyValue) { try analyser.setFFTSize(size) }
        }
        for tau in [-0.1, 1.1, .nan] {
            #expect(throws: AudioUnitError.invalidPropertyValue) { _ = try graph.installAnalyser(on: io, element: 1, smoothingTimeConstant: tau) }
            #expect(throws: AudioUnitError.invalidPropertyValue) { try analyser.setSmoothingTimeConstant(tau) }
        }
        for (low, high) in [(-30.0, -30.0), (-10, -100), (-.infinity, 0), (-100, .nan)] {
            #expect(throws: AudioUnitError.invalidPropertyValue) {
                _ = try graph.installAnalyser(on: io, element: 1, minDecibels: low, maxDecibels: high)
            }
            #expect(throws: AudioUnitError.invalidPropertyValue) { try analyser.setDecibelRange(minDecibels: low, maxDecibels: high) }
        }
        #expect(throws: AudioUnitError.invalidElement) { _ = try graph.installAnalyser(on: io, element: 2) }
        #expect(throws: AudioUnitError.nodeNotFound) { _ = try graph.installAnalyser(on: AUNode(rawValue: 999)) }
        #expect(analyser.fftSize == 2048 && analyser.smoothingTimeConstant == 0.8)
        #expect(analyser.minDecibels == -100 && analyser.maxDecibels == -30)
        for size in [32, 32_768] {
            try analyser.setFFTSize(size)
            #expect(analyser.floatFrequencyData().count == size / 2)
        }
    }

    /// Removed, an analyser sees no more frames and keeps its last readings.
    @Test func removedAnalyserStopsSeeingFrames() throws {
        let (chain, analyser) = try analysedChain(fftSize: 256)
        _ = try chain.render([noise(frames: 512, seed: 4)], slice: 256)
        let before = analyser.floatTimeDomainData()
        try chain.graph.removeAnalyser(analyser)
        try chain.graph.removeAnalyser(analyser)
        _ = try chain.render([noise(frames: 512, seed: 5)], slice: 256)
        #expect(analyser.framesSeen == 512 && analyser.floatTimeDomainData() == before)
    }
}

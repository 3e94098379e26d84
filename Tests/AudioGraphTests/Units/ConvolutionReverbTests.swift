// Tests, Units: the convolution reverb through the offline renderer — accuracy, latency, mix, files, swaps, errors.
import CSndFile
import Foundation
import Synchronization
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

/// A unit with `response` loaded, in IO → unit → IO at 48 kHz, stereo.
func convolverChain(_ response: [[Float]], sampleRate: Double = 48_000, channels: Int = 2) throws -> (Chain, ConvolutionReverbUnit) {
    let unit = ConvolutionReverbUnit()
    try unit.setImpulseResponse(response, sampleRate: sampleRate)
    return (try Chain([unit], channels: channels), unit)
}

/// A Float64 property (Latency, TailTime) in seconds.
func seconds(_ unit: AudioUnit, _ property: AudioUnitPropertyID) throws -> Double? {
    guard case .float64(let value) = try unit.getProperty(property, scope: .global, element: 0) else { return nil }
    return value
}

/// The largest step between consecutive samples in `x[range]`.
func largestStep(_ x: [Float], _ range: Range<Int>) -> Float {
    var step: Float = 0
    for n in range.dropFirst() { step = max(step, abs(x[n] - x[n - 1])) }
    return step
}

/// The longest run of consecutive samples below `threshold` in magnitude within `x[range]`.
func longestQuietRun(_ x: [Float], _ range: Range<Int>, below threshold: Float) -> Int {
    var run = 0, longest = 0
    for n in range { run = abs(x[n]) < threshold ? run + 1 : 0; longest = max(longest, run) }
    return longest
}

@Suite("Convolution reverb")
struct ConvolutionReverbTests {
    /// Noise through the graph at several slice sizes against the direct convolution computed
    /// here: within 1e-5 of the reference's peak (and RMS).
    @Test(arguments: [64, 256, 1000])
    func matchesDirectConvolutionThroughTheGraph(slice: Int) throws {
        let left = decayingNoise(frames: 4000, seed: 21), right = decayingNoise(frames: 4000, seed: 22)
        let (chain, _) = try convolverChain([left, right])
        let x = [noise(frames: 9600, seed: 1), noise(frames: 9600, seed: 2)]
        let y = try chain.render(x, slice: slice)
        for c in 0..<2 {
            let errors = relativeErrors(y[c], directConvolution(x[c], c == 0 ? left : right, frames: 9600))
            print("convolution reverb, slice \(slice), channel \(c): peak error \(errors.peak), RMS error \(errors.rms)")
            #expect(errors.peak <= 1e-5)
            #expect(errors.rms <= 1e-5)
        }
    }

    /// No added latency: an impulse in gives the response out from frame 0; the Latency property
    /// reads 0 and TailTime the response's length.
    @Test func impulseInGivesTheResponseOutFromFrameZero() throws {
        let h = decayingNoise(frames: 3000, seed: 4)
        let (chain, unit) = try convolverChain([h])
        var x = [Float](repeating: 0, count: 6000)
        x[0] = 1
        let y = try chain.render([x, x], slice: 256)
        #expect(y[0][0] == h[0] && y[1][0] == h[0], "frame 0 is the response's first frame, exactly (the head)")
        let errors = relativeErrors(Array(y[0][0..<3000]), h.map(Double.init))
        #expect(errors.peak <= 1e-6, "peak error \(errors.peak)")
        #expect(y[0][3000...].allSatisfy { abs($0) <= 1e-6 }, "nothing after the response")
        #expect(try seconds(unit, .latency) == 0)
        #expect(try seconds(unit, .tailTime) == 3000.0 / 48_000)
    }

    /// DryWetMix and Gain: 0 % is the input exactly, 50 % half of each, Gain scales everything;
    /// a change ramps across one slice (no step).
    @Test func dryWetMixAndGain() throws {
        let h = decayingNoise(frames: 1000, seed: 8)
        let (chain, unit) = try convolverChain([h])
        let x = noise(frames: 4096, seed: 3)
        let wet = directConvolution(x, h, frames: 4096)
        try unit.setParameter(ConvolutionReverbUnit.Parameter.dryWetMix, 0, scope: .global, element: 0, bufferOffset: 0)
        var y = try chain.render([x, x], slice: 256)
        #expect(y[0] == x, "0 % mix is the input bit for bit")
        // A fresh chain per setting, so the references start from silence too.
        func rendered(mix: Float, gain: Float) throws -> [Float] {
            let (chain, unit) = try convolverChain([h])
            try unit.setParameter(ConvolutionReverbUnit.Parameter.dryWetMix, mix, scope: .global, element: 0, bufferOffset: 0)
            try unit.setParameter(ConvolutionReverbUnit.Parameter.gain, gain, scope: .global, element: 0, bufferOffset: 0)
            return try chain.render([x, x], slice: 256)[0]
        }
        y[0] = try rendered(mix: 50, gain: 0)
        var e = relativeErrors(y[0], zip(x, wet).map { 0.5 * Double($0) + 0.5 * $1 })
        #expect(e.peak <= 1e-5, "50 %: peak error \(e.peak)")
        y[0] = try rendered(mix: 100, gain: 20)
        e = relativeErrors(y[0], wet.map { 10 * $0 })
        #expect(e.peak <= 1e-5, "+20 dB: peak error \(e.peak)")
        // A change set without an offset glides across the next slice: the largest step stays
        // the signal's own.
        let (glide, glideUnit) = try convolverChain([[1]])
        let tone = sine(frequency: 440, frames: 2048)
        let before = try glide.render([Array(tone[0..<1024]), Array(tone[0..<1024])], slice: 256)[0]
        try glideUnit.setParameter(ConvolutionReverbUnit.Parameter.gain, -20, scope: .global)
        let after = try glide.render([Array(tone[1024...]), Array(tone[1024...])], slice: 256)[0]
        let joined = before + after
        #expect(largestStep(joined, 1000..<1300) <= largestStep(tone, 0..<2048) * 1.01)
        #expect(abs(after[300] - tone[1324] * 0.1) < 1e-6, "at −20 dB after the ramp")
    }

    /// A response file at 44.1 kHz (a decaying 1 kHz sine written with libsndfile) loaded into a
    /// 48 kHz unit is resampled and scaled by 44.1/48: the impulse response out is the same
    /// function sampled at 48 kHz, from frame 0.
    @Test func responseFileAtAnotherRateIsResampled() throws {
        let path = NSTemporaryDirectory() + "ir-44100-\(getpid()).wav"
        defer { unlink(path) }
        let tau = 0.02, f0 = 1000.0
        func h(_ t: Double) -> Double { exp(-t / tau) * sin(2 * Double.pi * f0 * t) }
        writeWAV(path, [(0..<4410).map { Float(h(Double($0) / 44_100)) }], sampleRate: 44_100)
        let unit = ConvolutionReverbUnit()
        try unit.loadImpulseResponse(contentsOf: path)
        #expect(unit.impulseResponse?.frames == 4410 && unit.impulseResponse?.sampleRate == 44_100 && unit.impulseResponse?.channels == 1)
        #expect(try seconds(unit, .tailTime) == 0.1)
        let chain = try Chain([unit])
        var x = [Float](repeating: 0, count: 9600)
        x[0] = 1
        let y = try chain.render([x, x], slice: 256)[0]
        // The expected response at 48 kHz; the first and last 2 ms (the resampler's filter
        // meeting the response's ends) are left out of the comparison.
        let expected = (0..<4800).map { 44_100.0 / 48_000 * h(Double($0) / 48_000) }
        let errors = relativeErrors(Array(y[96..<4700]), Array(expected[96..<4700]))
        print("response resampled 44.1 → 48 kHz: peak error \(errors.peak), RMS error \(errors.rms)")
        #expect(errors.peak <= 1e-3)
        #expect(abs(y[10] - Float(expected[10])) <= 2e-3, "no delay: frame 10 is the response's frame 10")
        #expect(y[4900...].allSatisfy { abs($0) < 1e-3 }, "no tail beyond the response")
    }

    /// A format change (the graph at 44.1 kHz, the unit made at 48 kHz) prepares the kept
    /// response again for the new rate: a 44.1 kHz response then needs no resampling.
    @Test func formatChangePreparesTheResponseAgain() throws {
        let unit = ConvolutionReverbUnit()
        try unit.setImpulseResponse([[1, 0.5, -0.25]], sampleRate: 44_100)
        let chain = try Chain([unit], sampleRate: 44_100)
        var x = [Float](repeating: 0, count: 512)
        x[0] = 1
        let y = try chain.render([x, x], slice: 128)[0]
        #expect(Array(y[0..<4]) == [1, 0.5, -0.25, 0])
        #expect(unit.swapCount == 1, "only the 44.1 kHz convolution was taken")
    }

    /// Replacing the response while a sine plays: no gap (no run of near-zero samples), no step
    /// larger than the two signals' own, and after the crossfade exactly the new response's
    /// output (the new convolution continued the old one's input stream).
    @Test(arguments: [(256, 8192), (100, 8205)])
    func replacingTheResponseWhileRunningHasNoGap(slice: Int, swapFrame: Int) throws {
        let first = decayingNoise(frames: 4000, seed: 31), second = decayingNoise(frames: 2000, seed: 32)
        let frames = 16_384
        let tone = sine(frequency: 1000, frames: frames)
        let (chain, unit) = try convolverChain([first])
        var y = try chain.render([Array(tone[0..<swapFrame]), Array(tone[0..<swapFrame])], slice: slice)[0]
        try unit.setImpulseResponse([second], sampleRate: 48_000)
        y += try chain.render([Array(tone[swapFrame...]), Array(tone[swapFrame...])], slice: slice)[0]
        #expect(unit.swapCount == 2)
        let withFirst = directConvolution(tone, first, frames: frames).map(Float.init)
        let withSecond = directConvolution(tone, second, frames: frames).map(Float.init)
        // Steady state from 0.1 s on: the responses are shorter.
        let region = 4800..<frames
        let ownStep = max(largestStep(withFirst, region), largestStep(withSecond, region))
        let peak = withSecond[region].map(abs).max()!
        let step = largestStep(y, region), quiet = longestQuietRun(y, region, below: peak * 1e-3)
        print("swap at \(swapFrame): largest step \(step) (the signals' own: \(ownStep)), longest run below 1e-3 × peak: \(quiet)")
        #expect(step <= ownStep * 1.05)
        #expect(quiet <= 2, "no gap")
        // Before the swap: the first response; from the end of the crossfade (and the slice it
        // ends in): the second, exactly.
        let settled = swapFrame + ConvolutionReverbUnit.crossfadeFrames + slice
        var e = relativeErrors(Array(y[region.lowerBound..<swapFrame]), withFirst[region.lowerBound..<swapFrame].map(Double.init))
        #expect(e.peak <= 1e-5, "before: peak error \(e.peak)")
        e = relativeErrors(Array(y[settled...]), withSecond[settled...].map(Double.init))
        #expect(e.peak <= 1e-5, "after: peak error \(e.peak)")
    }

    /// Another thread renders a sine through the convolver (with an analyser on it) as a driver
    /// would, while this one swaps responses (each once the previous was taken), changes the mix
    /// and reads the analyser: every swap is taken, nothing non-finite comes out, and no gap
    /// (ThreadSanitizer runs this too).
    @Test func swapsAndReadingsWhileAnotherThreadRenders() throws {
        let short = [decayingNoise(frames: 1500, seed: 41)], long = [decayingNoise(frames: 6000, seed: 42), decayingNoise(frames: 6000, seed: 43)]
        let (chain, unit) = try convolverChain(long)
        let analyser = try chain.graph.installAnalyser(on: chain.nodes[0], fftSize: 1024)
        let context = chain.graph.renderContext
        let stop = Atomic<Bool>(false), finished = Atomic<Bool>(false)
        let outcome = Mutex<(frames: Int, nonFinite: Int, quietRun: Int)>((0, 0, 0))
        let renderer = Thread {
            let slice = 256
            let input = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2)
            let output = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2)
            for c in 0..<2 { input[c] = .allocate(capacity: slice); output[c] = .allocate(capacity: slice) }
            var frames = 0, nonFinite = 0, run = 0, longest = 0
            while !stop.load(ordering: .relaxed) || frames < 48_000 {
                for f in 0..<slice {
                    let x = 0.5 * Float(sin(2 * Double.pi * 1000 * Double(frames + f) / 48_000))
                    input[0][f] = x; input[1][f] = x
                }
                context.render(frameCount: slice, input: input, inputChannelCount: 2, output: output, outputChannelCount: 2)
                for f in 0..<slice {
                    let y = output[0][f]
                    if !y.isFinite { nonFinite += 1 }
                    run = abs(y) < 1e-4 ? run + 1 : 0
                    if frames + f >= 9600 { longest = max(longest, run) }
                }
                frames += slice
            }
            for c in 0..<2 { input[c].deallocate(); output[c].deallocate() }
            input.deallocate(); output.deallocate()
            outcome.withLock { $0 = (frames, nonFinite, longest) }
            finished.store(true, ordering: .releasing)
        }
        renderer.start()
        for i in 0..<40 {
            let before = unit.swapCount
            try unit.setImpulseResponse(i % 2 == 0 ? short : long, sampleRate: 48_000)
            try unit.setParameter(ConvolutionReverbUnit.Parameter.dryWetMix, Float(50 + i % 51), scope: .global)
            _ = analyser.floatFrequencyData()
            // Until the render thread has taken it (a newer one would replace it untaken).
            for _ in 0..<2000 where unit.swapCount == before { usleep(500) }
        }
        stop.store(true, ordering: .relaxed)
        while !finished.load(ordering: .acquiring) { usleep(1_000) }
        let (frames, nonFinite, quietRun) = outcome.withLock { $0 }
        print("rendered \(frames) frames on another thread; \(unit.swapCount) swaps; longest quiet run \(quietRun)")
        #expect(nonFinite == 0)
        #expect(quietRun <= 2, "no gap")
        // The first response may be replaced before the other thread renders at all.
        #expect(unit.swapCount >= 40, "\(unit.swapCount) of 41 responses taken")
    }

    /// Removing the response fades the wet signal out; the dry part stays.
    @Test func removingTheResponseFadesToDry() throws {
        let (chain, unit) = try convolverChain([decayingNoise(frames: 2000, seed: 9)])
        try unit.setParameter(ConvolutionReverbUnit.Parameter.dryWetMix, 50, scope: .global, element: 0, bufferOffset: 0)
        let x = noise(frames: 4096, seed: 5)
        _ = try chain.render([x, x], slice: 256)
        try unit.removeImpulseResponse()
        #expect(unit.impulseResponse == nil && unit.tailTime == 0)
        let y = try chain.render([x, x], slice: 256)[0]
        let dry = x.map { 0.5 * $0 }
        #expect(Array(y[1024...]) == Array(dry[1024...]), "after the crossfade only the dry half is left")
    }

    /// Bad responses are refused with their own errors, and the unit keeps its response.
    @Test func refusesBadResponsesAndKeepsTheCurrentOne() throws {
        let h = decayingNoise(frames: 500, seed: 12)
        let (chain, unit) = try convolverChain([h])
        let directory = NSTemporaryDirectory() + "convolver-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // Missing file, a text file, an empty WAV file, an 11 s file.
        #expect {
            try unit.loadImpulseResponse(contentsOf: directory + "/missing.wav")
        } throws: { error in
            guard case .cannotRead(let path, let reason)? = error as? ImpulseResponseError else { return false }
            return path.hasSuffix("missing.wav") && !reason.isEmpty
        }
        #expect(FileManager.default.createFile(atPath: directory + "/text.wav", contents: Data("not audio".utf8)))
        #expect {
            try unit.loadImpulseResponse(contentsOf: directory + "/text.wav")
        } throws: { error in
            guard case .cannotRead? = error as? ImpulseResponseError else { return false }
            return (error as! ImpulseResponseError).osStatus == AudioUnitError.invalidFile.rawValue
        }
        writeWAV(directory + "/empty.wav", [[]], sampleRate: 48_000)
        #expect(throws: ImpulseResponseError.empty) { try unit.loadImpulseResponse(contentsOf: directory + "/empty.wav") }
        writeWAV(directory + "/long.wav", [[Float](repeating: 0.001, count: 8000 * 11)], sampleRate: 8000)
        #expect(throws: ImpulseResponseError.tooLong(seconds: 11)) { try unit.loadImpulseResponse(contentsOf: directory + "/long.wav") }
        // The same from samples.
        #expect(throws: ImpulseResponseError.empty) { try unit.setImpulseResponse([], sampleRate: 48_000) }
        #expect(throws: ImpulseResponseError.empty) { try unit.setImpulseResponse([[]], sampleRate: 48_000) }
        #expect(throws: ImpulseResponseError.tooLong(seconds: 10.5)) {
            try unit.setImpulseResponse([[Float](repeating: 0, count: 504_000)], sampleRate: 48_000)
        }
        #expect(throws: ImpulseResponseError.invalidResponse("channels of different lengths")) {
            try unit.setImpulseResponse([[1, 2], [1]], sampleRate: 48_000)
        }
        #expect(throws: ImpulseResponseError.invalidResponse("a NaN or infinite sample")) {
            try unit.setImpulseResponse([[1, .nan]], sampleRate: 48_000)
        }
        #expect(throws: ImpulseResponseError.self) { try unit.setImpulseResponse([[1]], sampleRate: 0) }
        #expect(throws: ImpulseResponseError.self) {
            try unit.setImpulseResponse([[Float]](repeating: [1], count: 65), sampleRate: 48_000)
        }
        // Exactly the maximum is accepted (then put back).
        try unit.setImpulseResponse([[Float](repeating: 0, count: 480_000)], sampleRate: 48_000)
        try unit.setImpulseResponse([h], sampleRate: 48_000)
        #expect(unit.impulseResponse?.frames == 500)
        // The unit still convolves with `h`.
        var x = [Float](repeating: 0, count: 2048)
        x[0] = 1
        let y = try chain.render([x, x], slice: 256)[0]
        let errors = relativeErrors(Array(y[0..<500]), h.map(Double.init))
        #expect(errors.peak <= 1e-6)
    }

    /// Parameters: Apple's IDs, names, units, ranges and defaults (AUReverb2's DryWetMix, Gain).
    @Test func parameters() throws {
        let unit = ConvolutionReverbUnit()
        let list = unit.parameterList(scope: .global)
        #expect(list.map(\.id) == [0, 1])
        let mix = try unit.parameterInfo(ConvolutionReverbUnit.Parameter.dryWetMix, scope: .global)
        #expect(mix.name == "DryWetMix" && mix.unit == .percent && mix.minValue == 0 && mix.maxValue == 100 && mix.defaultValue == 100)
        let gain = try unit.parameterInfo(ConvolutionReverbUnit.Parameter.gain, scope: .global)
        #expect(gain.name == "Gain" && gain.unit == .decibels && gain.minValue == -20 && gain.maxValue == 20 && gain.defaultValue == 0)
        try unit.setParameter(ConvolutionReverbUnit.Parameter.gain, 99, scope: .global)
        #expect(try unit.parameter(ConvolutionReverbUnit.Parameter.gain, scope: .global) == 20, "clamped")
        #expect(throws: AudioUnitError.invalidParameter) { try unit.setParameter(2, 0, scope: .global) }
    }
}

// Tests, Units: the delay and the sample delay through a graph — impulses out at the set time, feedback decay per repeat, glides without clicks, extremes, tail time, Apple's parameter tables.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Delay and sample delay")
struct DelayUnitTests {
    typealias D = DelayUnit.Parameter

    func impulse(_ frames: Int, at position: Int = 0) -> [Float] {
        var x = [Float](repeating: 0, count: frames)
        x[position] = 1
        return x
    }

    func delay(time: Float, feedback: Float, mix: Float, cutoff: Float? = nil) throws -> DelayUnit {
        let unit = DelayUnit()
        try unit.setParameter(D.delayTime, time, scope: .global)
        try unit.setParameter(D.feedback, feedback, scope: .global)
        try unit.setParameter(D.wetDryMix, mix, scope: .global)
        if let cutoff { try unit.setParameter(D.lopassCutoff, cutoff, scope: .global) }
        return unit
    }

    // MARK: - Delay

    @Test(arguments: [(Float(0.01), 64), (0.25, 256), (2, 1000), (1.0 / 48_000, 256)] as [(Float, Int)])
    func anImpulseComesOutAtTheSetTime(time: Float, slice: Int) throws {
        let frames = Int((Double(time) * 48_000).rounded())
        let chain = try Chain([try delay(time: time, feedback: 0, mix: 100)], channels: 1)
        let out = try chain.render([impulse(2 * frames + 100)], slice: slice)[0]
        var expected = [Float](repeating: 0, count: out.count)
        expected[frames] = 1
        #expect(out == expected, "all wet: exactly one 1 at frame \(frames)")
        // Half and half (equal power): the dry impulse now, the wet one later, each 0.707.
        let half = try Chain([try delay(time: time, feedback: 0, mix: 50)], channels: 1)
        let mixed = try half.render([impulse(2 * frames + 100)], slice: slice)[0]
        #expect(abs(mixed[0] - 0.70710678) < 1e-6 && abs(mixed[frames] - 0.70710678) < 1e-6)
        #expect(mixed.enumerated().allSatisfy { $0.offset == 0 || $0.offset == frames || $0.element == 0 })
    }

    @Test func aDelayTimeBetweenFramesIsInterpolated() throws {
        // 480.25 frames: 0.75 of the impulse at 480, 0.25 at 481.
        let chain = try Chain([try delay(time: Float(480.25 / 48_000), feedback: 0, mix: 100)], channels: 1)
        let out = try chain.render([impulse(1200)])[0]
        #expect(abs(out[480] - 0.75) < 1e-3 && abs(out[481] - 0.25) < 1e-3, "\(out[479...482])")
        #expect(abs(out.reduce(0, +) - 1) < 1e-6)
    }

    @Test(arguments: [Float(50), -70, 90, 99.9])
    func feedbackDecaysByTheSetAmountPerRepeat(feedback: Float) throws {
        // 10 ms repeats through a 2 kHz loop low-pass: each repeat is the previous one filtered
        // (its DC gain is exactly 1) times Feedback, so each repeat's sum is Feedback × the
        // previous one's. The first repeat is the impulse itself.
        let chain = try Chain([try delay(time: 0.01, feedback: feedback, mix: 100, cutoff: 2000)], channels: 1)
        let out = try chain.render([impulse(480 * 12)])[0]
        #expect(out[480] == 1)
        var sums: [Double] = []
        for k in 1...10 { sums.append(out[(k * 480 - 10)..<(k * 480 + 470)].reduce(0.0) { $0 + Double($1) }) }
        for k in 1..<sums.count {
            #expect(abs(sums[k] / sums[k - 1] - Double(feedback) / 100) < 1e-4, "repeat \(k + 1): \(sums[k] / sums[k - 1])")
        }
        // The low-pass at work: the second repeat is no longer an impulse.
        #expect(abs(out[960]) < abs(Float(feedback) / 100) * 0.5)
    }

    /// The largest step between neighbouring samples.
    func maxStep(_ x: ArraySlice<Float>) -> Float {
        zip(x.dropFirst(), x).map { abs($0 - $1) }.max() ?? 0
    }

    @Test func delayTimeChangesGlideWithoutAClickAndArrive() throws {
        // A 440 Hz tone all wet; the delay jumps from 0.3 s to 0.1013 s. Glided, the read
        // position moves at most half a frame per frame, so no step between samples exceeds
        // 1.5 × the tone's own largest step; the same jump as a scheduled immediate change
        // is a step of up to the tone's full swing (a click).
        func run(step: Bool) throws -> (steady: Float, change: Float, chain: Chain) {
            let unit = try delay(time: 0.3, feedback: 0, mix: 100)
            let chain = try Chain([unit], channels: 1)
            let tone = sine(frequency: 440, frames: 48_000, amplitude: 0.5)
            let before = try chain.render([tone])[0]
            if step { try unit.setParameter(D.delayTime, 0.1013, scope: .global, bufferOffset: 0) }
            else { try unit.setParameter(D.delayTime, 0.1013, scope: .global) }
            var after: [Float] = []
            for _ in 0..<3 { after += try chain.render([tone])[0] }
            let changing = Array(before.suffix(240)) + after.prefix(48_000)
            return (max(maxStep(before[24_000...]), maxStep(after[120_000...])), maxStep(changing[...]), chain)
        }
        let glided = try run(step: false), stepped = try run(step: true)
        #expect(glided.change <= glided.steady * 1.5 * 1.01, "glide \(glided.change), steady \(glided.steady)")
        #expect(stepped.change > glided.steady * 5, "the unsmoothed jump is a click the test sees: \(stepped.change)")
        // Arrived: after a second of silence clears the line, an impulse comes out 0.1013 s
        // (4862.4 frames) later, split 0.6 / 0.4 between frames 4862 and 4863.
        _ = try glided.chain.render([[Float](repeating: 0, count: 48_000)])
        let out = try glided.chain.render([impulse(9600)])[0]
        let position = Double(Float(0.1013)) * 48_000
        let frames = Int(position), fraction = Float(position - Double(frames))
        #expect(abs(out[frames] - (1 - fraction)) < 1e-4 && abs(out[frames + 1] - fraction) < 1e-4, "\(out[(frames - 1)...(frames + 2)])")
        #expect(abs(out.reduce(0, +) - 1) < 1e-5)
    }

    @Test func parameterChangesKeepTheLine() throws {
        // An echo in flight survives mix, feedback and cutoff changes: the line is never reset.
        let unit = try delay(time: 0.05, feedback: 50, mix: 100)
        let chain = try Chain([unit], channels: 1)
        _ = try chain.render([impulse(1200)])
        try unit.setParameter(D.wetDryMix, 30, scope: .global)
        try unit.setParameter(D.feedback, 20, scope: .global)
        try unit.setParameter(D.lopassCutoff, 20_000, scope: .global)
        let out = try chain.render([[Float](repeating: 0, count: 1200)])[0]
        // The impulse went in at frame 0: its first echo at 2400, now 1200 frames in.
        #expect(out.allSatisfy { $0 == 0 }, "nothing yet: the echo is due at 2400")
        let more = try chain.render([[Float](repeating: 0, count: 2400)])[0]
        let wet = Float(sin(Double.pi / 2 * 0.3))
        #expect(abs(more[0] - wet) < 1e-6, "the echo, at the new wet gain: \(more[0]) vs \(wet)")
    }

    @Test func tailTimeIsTheRepeatsUntilMinus60dB() throws {
        let unit = DelayUnit()
        // Defaults: 1 s, 50 %: 1 + ⌈ln 0.001 / ln 0.5⌉ = 11 repeats.
        guard case .float64(let tail) = try unit.getProperty(.tailTime, scope: .global, element: 0) else { Issue.record("kind"); return }
        #expect(tail == 11)
        try unit.setParameter(D.feedback, 0, scope: .global)
        try unit.setParameter(D.delayTime, 0.25, scope: .global)
        guard case .float64(let short) = try unit.getProperty(.tailTime, scope: .global, element: 0) else { Issue.record("kind"); return }
        #expect(short == 0.25)
        guard case .float64(let latency) = try unit.getProperty(.latency, scope: .global, element: 0) else { Issue.record("kind"); return }
        #expect(latency == 0)
    }

    @Test func silenceAfterFeedbackDecaysToExactZeros() throws {
        let chain = try Chain([try delay(time: 0.01, feedback: 90, mix: 100)])
        _ = try chain.render([noise(frames: 48_000, seed: 3), noise(frames: 48_000, seed: 4)])
        let out = try chain.render([[Float](repeating: 0, count: 8 * 48_000), [Float](repeating: 0, count: 8 * 48_000)])
        #expect(out.allSatisfy { $0.suffix(4800).allSatisfy { $0 == 0 } }, "last value \(out[0].last!)")
        #expect(!out.contains { $0.contains { $0.isSubnormal } })
    }

    @Test func stableAndFiniteAtEveryParameterExtreme() throws {
        for rate in [48_000.0, 8_000] {
            for combination in 0..<16 {
                let unit = DelayUnit()
                try unit.setStreamFormat(.float32(sampleRate: rate, channels: 2), scope: .output, element: 0)
                for id in 0..<4 { try unit.setParameter(AudioUnitParameterID(id), combination & (1 << id) == 0 ? -1e9 : 1e9, scope: .global) }
                let chain = try Chain([unit], channels: 2, sampleRate: rate)
                let frames = Int(2.5 * rate)
                let loud = try chain.render([noise(frames: frames, seed: 1), noise(frames: frames, seed: 2)])
                let peak = loud.flatMap { $0 }.map { abs($0) }.max()!
                let values = (0..<4).map { (try? unit.parameter(AudioUnitParameterID($0), scope: .global)) ?? .nan }
                #expect(loud.allSatisfy { $0.allSatisfy(\.isFinite) } && peak < 10_000, "\(values) at \(rate): peak \(peak)")
                let quiet = try chain.render([[Float](repeating: 0, count: frames), [Float](repeating: 0, count: frames)])
                #expect(!quiet.contains { $0.contains { $0.isSubnormal } }, "\(values) at \(rate): no subnormal numbers")
            }
        }
    }

    @Test func theLineIsSizedForTheRateTheUnitRunsAt() throws {
        // A unit left at its 48 kHz default in a 96 kHz graph runs at 96 kHz: 2 s is 192,000 frames.
        let unit = try delay(time: 2, feedback: 0, mix: 100)
        let chain = try Chain([unit], channels: 1, sampleRate: 96_000)
        let out = try chain.render([impulse(192_100)])[0]
        #expect(out[192_000] == 1 && out.reduce(0, +) == 1)
    }

    @Test func applesDelayParameterTable() throws {
        let unit = DelayUnit()
        typealias Row = (AudioUnitParameterID, String, AudioUnitParameterUnit, Float, Float, Float)
        let rows: [Row] = [(0, "WetDryMix", .equalPowerCrossfade, 0, 100, 50), (1, "DelayTime", .seconds, 0, 2, 1),
                           (2, "Feedback", .percent, -99.9, 99.9, 50), (3, "LopassCutoff", .hertz, 10, 24_000, 15_000)]
        let list = unit.parameterList(scope: .global)
        #expect(list.count == 4)
        for (row, info) in zip(rows, list) {
            #expect(info.id == row.0 && info.name == row.1 && info.unit == row.2 && info.minValue == row.3
                    && info.maxValue == row.4 && info.defaultValue == row.5, "\(info)")
        }
        try unit.setParameter(D.feedback, 100, scope: .global)
        #expect(try unit.parameter(D.feedback, scope: .global) == 99.9)
        try unit.setParameter(D.delayTime, 5, scope: .global)
        #expect(try unit.parameter(D.delayTime, scope: .global) == 2)
        #expect(throws: AudioUnitError.invalidParameter) { try unit.setParameter(4, 1, scope: .global) }
        #expect(unit.type == .delay && DelayUnit.maximumDelayTime == 2)
    }

    // MARK: - Sample delay

    @Test(arguments: [0, 1, 255, 256, 257, 1023, 1024, 1025, 4800, 48_000])
    func anImpulseComesOutExactlyNFramesLater(frames: Int) throws {
        for slice in [64, 256, 1000] {
            let unit = SampleDelayUnit()
            try unit.setParameter(SampleDelayUnit.Parameter.delayFrames, Float(frames), scope: .global)
            let chain = try Chain([unit], channels: 2)
            let input = [noise(frames: 60_000, seed: 5), noise(frames: 60_000, seed: 6)]
            let out = try chain.render(input, slice: slice)
            for c in 0..<2 {
                #expect(out[c] == [Float](repeating: 0, count: frames) + input[c].prefix(60_000 - frames), "\(frames) frames, slice \(slice)")
            }
        }
    }

    @Test func aDelayFramesChangeCrossfadesThenIsExact() throws {
        func run(step: Bool) throws -> (steady: Float, change: Float, settled: [Float], tone: [Float]) {
            let unit = SampleDelayUnit()
            try unit.setParameter(SampleDelayUnit.Parameter.delayFrames, 100, scope: .global)
            let chain = try Chain([unit], channels: 1)
            let tone = sine(frequency: 440, frames: 9600, amplitude: 0.5)
            let before = try chain.render([tone])[0]
            if step { try unit.setParameter(SampleDelayUnit.Parameter.delayFrames, 371, scope: .global, bufferOffset: 0) }
            else { try unit.setParameter(SampleDelayUnit.Parameter.delayFrames, 371, scope: .global) }
            let after = try chain.render([tone])[0]
            let changing = Array(before.suffix(240)) + after.prefix(2400)
            return (max(clickiness(before[4800...]), clickiness(after[4800...])), clickiness(changing[...]), after, tone)
        }
        let faded = try run(step: false), stepped = try run(step: true)
        #expect(faded.change <= faded.steady * 1.25, "crossfade \(faded.change), steady \(faded.steady)")
        #expect(stepped.change > faded.steady * 3, "the unsmoothed jump is a click the test sees: \(stepped.change)")
        // After 10 ms the output is the input 371 frames back, exactly (the tone is periodic in
        // the 9600-frame block, so the previous block supplies what precedes it).
        #expect(Array(faded.settled[500...]) == Array(faded.tone[(500 - 371)..<(9600 - 371)]))
    }

    @Test func sampleDelayRangeRoundingLatencyAndTail() throws {
        let unit = SampleDelayUnit()
        let info = try unit.parameterInfo(SampleDelayUnit.Parameter.delayFrames, scope: .global)
        #expect(info.name == "DelayFrames" && info.unit == .sampleFrames && info.minValue == 0 && info.maxValue == 48_000 && info.defaultValue == 0)
        try unit.setParameter(SampleDelayUnit.Parameter.delayFrames, 1e9, scope: .global)
        #expect(try unit.parameter(SampleDelayUnit.Parameter.delayFrames, scope: .global) == 48_000)
        try unit.setStreamFormat(.float32(sampleRate: 44_100, channels: 2), scope: .output, element: 0)
        #expect(try unit.parameterInfo(SampleDelayUnit.Parameter.delayFrames, scope: .global).maxValue == 44_100)
        try unit.setParameter(SampleDelayUnit.Parameter.delayFrames, 10.4, scope: .global)
        let chain = try Chain([unit], channels: 1, sampleRate: 44_100)
        let out = try chain.render([impulse(100)])[0]
        #expect(out[10] == 1 && out.reduce(0, +) == 1, "10.4 rounds to 10 frames")
        guard case .float64(let tail) = try unit.getProperty(.tailTime, scope: .global, element: 0),
              case .float64(let latency) = try unit.getProperty(.latency, scope: .global, element: 0) else { Issue.record("kind"); return }
        #expect(tail == 10 / 44_100 && latency == 0)
        #expect(unit.type == .sampleDelay)
    }
}

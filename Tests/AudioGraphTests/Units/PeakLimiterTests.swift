// Tests, Units: the peak limiter — the ceiling on real speech raised 20 dB, its latency measured, its attack ramp and decay.
import AudioGraph
import AudioGraphTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Peak limiter: ceiling, latency, attack and decay")
struct PeakLimiterTests {
    typealias P = PeakLimiterUnit.Parameter

    func limiter(_ settings: [(AudioUnitParameterID, Float)]) throws -> PeakLimiterUnit {
        let unit = PeakLimiterUnit()
        for (id, v) in settings { try unit.setParameter(id, v, scope: .global) }
        return unit
    }

    @Test(arguments: [Float(0), -0.1, -6, -30])
    func speechRaised20dBNeverExceedsTheCeiling(ceiling: Float) throws {
        let (speech, rate) = Speech.load()
        let unit = try limiter([(P.preGain, 20), (P.ceiling, ceiling)])
        let chain = try Chain([unit], channels: 2, sampleRate: Double(rate))
        // The speech, then the same speech 60 dB down (under every ceiling even raised 20 dB).
        let input = speech + speech.map { $0 * 0.001 }
        let raised = input.map { $0 * 10 }
        let out = try chain.render([input, input.map { -$0 * 0.5 }], slice: 256)
        let limit = Float(pow(10, Double(ceiling) / 20))
        let peaks = out.map { $0.map(abs).max()! }
        #expect(raised.map(abs).max()! > 2 * limit, "the raised speech does go over: \(raised.map(abs).max()!)")
        #expect(peaks[0] <= limit && peaks[1] <= limit, "sample peaks \(peaks) against the ceiling \(limit)")
        #expect(peaks[0] > 0.95 * limit, "limited, not silenced: \(peaks[0])")
        // Delayed by the look-ahead, audio far from any peak over the ceiling (from the
        // look-ahead before it to half a second after) comes out bit for bit.
        let d = Int((0.03 * Double(rate)).rounded())
        var lastOver = -rate, far: [Int] = []
        for i in input.indices {
            guard i + d < input.count else { break }
            if abs(raised[i + d]) > limit { lastOver = i + d }
            if i - lastOver > rate / 2 { far.append(i) }
        }
        let changed = far.filter { out[0][$0 + d] != raised[$0] || out[1][$0 + d] != -raised[$0] * 0.5 }
        #expect(far.count > speech.count / 2, "\(far.count) frames far from peaks")
        #expect(changed.isEmpty, "\(changed.count) of \(far.count) frames far from peaks changed")
    }

    @Test(arguments: [48_000.0, 44_100.0, 96_000.0])
    func reportedLatencyIsTheMeasuredDelay(rate: Double) throws {
        let unit = PeakLimiterUnit()
        let chain = try Chain([unit], channels: 2, sampleRate: rate)
        guard case .float64(let latency) = try unit.getProperty(.latency, scope: .global, element: 0) else {
            Issue.record("Latency is a Float64"); return
        }
        let frames = latency * rate
        #expect(abs(frames - (0.03 * rate).rounded()) < 1e-9, "Latency \(latency) s = \(frames) frames at \(rate) Hz")
        // Changing the attack changes the ramp, not the latency.
        try unit.setParameter(P.attackTime, 0.002, scope: .global)
        guard case .float64(let after) = try unit.getProperty(.latency, scope: .global, element: 0) else { return }
        #expect(after == latency)
        // A quiet impulse comes out exactly `latency` later, unchanged.
        var input = [Float](repeating: 0, count: 8192)
        input[1000] = 0.125
        let out = try chain.render([input, input.map { -$0 }], slice: 128)
        let expected = 1000 + Int(frames.rounded())
        let nonzero = out[0].indices.filter { out[0][$0] != 0 }
        #expect(nonzero == [expected], "impulse at 1000 → \(nonzero), expected [\(expected)]")
        #expect(out[0][expected] == 0.125 && out[1][expected] == -0.125, "bit for bit")
        #expect(chain.graph.renderLatency >= latency, "the graph's render latency counts it: \(chain.graph.renderLatency)")
    }

    @Test func quietAudioPassesBitForBitDelayed() throws {
        let chain = try Chain([PeakLimiterUnit()])
        let input = [sine(frequency: 997, frames: 9600, amplitude: 0.9), noise(frames: 9600, seed: 5).map { $0 * 0.7 }]
        let out = try chain.render(input, slice: 100)
        let d = 1440
        #expect(out.indices.allSatisfy { c in out[c][..<d].allSatisfy { $0 == 0 } })
        #expect(out.indices.allSatisfy { c in Array(out[c][d...]) == Array(input[c][..<(9600 - d)]) })
    }

    /// A steady 0.1 with one sample of 4 (ceiling 1: it needs a gain of 0.25): the gain, frame by
    /// frame, as the output over the input it came from.
    func gainAroundAPeak(attack: Float, decay: Float) throws -> (gain: [Double], peak: Int, attackFrames: Int) {
        let unit = try limiter([(P.attackTime, attack), (P.decayTime, decay)])
        let chain = try Chain([unit], channels: 1)
        var input = [Float](repeating: 0.1, count: 96_000)
        let peak = 6000
        input[peak] = 4
        let out = try chain.render([input])[0]
        let d = 1440
        let gain = (0..<(96_000 - d)).map { Double(out[$0 + d]) / Double(input[$0]) }
        return (gain, peak, Int((Double(attack) * 48_000).rounded()))
    }

    @Test(arguments: [Float(0.005), 0.012, 0.03, 0.001])
    func attackIsAStraightRampEndingOnThePeak(attack: Float) throws {
        let (gain, peak, a) = try gainAroundAPeak(attack: attack, decay: 0.024)
        #expect(gain[..<(peak - a + 1)].allSatisfy { $0 == 1 }, "unity until A − 1 frames before the peak")
        #expect(gain[peak - a + 1] < 1, "then down")
        #expect(abs(gain[peak] - 0.25) < 1e-6, "the peak at the ceiling: \(gain[peak] * 4)")
        // Straight: gain at the ramp's frames lies on the line from 1 to 0.25.
        var worst = 0.0
        for k in 1...a {
            let expected = 1 - 0.75 * Double(k) / Double(a)
            worst = max(worst, abs(gain[peak - a + k] - expected))
        }
        #expect(worst < 1e-5, "deviation from a straight ramp: \(worst)")
    }

    @Test(arguments: [Float(0.024), 0.005, 0.06])
    func decayIsTheRecoveryTimeConstant(decay: Float) throws {
        let (gain, peak, a) = try gainAroundAPeak(attack: 0.005, decay: decay)
        // After the ramp back (A frames after the peak) the average is 1 again and the gain
        // approaches it exponentially: 1 − g falls to 1/e in τ.
        let start = peak + a + 5
        let tau = Double(decay) * 48_000
        let target = (1 - gain[start]) * exp(-1)
        let crossing = (start..<gain.count).first { 1 - gain[$0] <= target }.map { Double($0 - start) } ?? .infinity
        #expect(abs(crossing / tau - 1) < 0.1, "1 − g fell to 1/e in \(crossing) frames, τ = \(tau)")
        #expect(gain.suffix(100).allSatisfy { $0 == 1 }, "recovered to exactly unity")
    }

    @Test func aLoweredCeilingHoldsFromItsSlice() throws {
        let unit = PeakLimiterUnit()
        let chain = try Chain([unit], channels: 1)
        let loud = noise(frames: 48_000, seed: 9)
        _ = try chain.render([Array(loud[..<24_000])], slice: 256)
        try unit.setParameter(P.ceiling, -12, scope: .global)
        let out = try chain.render([Array(loud[24_000...])], slice: 256)[0]
        let limit = Float(pow(10, -12.0 / 20))
        // The ceiling glides across the first slice; from the next one it is −12 dBFS throughout.
        #expect(out[..<256].allSatisfy { abs($0) <= 1 })
        #expect(out[256...].allSatisfy { abs($0) <= limit }, "max \(out[256...].map(abs).max()!) against \(limit)")
    }

    @Test func finiteAtEveryExtreme() throws {
        let extremes: [[(AudioUnitParameterID, Float)]] = [
            [(P.preGain, 40), (P.ceiling, -30), (P.attackTime, 0.001), (P.decayTime, 0.001)],
            [(P.preGain, -40), (P.ceiling, 0), (P.attackTime, 0.03), (P.decayTime, 0.06)],
            [(P.preGain, 40), (P.ceiling, 0), (P.attackTime, 0.03), (P.decayTime, 0.001)]]
        for settings in extremes {
            let unit = try limiter(settings)
            let chain = try Chain([unit])
            let loud = noise(frames: 9600, seed: 2).map { $0 * 4 }
            let limit = Float(pow(10, Double(try unit.parameter(P.ceiling, scope: .global)) / 20))
            let out = try chain.render([loud, loud], slice: 333)
            #expect(out.allSatisfy { $0.allSatisfy { $0.isFinite && abs($0) <= limit } }, "\(settings)")
            // Attack edited every slice (the window rebuilt each time) still holds the ceiling.
            var held = true
            for i in 0..<40 {
                try unit.setParameter(P.attackTime, 0.001 + Float(i % 7) * 0.004, scope: .global)
                let out = try chain.render([Array(loud[..<256]), Array(loud[256..<512])])
                held = held && out.allSatisfy { $0.allSatisfy { abs($0) <= limit } }
            }
            #expect(held, "attack changes: \(settings)")
            let silent = try chain.render([[Float](repeating: 0, count: 4800)])
            #expect(silent.allSatisfy { $0.suffix(2000).allSatisfy { $0 == 0 } })
        }
    }
}

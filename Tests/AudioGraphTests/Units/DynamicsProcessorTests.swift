// Tests, Units: the dynamics processor — its static curve against the formula, its time constants, its meters.
import AudioGraph
import AudioGraphTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Dynamics processor: static curve, time constants, meters")
struct DynamicsProcessorTests {
    typealias P = DynamicsProcessorUnit.Parameter

    /// The documented curve, written out again here: G(x) for level x (dBFS), 6 dB knees,
    /// R = max(1, −T/H).
    static func expectedGain(_ x: Double, threshold t: Double, headRoom h: Double, expansionThreshold e: Double,
                             expansionRatio re: Double) -> Double {
        let w = 6.0, r = max(1, -t / h)
        var g = 0.0
        if 2 * (x - t) > w { g = (1 / r - 1) * (x - t) } else if 2 * abs(x - t) <= w { g = (1 / r - 1) * pow(x - t + w / 2, 2) / (2 * w) }
        if 2 * (x - e) < -w { g += (re - 1) * (x - e) } else if 2 * abs(x - e) <= w { g -= (re - 1) * pow(x - e - w / 2, 2) / (2 * w) }
        return g
    }

    /// A ±amplitude square wave (every |sample| the same: the detector sees a steady level).
    static func square(_ amplitude: Float, frames: Int, period: Int = 480) -> [Float] {
        (0..<frames).map { ($0 / (period / 2)) % 2 == 0 ? amplitude : -amplitude }
    }

    static func level(_ db: Double) -> Float { Float(pow(10, db / 20)) }

    struct Settings: CustomStringConvertible, Sendable {
        var threshold: Float, headRoom: Float, expansionThreshold: Float, expansionRatio: Float, gain: Float
        var description: String { "T \(threshold) H \(headRoom) E \(expansionThreshold) Re \(expansionRatio) gain \(gain)" }
    }

    func unit(_ s: Settings) throws -> DynamicsProcessorUnit {
        let unit = DynamicsProcessorUnit()
        try unit.setParameter(P.threshold, s.threshold, scope: .global)
        try unit.setParameter(P.headRoom, s.headRoom, scope: .global)
        try unit.setParameter(P.expansionThreshold, s.expansionThreshold, scope: .global)
        try unit.setParameter(P.expansionRatio, s.expansionRatio, scope: .global)
        try unit.setParameter(P.overallGain, s.gain, scope: .global)
        return unit
    }

    @Test(arguments: [Settings(threshold: -20, headRoom: 5, expansionThreshold: -100, expansionRatio: 2, gain: 0),
                      Settings(threshold: -30, headRoom: 10, expansionThreshold: -60, expansionRatio: 4, gain: 6),
                      Settings(threshold: -10, headRoom: 1, expansionThreshold: -120, expansionRatio: 1, gain: -3),
                      Settings(threshold: -40, headRoom: 0.1, expansionThreshold: -45, expansionRatio: 50, gain: 0)])
    func staticCurveMatchesTheFormula(settings: Settings) throws {
        var worst = 0.0, worstAt = 0.0
        for db in stride(from: -115.0, through: 6.0, by: 1.5) {
            let chain = try Chain([try unit(settings)], channels: 1)
            let a = Self.level(db)
            let out = try chain.render([Self.square(a, frames: 9600)])[0]
            // Steady state (the 1 ms attack has settled many times over): the last 10 ms.
            let measured = decibels(rms(out[8640...]) / Double(a))
            let expected = Self.expectedGain(db, threshold: Double(settings.threshold), headRoom: Double(settings.headRoom),
                                             expansionThreshold: Double(settings.expansionThreshold),
                                             expansionRatio: Double(settings.expansionRatio)) + Double(settings.gain)
            // Where the output would be below −300 dBFS Float cannot show it (subnormals, then 0):
            // there it only has to be that quiet.
            let error = db + expected < -300 ? (rms(out[8640...]) < 1e-15 ? 0 : 99) : abs(measured - expected)
            if error > worst { worst = error; worstAt = db }
        }
        #expect(worst < 0.5, "largest deviation from the curve: \(worst) dB at \(worstAt) dBFS (\(settings))")
        #expect(worst < 0.01, "in fact within 0.01 dB: \(worst) dB at \(worstAt) dBFS")
    }

    @Test func headroomModelPutsFullScaleAtThresholdPlusHeadroom() throws {
        for (t, h) in [(Float(-20), Float(5)), (-30, 2), (-12, 12), (-40, 40)] {
            let chain = try Chain([try unit(Settings(threshold: t, headRoom: h, expansionThreshold: -120, expansionRatio: 1, gain: 0))], channels: 1)
            let out = try chain.render([Self.square(1, frames: 9600)])[0]
            let level = decibels(rms(out[8640...]))
            #expect(abs(level - Double(t + h)) < 0.01, "0 dBFS in, T \(t) H \(h): \(level) dBFS out, expected \(t + h)")
        }
    }

    @Test func levelsBetweenTheKneesPassBitForBit() throws {
        let chain = try Chain([DynamicsProcessorUnit()])
        let input = [sine(frequency: 440, frames: 4800, amplitude: 0.01), noise(frames: 4800, seed: 3).map { $0 * 0.02 }]
        let out = try chain.render(input)
        #expect(out == input, "−40 dBFS with Threshold −20 and ExpansionThreshold −100: unchanged")
    }

    /// Time a level step takes to reach 1 − 1/e of its size, read back through the curve.
    func measuredTimeConstant(attack: Float, release: Float, rising: Bool) throws -> Double {
        let settings = Settings(threshold: -40, headRoom: 10, expansionThreshold: -120, expansionRatio: 1, gain: 0)
        let unit = try unit(settings)
        try unit.setParameter(P.attackTime, attack, scope: .global)
        try unit.setParameter(P.releaseTime, release, scope: .global)
        let chain = try Chain([unit], channels: 1)
        // −30 dBFS and −6 dBFS: both above the knee (−37 dBFS), where G is linear in the level.
        let low = Self.level(-30), high = Self.level(-6)
        let (a0, a1) = rising ? (low, high) : (high, low)
        let settle = 96_000, after = 96_000
        let input = Self.square(a0, frames: settle) + Self.square(a1, frames: after)
        let out = try chain.render([input])[0]
        let r = 4.0  // −T/H
        var crossing: Double?
        let target = Double(a1) + (Double(a0) - Double(a1)) * exp(-1.0)
        for n in settle..<(settle + after) {
            let g = decibels(Double(abs(out[n])) / Double(abs(input[n])))
            let level = -40 + g / (1 / r - 1)           // invert G in its linear part
            let envelope = pow(10, level / 20)
            if rising ? envelope >= target : envelope <= target {
                // Interpolate between this frame and the one before for a sub-frame time.
                let gPrev = decibels(Double(abs(out[n - 1])) / Double(abs(input[n - 1])))
                let ePrev = pow(10, (-40 + gPrev / (1 / r - 1)) / 20)
                let frac = (target - ePrev) / (envelope - ePrev)
                crossing = Double(n - 1 - settle) + frac + 1
                break
            }
        }
        return (crossing ?? .infinity) / 48_000
    }

    @Test(arguments: [(Float(0.001), Float(0.05)), (0.01, 0.3), (0.0005, 1.0), (0.1, 0.02)])
    func attackAndReleaseTimeConstants(attack: Float, release: Float) throws {
        let measuredAttack = try measuredTimeConstant(attack: attack, release: release, rising: true)
        let measuredRelease = try measuredTimeConstant(attack: attack, release: release, rising: false)
        #expect(abs(measuredAttack / Double(attack) - 1) < 0.1, "attack \(attack) s measured \(measuredAttack) s")
        #expect(abs(measuredRelease / Double(release) - 1) < 0.1, "release \(release) s measured \(measuredRelease) s")
        #expect(abs(measuredAttack / Double(attack) - 1) < 0.02, "in fact within 2 %: \(measuredAttack) s for \(attack) s")
    }

    @Test func metersReportLevelsAndCannotBeSet() throws {
        let unit = try unit(Settings(threshold: -40, headRoom: 10, expansionThreshold: -120, expansionRatio: 1, gain: 3))
        let chain = try Chain([unit], channels: 1)
        _ = try chain.render([Self.square(Self.level(-6), frames: 9600)])
        let input = try unit.parameter(P.inputAmplitude, scope: .global)
        let amount = try unit.parameter(P.compressionAmount, scope: .global)
        let output = try unit.parameter(P.outputAmplitude, scope: .global)
        #expect(abs(input - -6) < 0.01, "InputAmplitude \(input)")
        #expect(abs(amount - -25.5) < 0.01, "CompressionAmount \(amount): (1/4 − 1) × 34 dB")
        #expect(abs(output - (-6 - 25.5 + 3)) < 0.01, "OutputAmplitude \(output)")
        for id in [P.compressionAmount, P.inputAmplitude, P.outputAmplitude] {
            #expect(throws: AudioUnitError.invalidParameter) { try unit.setParameter(id, 0, scope: .global) }
            #expect(throws: AudioUnitError.invalidParameter) {
                try unit.scheduleParameter(AudioUnitParameterEvent(id: id, scope: .global, .immediate(value: 0)))
            }
            #expect(try unit.parameterInfo(id, scope: .global).isReadOnly)
        }
        #expect(try unit.parameter(P.inputAmplitude, scope: .global) == input, "refused sets changed nothing")
        // Silence: the detector releases to the floor; the meters follow.
        _ = try chain.render([[Float](repeating: 0, count: 48_000)])
        #expect(try unit.parameter(P.inputAmplitude, scope: .global) == -120)
        #expect(try unit.parameter(P.compressionAmount, scope: .global) == 0)
    }

    @Test func parameterInfoMirrorsApple() throws {
        let unit = DynamicsProcessorUnit()
        let expected: [(AudioUnitParameterID, String, Float, Float, Float)] = [
            (0, "Threshold", -40, 20, -20), (1, "HeadRoom", 0.1, 40, 5), (2, "ExpansionRatio", 1, 50, 2),
            (3, "ExpansionThreshold", -120, 0, -100), (4, "AttackTime", 0.0001, 0.2, 0.001),
            (5, "ReleaseTime", 0.01, 3, 0.05), (6, "OverallGain", -40, 40, 0)]
        for (id, name, lo, hi, def) in expected {
            let info = try unit.parameterInfo(id, scope: .global)
            #expect(info.name == name && info.minValue == lo && info.maxValue == hi && info.defaultValue == def && !info.isReadOnly)
            #expect(try unit.parameter(id, scope: .global) == def)
        }
        #expect(try unit.parameterInfo(P.expansionRatio, scope: .global).unit == .rate)
        #expect(unit.parameterList(scope: .global).map(\.id) == [0, 1, 2, 3, 4, 5, 6, 1000, 2000, 3000])
    }

    @Test func thresholdChangeGlidesAcrossTheSlice() throws {
        let unit = DynamicsProcessorUnit()  // T −20, H 5: R 4
        let chain = try Chain([unit], channels: 1)
        let dc = [Float](repeating: 0.5, count: 256)
        _ = try chain.render([[Float](repeating: 0.5, count: 9600)])
        try unit.setParameter(P.threshold, -40, scope: .global)  // R 8, −6 dBFS: gain −10.5 → −29.75 dB
        let out = try chain.render([dc])[0]
        let steps = zip(out.dropFirst(), out).map { abs($0 - $1) }
        let total = abs(out[255] - out[0])
        #expect(total > 0.1, "the gain moved: \(out[0]) → \(out[255])")
        #expect(steps.max()! < total / 50, "largest step \(steps.max()!) of \(total): a glide, not a jump")
    }

    @Test func finiteAtEveryExtremeAndSilentInSilence() throws {
        let extremes: [[(AudioUnitParameterID, Float)]] = [
            [(P.threshold, 20), (P.headRoom, 0.1), (P.expansionThreshold, 0), (P.expansionRatio, 50), (P.overallGain, 40)],
            [(P.threshold, -40), (P.headRoom, 0.1), (P.expansionThreshold, -120), (P.expansionRatio, 50), (P.overallGain, -40)],
            [(P.threshold, -40), (P.headRoom, 40), (P.attackTime, 0.0001), (P.releaseTime, 3)],
            [(P.attackTime, 0.2), (P.releaseTime, 0.01), (P.expansionThreshold, 0), (P.expansionRatio, 1)]]
        for settings in extremes {
            let unit = DynamicsProcessorUnit()
            for (id, v) in settings { try unit.setParameter(id, v, scope: .global) }
            let chain = try Chain([unit])
            let loud = noise(frames: 4800, seed: 1).map { $0 * 8 }
            var out = try chain.render([loud, loud])
            #expect(out.allSatisfy { $0.allSatisfy(\.isFinite) }, "\(settings)")
            out = try chain.render([[Float](repeating: 0, count: 48_000 * 4)])
            #expect(out.allSatisfy { $0.allSatisfy { $0 == 0 } }, "silence in, exact zeros out: \(settings)")
        }
    }
}

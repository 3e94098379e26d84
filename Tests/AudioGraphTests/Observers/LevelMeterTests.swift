// Tests, Observers: level meters against analytic values.
import Testing
@testable import AudioGraph
#if canImport(Glibc)
import Glibc
import AudioGraphTestSupport
#endif

@Suite("Level meters against analytic values")
struct LevelMeterTests {
    /// A full-scale sine: RMS 1/√2 → −3.01 dBFS, peak 1 → 0 dBFS. 3 s is 10 time constants of the
    /// 0.3 s average, so its start-up transient is below e^−10.
    @Test(arguments: [64, 256, 1000])
    func fullScaleSineReadsMinus3dBRMSAnd0dBPeak(slice: Int) throws {
        let gate = MuteGateUnit()
        let chain = try Chain([gate], channels: 2)
        let meter = try chain.graph.installLevelMeter(on: chain.nodes[0])
        // 1 kHz at 48 kHz: 48 samples per cycle, so the peak sample is exactly ±1 (sin(π/2)).
        let left = sine(frequency: 1000, frames: 144_000, amplitude: 1)
        let right = sine(frequency: 1000, frames: 144_000, amplitude: 0.5)  // −6.02 dB
        _ = try chain.render([left, right], slice: slice)
        #expect(meter.channelCount == 2)
        #expect(try abs(meter.averagePower(channel: 0) - (-3.0103)) < 0.05, "\((try? meter.averagePower(channel: 0)) ?? .nan)")
        #expect(try abs(meter.peakPower(channel: 0)) < 0.05, "\((try? meter.peakPower(channel: 0)) ?? .nan)")
        #expect(try abs(meter.averagePower(channel: 1) - (-9.0309)) < 0.05, "\((try? meter.averagePower(channel: 1)) ?? .nan)")
        #expect(try abs(meter.peakPower(channel: 1) - (-6.0206)) < 0.05, "\((try? meter.peakPower(channel: 1)) ?? .nan)")
        #expect(throws: AudioUnitError.invalidPropertyValue, "a channel outside the format is an error") { try meter.averagePower(channel: 2) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try meter.peakPower(channel: -1) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try meter.maximumPeakPower(channel: 64) }
    }

    @Test func digitalSilenceReadsMinus160() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let meter = try chain.graph.installLevelMeter(on: chain.nodes[0])
        _ = try chain.render([[Float](repeating: 0, count: 4800)])
        #expect(meter.sliceCount > 0)
        #expect(try meter.averagePower(channel: 0) == -160)
        #expect(try meter.peakPower(channel: 0) == -160)
    }

    /// The exponential average: after a full-scale DC step, m(t) = 1 − e^(−t/τ); after silence
    /// follows, the reading falls by 10·log10(e)/τ dB per second.
    @Test func averageFollowsTheDocumentedTimeConstant() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let tau = 0.3
        let meter = try chain.graph.installLevelMeter(on: chain.nodes[0], averagingTime: tau)
        _ = try chain.render([[Float](repeating: 1, count: 14_400)])  // exactly τ
        let expected = 10 * log10(1 - exp(-1.0))                       // −1.99 dB
        #expect(try abs(Double(meter.averagePower(channel: 0)) - expected) < 0.01, "\((try? meter.averagePower(channel: 0)) ?? .nan) vs \(expected)")
        _ = try chain.render([[Float](repeating: 1, count: 480_000)])  // settle
        _ = try chain.render([[Float](repeating: 0, count: 48_000)])   // 1 s of silence
        let fall = 10 * log10(exp(1.0)) / tau                           // 14.48 dB
        #expect(try abs(Double(meter.averagePower(channel: 0)) + fall) < 0.05, "\((try? meter.averagePower(channel: 0)) ?? .nan) vs \(-fall)")
    }

    @Test func peakHoldsThenReleasesAndMaximumStaysUntilReset() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let meter = try chain.graph.installLevelMeter(on: chain.nodes[0], peakHoldTime: 0.5)
        var input = [Float](repeating: 0.1, count: 48_000)
        input[100] = 1
        _ = try chain.render([Array(input[0..<12_000])])                // 0.25 s: inside the hold
        #expect(try abs(meter.peakPower(channel: 0)) < 0.001)
        _ = try chain.render([Array(input[12_000...])])                 // 1 s in: released
        #expect(try abs(meter.peakPower(channel: 0) - (-20)) < 0.001, "\((try? meter.peakPower(channel: 0)) ?? .nan)")
        #expect(try abs(meter.maximumPeakPower(channel: 0)) < 0.001)
        meter.resetPeaks()
        _ = try chain.render([[Float](repeating: 0.1, count: 256)])
        #expect(try abs(meter.maximumPeakPower(channel: 0) - (-20)) < 0.001)
    }

    /// The user's report: right after a mute the average read −38.1 dB while the held peak read
    /// −inf. A peak reading is never below the average, at every slice of the fade.
    @Test func peakNeverReadsBelowTheAverage() throws {
        let gate = MuteGateUnit()
        let chain = try Chain([gate], channels: 1)
        let meter = try chain.graph.installLevelMeter(on: chain.nodes[0], peakHoldTime: 0.2)
        #expect(meter.channelCount == 1, "the element's channels from installation on")
        #expect(try meter.averagePower(channel: 0) == LevelMeter.silence && meter.peakPower(channel: 0) == LevelMeter.silence)
        _ = try chain.render([sine(frequency: 1000, frames: 48_000, amplitude: 0.5)])
        gate.isMuted = true
        var checked = 0
        for _ in 0..<40 {  // 2 s of 50 ms pieces: the hold (0.2 s) ends long before the average settles
            _ = try chain.render([sine(frequency: 1000, frames: 2400, amplitude: 0.5)])
            let (average, peak) = try meter.levels(channel: 0)
            #expect(try average == meter.averagePower(channel: 0) && peak == meter.peakPower(channel: 0), "no slice between")
            #expect(peak >= average, "peak \(peak) dB below the average \(average) dB")
            if average > LevelMeter.silence { checked += 1 }
        }
        #expect(checked >= 30, "the average was still decaying while the peak hold ran out")
    }

    @Test func ioElementsAndErrors() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let input = try chain.graph.installLevelMeter(on: chain.ioNode, element: IOUnit.inputElement)
        let output = try chain.graph.installLevelMeter(on: chain.ioNode, element: IOUnit.outputElement)
        (chain.graph.nodes.compactMap { try? chain.graph.nodeInfo($0) as? MuteGateUnit }).first!.isMuted = true
        _ = try chain.render([[Float](repeating: 0.5, count: 480_000)])  // 33 τ: the mute ramp's energy is below −160 dBFS
        #expect(try abs(input.averagePower(channel: 0) - (-6.0206)) < 0.01)
        #expect(try output.averagePower(channel: 0) == -160, "muted: the device gets silence")
        #expect(throws: AudioUnitError.invalidElement) { try chain.graph.installLevelMeter(on: chain.nodes[0], element: 1) }
        #expect(throws: AudioUnitError.nodeNotFound) { try chain.graph.installLevelMeter(on: AUNode(rawValue: 99)) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try chain.graph.installLevelMeter(on: chain.nodes[0], averagingTime: .nan) }
        try chain.graph.removeLevelMeter(input)
        let before = input.sliceCount
        _ = try chain.render([[Float](repeating: 0.5, count: 4800)])
        #expect(input.sliceCount == before, "a removed meter is not touched")
        try chain.graph.removeLevelMeter(input)  // twice: nothing happens
    }
}

// Tests, Render: rendering through the offline driver.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("Rendering through the offline driver")
struct RenderTests {
    @Test(arguments: [1, 33, 64, 256, 1024, 4096])
    func defaultChainIsBitExactPassthrough(slice: Int) throws {
        let chain = try Chain([MuteGateUnit(), MultichannelMixerUnit(inputs: 2)])
        let input = [noise(frames: 10_000, seed: 7), noise(frames: 10_000, seed: 8)]
        let output = try chain.render(input, slice: slice)
        #expect(output == input)
    }

    @Test func ioAloneIsBitExactAndDisabledInputIsSilent() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let node = try graph.addNode(io)
        try graph.connectNodeInput(node, sourceOutputElement: 1, node, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 1)
        try graph.initialize()
        try graph.start()
        let input = [noise(frames: 1000, seed: 3)]
        #expect(try renderer.render(input: input, frameCount: 1000).allSatisfy { $0.allSatisfy { $0 == 0 } },
                "EnableIO input is off by default, as on Apple's IO units")
        try graph.uninitialize()
        try io.setInputEnabled(true)
        try graph.initialize()
        try graph.start()
        #expect(try renderer.render(input: input, frameCount: 1000) == input)
    }

    @Test func muteRampsWithoutStepsAndEndsInExactSilence() throws {
        let gate = MuteGateUnit()
        let chain = try Chain([gate], channels: 1)
        let dc: [[Float]] = [[Float](repeating: 1, count: 48_000)]
        let rampFrames = 480  // default RampTime 0.01 s at 48 kHz
        gate.isMuted = true
        let muting = try chain.render(Array(dc), slice: 256)[0]
        // Constant input: the output is the gain curve itself.
        var maxStep: Float = 0
        for f in 1..<muting.count { maxStep = max(maxStep, abs(muting[f] - muting[f - 1])) }
        #expect(maxStep <= 1 / Float(rampFrames) + 1e-6, "largest step \(maxStep)")
        #expect(muting[0] < 1 && muting[0] > 0.99, "the ramp starts at once")
        let silentFrom = muting.firstIndex(of: 0)!
        #expect(silentFrom == rampFrames - 1 || silentFrom == rampFrames, "ramp length \(silentFrom) frames")
        #expect(muting[silentFrom...].allSatisfy { $0 == 0 }, "exact zeros once muted")

        gate.isMuted = false
        let unmuting = try chain.render(Array(dc), slice: 100)[0]
        maxStep = 0
        for f in 1..<unmuting.count { maxStep = max(maxStep, abs(unmuting[f] - unmuting[f - 1])) }
        #expect(maxStep <= 1 / Float(rampFrames) + 1e-6)
        #expect(unmuting[rampFrames...].allSatisfy { $0 == 1 }, "exact unity once unmuted")
    }

    @Test func muteRampTimeIsAParameter() throws {
        let gate = MuteGateUnit()
        try gate.setParameter(MuteGateUnit.Parameter.rampTime, 0.1, scope: .global)
        let chain = try Chain([gate], channels: 1)
        gate.isMuted = true
        let out = try chain.render([[Float](repeating: 1, count: 9600)])[0]
        let silentFrom = out.firstIndex(of: 0)!
        #expect(abs(silentFrom - 4800) <= 1, "0.1 s at 48 kHz; got \(silentFrom)")
    }

    @Test func startingMutedIsSilentFromTheFirstFrame() throws {
        let gate = MuteGateUnit()
        gate.isMuted = true
        let chain = try Chain([gate], channels: 1)
        let out = try chain.render([noise(frames: 2048, seed: 5)])[0]
        #expect(out.allSatisfy { $0 == 0 })
    }

    /// Gain in dB of the low-pass at `frequency`, from the steady-state RMS of a sine.
    func lowPassGain(cutoff: Float, resonance: Float = 0, at frequency: Double) throws -> Double {
        let filter = LowPassFilterUnit()
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global)
        try filter.setParameter(LowPassFilterUnit.Parameter.resonance, resonance, scope: .global)
        let chain = try Chain([filter], channels: 1)
        let input = sine(frequency: frequency, frames: 48_000)
        let out = try chain.render([input])[0]
        return decibels(rms(out[24_000...]) / rms(input[24_000...]))
    }

    @Test func lowPassIsMinus3dBAtTheCutoff() throws {
        for cutoff: Float in [200, 1000, 6900] {
            let gain = try lowPassGain(cutoff: cutoff, at: Double(cutoff))
            #expect(abs(gain + 3.01) < 0.1, "\(cutoff) Hz: \(gain) dB")
        }
    }

    @Test func lowPassPassbandAndStopband() throws {
        let pass = try lowPassGain(cutoff: 1000, at: 100)
        #expect(abs(pass) < 0.1, "passband \(pass) dB")
        // Second order: about −12 dB per octave well above the cutoff; 3 octaves up ≈ −36 dB.
        let stop = try lowPassGain(cutoff: 1000, at: 8000)
        #expect(stop < -34 && stop > -40, "stopband \(stop) dB")
        let resonant = try lowPassGain(cutoff: 1000, resonance: 12, at: 1000)
        #expect(abs(resonant - (12 - 3.01)) < 0.2, "resonance sets the gain at the cutoff: \(resonant) dB")
    }

    @Test func lowPassKeepsItsStateWhenTheCutoffChanges() throws {
        let filter = LowPassFilterUnit()
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 1000, scope: .global)
        let chain = try Chain([filter], channels: 1)
        let dc: [[Float]] = [[Float](repeating: 0.5, count: 4800)]
        let settled = try chain.render(dc)[0]
        #expect(abs(settled.last! - 0.5) < 1e-4)
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 2000, scope: .global)
        let after = try chain.render([[Float](repeating: 0.5, count: 256)])[0]
        // A reset would restart from zero; kept state stays at the settled value.
        #expect(after.allSatisfy { abs($0 - 0.5) < 1e-3 }, "first sample after the change: \(after[0])")
    }

    @Test func lowPassStaysFiniteAtTheEdges() throws {
        for (cutoff, resonance): (Float, Float) in [(24_000, 40), (10, -20), (10, 40), (23_999, -20)] {
            let filter = LowPassFilterUnit()
            try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global)
            try filter.setParameter(LowPassFilterUnit.Parameter.resonance, resonance, scope: .global)
            let chain = try Chain([filter], channels: 1)
            let out = try chain.render([noise(frames: 48_000, seed: 11)])[0]
            #expect(out.allSatisfy { $0.isFinite && abs($0) < 1000 }, "\(cutoff) Hz, \(resonance) dB")
        }
    }

    // (Hz, dB): each rings down well within the 4 s of silence.
    @Test(arguments: [(Float(10), Float(0)), (1000, 40), (23_000, 0), (6900, 12)])
    func lowPassStateReachesExactZeroInSilence(cutoff: Float, resonance: Float) throws {
        let filter = LowPassFilterUnit()
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global)
        try filter.setParameter(LowPassFilterUnit.Parameter.resonance, resonance, scope: .global)
        let chain = try Chain([filter])
        let loud = [noise(frames: 48_000, seed: 21), noise(frames: 48_000, seed: 22)]
        _ = try chain.render(loud)
        let silence = [[Float](repeating: 0, count: 48_000 * 4), [Float](repeating: 0, count: 48_000 * 4)]
        let out = try chain.render(silence)
        // Without the flush the tail lingers in subnormal numbers; with it, exact zeros follow.
        #expect(out.allSatisfy { Array($0.suffix(4096)).allSatisfy { $0 == 0 } }, "cutoff \(cutoff): last value \(out[0].last!)")
        #expect(!out[0].contains { $0 != 0 && $0.isSubnormal }, "no subnormal sample in the tail")
    }

    func mix(_ configure: (MultichannelMixerUnit) throws -> Void, input: [[Float]], outputChannels: UInt32 = 2) throws -> [[Float]] {
        let mixer = MultichannelMixerUnit(inputs: 2)
        try configure(mixer)
        let chain = try Chain([mixer], channels: Int(outputChannels))
        return try chain.render(input)
    }

    @Test func mixerVolumeAndOutputVolume() throws {
        let ones: [[Float]] = [[Float](repeating: 1, count: 1024), [Float](repeating: 1, count: 1024)]
        let half = try mix({ try $0.setParameter(MultichannelMixerUnit.Parameter.volume, 0.5, scope: .input, element: 0) }, input: ones)
        // The change from the initial value ramps over the first slice only if it changed after
        // the plan was built; here it was set before, so every sample is exact.
        #expect(half[0].allSatisfy { $0 == 0.5 } && half[1].allSatisfy { $0 == 0.5 })
        let quarter = try mix({
            try $0.setParameter(MultichannelMixerUnit.Parameter.volume, 0.5, scope: .input, element: 0)
            try $0.setParameter(MultichannelMixerUnit.Parameter.volume, 0.5, scope: .output, element: 0)
        }, input: ones)
        #expect(quarter[0].allSatisfy { $0 == 0.25 })
        let off = try mix({ try $0.setParameter(MultichannelMixerUnit.Parameter.enable, 0, scope: .input, element: 0) }, input: ones)
        #expect(off.allSatisfy { $0.allSatisfy { $0 == 0 } }, "a disabled input contributes exact zeros")
    }

    @Test(arguments: [(Float(-1), Float(1), Float(0)), (0, 1, 1), (1, 0, 1), (0.5, 0.5, 1), (-0.25, 1, 0.75)])
    func mixerPanIsALinearBalance(pan: Float, left: Float, right: Float) throws {
        let ones: [[Float]] = [[Float](repeating: 1, count: 512), [Float](repeating: 1, count: 512)]
        let out = try mix({ try $0.setParameter(MultichannelMixerUnit.Parameter.pan, pan, scope: .input, element: 0) }, input: ones)
        #expect(out[0].allSatisfy { $0 == left } && out[1].allSatisfy { $0 == right }, "pan \(pan): L \(out[0][0]) R \(out[1][0])")
    }

    @Test func mixerVolumeChangeWhileRunningRampsAcrossOneSlice() throws {
        let mixer = MultichannelMixerUnit(inputs: 1)
        let chain = try Chain([mixer], channels: 1)
        let ones: [[Float]] = [[Float](repeating: 1, count: 256)]
        _ = try chain.render(ones)
        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0, scope: .input, element: 0)
        let out = try chain.render(ones, slice: 256)[0]
        var maxStep: Float = 0
        for f in 1..<out.count { maxStep = max(maxStep, abs(out[f] - out[f - 1])) }
        #expect(maxStep <= 1.0 / 256 + 1e-6)
        #expect(out.last == 0)
    }

    @Test func mixerSumsInputsWithoutClippingAndUpmixesMono() throws {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        let mixer = MultichannelMixerUnit(inputs: 3)
        let mixerNode = try graph.addNode(mixer)
        for element: AudioUnitElement in 0..<2 {
            try graph.setNodeInputCallback(mixerNode, inputElement: element) { _, _, buffers in
                for c in 0..<buffers.channelCount { for f in 0..<buffers.frameCount { buffers[c][f] = 0.75 } }
                return 0
            }
        }
        try mixer.setStreamFormat(try .float32(sampleRate: 48_000, channels: 1), scope: .input, element: 1)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, io, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        let out = try renderer.render(input: [], frameCount: 512)
        #expect(out[0].allSatisfy { $0 == 1.5 } && out[1].allSatisfy { $0 == 1.5 },
                "0.75 stereo + 0.75 mono copied to both sides, unclipped; the unconnected input adds exact zeros")
    }

    @Test func newMixerHasUnityGainOnEveryInput() throws {
        let mixer = MultichannelMixerUnit()
        for e in 0..<mixer.elementCount(.input) {
            #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.volume, scope: .input, element: e) == 1)
            #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.pan, scope: .input, element: e) == 0)
        }
        #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.volume, scope: .output) == 1)
    }
}

// Tests, Parameters: scheduled, ramped, smoothed, clamped.
import AudioGraph
import Testing
#if canImport(Glibc)
import Glibc
import AudioGraphTestSupport
#endif

@Suite("Parameters: scheduled, ramped, smoothed, clamped")
struct ParameterAutomationTests {
    typealias Mixer = MultichannelMixerUnit.Parameter
    let dc: [[Float]] = [[Float](repeating: 0.5, count: 2048), [Float](repeating: 0.5, count: 2048)]

    func mixerChain() throws -> (Chain, MultichannelMixerUnit) {
        let mixer = MultichannelMixerUnit(inputs: 1)
        let chain = try Chain([mixer])
        _ = try chain.render(dc.map { Array($0.prefix(256)) })  // first plan, ramps settled
        return (chain, mixer)
    }

    @Test(arguments: [0, 1, 100, 255, 256, 300, 1000])
    func immediateChangeLandsOnItsFrame(offset: Int) throws {
        let (chain, mixer) = try mixerChain()
        try mixer.setParameter(Mixer.volume, 0.25, scope: .input, element: 0, bufferOffset: offset)
        let out = try chain.render(dc, slice: 256)
        for c in 0..<2 {
            #expect(out[c][..<offset].allSatisfy { $0 == 0.5 }, "before frame \(offset): old value")
            #expect(out[c][offset...].allSatisfy { $0 == 0.125 }, "from frame \(offset): new value, no glide")
        }
        #expect(try mixer.parameter(Mixer.volume, scope: .input, element: 0) == 0.25)
    }

    @Test func linearRampIsExactAndEndsOnItsValue() throws {
        let (chain, mixer) = try mixerChain()
        let start = 64, duration = 480
        try mixer.scheduleParameters([AudioUnitParameterEvent(id: Mixer.volume, scope: .input, element: 0, bufferOffset: start,
                                                              .linearRamp(to: 0, durationFrames: duration))])
        let out = try chain.render(dc, slice: 128)
        var worst: Float = 0
        for f in 0..<2048 {
            let progress = min(1, max(0, Float(f - start + 1) / Float(duration)))
            let expected = f < start ? 0.5 : 0.5 * (1 - progress)
            worst = max(worst, abs(out[0][f] - expected))
        }
        #expect(worst < 1e-6, "largest deviation from the line: \(worst)")
        #expect(out[0][(start + duration)...].allSatisfy { $0 == 0 })
        #expect(try mixer.parameter(Mixer.volume, scope: .input, element: 0) == 0, "the end value reads back")
    }

    @Test func rampWithAStartValueAndAcrossManySlices() throws {
        let (chain, mixer) = try mixerChain()
        try mixer.scheduleParameter(AudioUnitParameterEvent(id: Mixer.volume, scope: .output, bufferOffset: 10,
                                                            .linearRamp(from: 0, to: 1, durationFrames: 1000)))
        let out = try chain.render(dc, slice: 64)
        #expect(out[0][..<10].allSatisfy { $0 == 0.5 })
        #expect(abs(out[0][10] - 0.5 / 1000) < 1e-6, "starts from the given value: \(out[0][10])")
        #expect(abs(out[0][509] - 0.25) < 1e-6)
        #expect(out[0][1009...].allSatisfy { $0 == 0.5 })
    }

    @Test func targetApproachIsExponential() throws {
        let (chain, mixer) = try mixerChain()
        let tau = 0.005  // 240 frames at 48 kHz
        try mixer.scheduleParameter(AudioUnitParameterEvent(id: Mixer.volume, scope: .input, element: 0, .target(0, timeConstant: tau)))
        var out: [Float] = []
        for _ in 0..<10 { out += try chain.render(dc, slice: 256)[0] }
        // Piece ends (every 32 frames) lie on the curve; in between, a chord of it.
        var worst = 0.0
        for f in stride(from: 31, to: 4800, by: 32) {
            let expected = 0.5 * exp(-Double(f + 1) / (tau * 48_000))
            worst = max(worst, abs(Double(out[f]) - expected))
        }
        #expect(worst < 1e-6, "largest deviation at piece ends: \(worst)")
        #expect(out.suffix(2048).allSatisfy { $0 == 0 }, "ends exactly on the target")
        #expect(try mixer.parameter(Mixer.volume, scope: .input, element: 0) == 0)
    }

    @Test func aPlainSetStopsARamp() throws {
        let (chain, mixer) = try mixerChain()
        try mixer.scheduleParameter(AudioUnitParameterEvent(id: Mixer.volume, scope: .input, element: 0,
                                                            .linearRamp(to: 0, durationFrames: 48_000)))
        _ = try chain.render(dc, slice: 256)
        try mixer.setParameter(Mixer.volume, 1, scope: .input, element: 0)
        _ = try chain.render(dc, slice: 256)  // glides to 1 over this slice
        let out = try chain.render(dc, slice: 256)
        #expect(out[0].allSatisfy { $0 == 0.5 }, "the ramp no longer runs")
    }

    /// The largest sample-to-sample step in `x`.
    func maxStep(_ x: ArraySlice<Float>) -> Float {
        zip(x.dropFirst(), x).map { abs($0 - $1) }.max() ?? 0
    }

    /// The largest second difference in `x`: a crude high-pass that a click stands out in.
    func maxCurvature(_ x: ArraySlice<Float>) -> Float {
        let a = Array(x)
        return (2..<a.count).map { abs(a[$0] - 2 * a[$0 - 1] + a[$0 - 2]) }.max() ?? 0
    }

    @Test(arguments: [(Float(20_000), Float(100), 2000.0), (100, 20_000, 80), (15_000, 300, 200), (300, 15_000, 200)])
    func cutoffJumpsGlideWithoutClicks(from: Float, to: Float, frequency: Double) throws {
        // A sine through the filter; the cutoff jumps. A click is energy at high frequencies
        // that neither steady state has: the second difference shows it. With the glide the
        // transition stays within the larger steady state's, or below 0.01 (−40 dBFS); an
        // unsmoothed jump (a scheduled immediate change) is measured for comparison.
        func run(_ change: (LowPassFilterUnit) throws -> Void) throws -> (steady: Float, change: Float) {
            let filter = LowPassFilterUnit()
            let chain = try Chain([filter])
            try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, from, scope: .global)
            let tone = sine(frequency: frequency, frames: 9600, amplitude: 0.9)
            let before = try chain.render([tone, tone])[0]
            try change(filter)
            let after = try chain.render([tone, tone])[0] + chain.render([tone, tone])[0]
            let steady = max(maxCurvature(before[4800...]), maxCurvature(after[14_400...]))
            return (steady, maxCurvature(after[..<4800]))
        }
        let glided = try run { try $0.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, to, scope: .global) }
        let jumped = try run { try $0.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, to, scope: .global, bufferOffset: 0) }
        // Measured: upward jumps unsmoothed reach 0.53 and 4.8 (loud clicks); glided, 0.003 at most.
        #expect(glided.change <= max(glided.steady * 1.05, 0.01),
                "\(from) → \(to) Hz: glide \(glided.change), steady \(glided.steady), unsmoothed jump \(jumped.change)")
    }

    @Test func resettingCurrentValuesChangesNothing() throws {
        func run(resetting: Bool) throws -> [[Float]] {
            let filter = LowPassFilterUnit(), gate = MuteGateUnit(), mixer = MultichannelMixerUnit(inputs: 1)
            let chain = try Chain([filter, gate, mixer])
            try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 1234, scope: .global)
            try filter.setParameter(LowPassFilterUnit.Parameter.resonance, 6, scope: .global)
            try mixer.setParameter(Mixer.pan, 0.3, scope: .input, element: 0)
            try mixer.setParameter(Mixer.volume, 0.7, scope: .input, element: 0)
            var out: [[Float]] = [[], []]
            let input = [noise(frames: 4096, seed: 11), noise(frames: 4096, seed: 12)]
            for block in 0..<4 {
                if resetting {
                    try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 1234, scope: .global)
                    try filter.setParameter(LowPassFilterUnit.Parameter.resonance, 6, scope: .global)
                    try mixer.setParameter(Mixer.pan, 0.3, scope: .input, element: 0)
                    try mixer.setParameter(Mixer.volume, 0.7, scope: .input, element: 0)
                    try mixer.setParameter(Mixer.volume, 1, scope: .output)
                    try gate.setParameter(MuteGateUnit.Parameter.mute, 0, scope: .global)
                }
                let part = try chain.render(input.map { Array($0[(block * 1024)..<((block + 1) * 1024)]) })
                out[0] += part[0]; out[1] += part[1]
            }
            return out
        }
        #expect(try run(resetting: true) == run(resetting: false), "bit-identical")
    }

    @Test func badValuesAndEventsAreRefusedAndChangeNothing() throws {
        let (chain, mixer) = try mixerChain()
        let filter = LowPassFilterUnit()
        typealias LP = LowPassFilterUnit.Parameter
        for bad in [Float.nan, .infinity, -.infinity] {
            #expect(throws: AudioUnitError.invalidParameter) { try filter.setParameter(LP.cutoffFrequency, bad, scope: .global) }
            #expect(throws: AudioUnitError.invalidParameter) { try mixer.setParameter(Mixer.volume, bad, scope: .input, element: 0, bufferOffset: 5) }
        }
        // Clamped, and the clamped value reads back.
        for (value, expected) in [(Float(1e6), Float(24_000)), (0, 10), (-5, 10)] {
            try filter.setParameter(LP.cutoffFrequency, value, scope: .global)
            #expect(try filter.parameter(LP.cutoffFrequency, scope: .global) == expected)
        }
        try filter.setParameter(LP.resonance, 100, scope: .global)
        #expect(try filter.parameter(LP.resonance, scope: .global) == 40)
        try filter.setParameter(LP.resonance, -100, scope: .global)
        #expect(try filter.parameter(LP.resonance, scope: .global) == -20)

        func event(_ kind: AudioUnitParameterEvent.Kind, offset: Int = 0, id: AudioUnitParameterID = Mixer.volume, element: AudioUnitElement = 0) -> AudioUnitParameterEvent {
            AudioUnitParameterEvent(id: id, scope: .input, element: element, bufferOffset: offset, kind)
        }
        let refused: [(AudioUnitError, AudioUnitParameterEvent)] = [
            (.invalidPropertyValue, event(.immediate(value: 0), offset: -1)),
            (.invalidPropertyValue, event(.immediate(value: 0), offset: AudioUnitParameterEvent.maximumBufferOffset + 1)),
            (.invalidPropertyValue, event(.linearRamp(to: 0, durationFrames: 0))),
            (.invalidPropertyValue, event(.target(0, timeConstant: 0))),
            (.invalidPropertyValue, event(.target(0, timeConstant: .nan))),
            (.invalidParameter, event(.linearRamp(to: 0, durationFrames: 10), id: Mixer.enable)),
            (.invalidParameter, event(.immediate(value: .nan))),
            (.invalidParameter, event(.immediate(value: 0), id: 77)),
            (.invalidElement, event(.immediate(value: 0), element: 5)),
        ]
        for (code, bad) in refused {
            // A valid event first: the batch is checked whole, so it is not queued either.
            #expect(throws: code) { try mixer.scheduleParameters([event(.immediate(value: 0)), bad]) }
        }
        let out = try chain.render(dc, slice: 256)
        #expect(out[0].allSatisfy { $0 == 0.5 }, "nothing was scheduled")
    }

    @Test func filterExtremesStayFiniteAndLeaveOtherMixerInputsAlone() throws {
        // Input 0: noise through a filter driven to its extremes, panned hard left.
        // Input 1: a tone panned hard right. The right channel must be the tone, exactly.
        let graph = AudioGraph()
        let io = IOUnit(), filter = LowPassFilterUnit(), mixer = MultichannelMixerUnit(inputs: 2)
        let ioNode = try graph.addNode(io), filterNode = try graph.addNode(filter), mixerNode = try graph.addNode(mixer)
        try io.setInputEnabled(true)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, filterNode, destinationInputElement: 0)
        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
        let tone = sine(frequency: 440, frames: 256, amplitude: 0.25)
        try graph.setNodeInputCallback(mixerNode, inputElement: 1) { _, _, list in
            for c in 0..<list.channelCount { for f in 0..<list.frameCount { list[c][f] = tone[f] } }
            return 0
        }
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph)
        try mixer.setParameter(Mixer.pan, -1, scope: .input, element: 0)
        try mixer.setParameter(Mixer.pan, 1, scope: .input, element: 1)
        try graph.initialize()
        try graph.start()
        typealias LP = LowPassFilterUnit.Parameter
        let settings: [(Float, Float)] = [(24_000, 40), (0, 40), (-1, -20), (23_999, -20), (10, 40), (1e9, 40)]
        for (cutoff, resonance) in settings {
            try filter.setParameter(LP.cutoffFrequency, cutoff, scope: .global)
            try filter.setParameter(LP.resonance, resonance, scope: .global)
            for block in 0..<20 {
                let loud = noise(frames: 256, seed: UInt64(block + 1))
                let out = try renderer.render(input: [loud, loud], frameCount: 256, sliceFrames: 256)
                #expect(out[0].allSatisfy { $0.isFinite && abs($0) < 1000 }, "cutoff \(cutoff), Q \(resonance) dB: finite, bounded")
                #expect(out[1] == tone, "the other input is untouched")
            }
        }
    }
}

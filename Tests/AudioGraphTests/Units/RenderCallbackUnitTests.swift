// Tests, Units: RenderCallbackUnit, your own processing.
import AudioGraph
import Synchronization
import Testing
import AudioGraphTestSupport

@Suite("RenderCallbackUnit: your own processing")
struct RenderCallbackUnitTests {
    static let gainInfo = AudioUnitParameterInfo(id: 0, name: "Gain", unit: .linearGain, minValue: 0, maxValue: 4, defaultValue: 1)

    /// IO → unit (2 inputs: IO and, optionally, a callback) → IO.
    func graph(_ unit: RenderCallbackUnit, second: RenderCallback? = nil) throws -> (AudioGraph, OfflineRenderer) {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io), node = try graph.addNode(unit)
        try io.setInputEnabled(true)
        if unit.elementCount(.input) > 0 { try graph.connectNodeInput(ioNode, sourceOutputElement: 1, node, destinationInputElement: 0) }
        if let second { try graph.setNodeInputCallback(node, inputElement: 1, second) }
        try graph.connectNodeInput(node, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        return (graph, renderer)
    }

    @Test func gainAndSumOfTwoInputs() throws {
        let unit = try RenderCallbackUnit(inputs: 2, parameters: [Self.gainInfo]) { context in
            let gain = context.parameter(0)
            for element in 0..<context.inputCount {
                guard let input = context.input(element) else { continue }
                for c in 0..<context.output.channelCount {
                    for f in 0..<context.frameCount { context.output[c][f] += input[c][f] * gain }
                }
            }
            return 0
        }
        let (_, renderer) = try graph(unit) { _, _, list in
            for c in 0..<list.channelCount { for f in 0..<list.frameCount { list[c][f] = 0.125 } }
            return 0
        }
        try unit.setParameter(0, 2, scope: .global)
        let input = [noise(frames: 1000, seed: 5).map { $0 * 0.5 }, noise(frames: 1000, seed: 6).map { $0 * 0.5 }]
        let out = try renderer.render(input: input, frameCount: 1000, sliceFrames: 256)
        for c in 0..<2 { #expect(out[c] == input[c].map { ($0 * 2) + 0.125 * 2 }) }
        #expect(try unit.parameter(0, scope: .global) == 2)
        try unit.setParameter(0, 10, scope: .global)
        #expect(try unit.parameter(0, scope: .global) == 4, "clamped to the declared range")
    }

    @Test func scheduledChangesSplitTheSliceIntoPiecesWithTheirTimes() throws {
        let pieces = Mutex<[(Double, Int, Float)]>([])
        let unit = try RenderCallbackUnit(inputs: 0, parameters: [Self.gainInfo]) { context in
            pieces.withLock { $0.append((context.timeStamp.sampleTime, context.frameCount, context.parameter(0))) }
            for c in 0..<context.output.channelCount { for f in 0..<context.frameCount { context.output[c][f] = context.parameter(0) } }
            return 0
        }
        let (_, renderer) = try graph(unit)
        _ = try renderer.render(input: [], frameCount: 256, sliceFrames: 256)
        try unit.setParameter(0, 0.5, scope: .global, bufferOffset: 100)
        let out = try renderer.render(input: [], frameCount: 256, sliceFrames: 256)
        #expect(out[0][..<100].allSatisfy { $0 == 1 } && out[0][100...].allSatisfy { $0 == 0.5 })
        let seen = pieces.withLock { $0 }
        #expect(seen.count == 3)
        #expect(seen[1].0 == 256 && seen[1].1 == 100 && seen[1].2 == 1)
        #expect(seen[2].0 == 356 && seen[2].1 == 156 && seen[2].2 == 0.5)
    }

    @Test func failureRendersSilenceAndIsCounted() throws {
        let unit = try RenderCallbackUnit(inputs: 1) { context in
            for c in 0..<context.output.channelCount { for f in 0..<context.frameCount { context.output[c][f] = 1 } }
            return -1
        }
        let (_, renderer) = try graph(unit)
        let out = try renderer.render(input: [[1], [1]], frameCount: 512, sliceFrames: 256)
        #expect(out.allSatisfy { $0.allSatisfy { $0 == 0 } })
        #expect(unit.failedRenderCount == 2)
    }

    @Test func unconnectedInputIsNilAndInputsAreConverted() throws {
        // The unit runs at 16 kHz mono; the device is 48 kHz stereo: both sides convert.
        let saw = Mutex<(Int?, Int, Double)>((nil, 0, 0))
        let unit = try RenderCallbackUnit(inputs: 2) { context in
            saw.withLock { $0 = (context.input(1)?.channelCount, context.input(0)?.channelCount ?? -1, context.sampleRate) }
            if let input = context.input(0) { for f in 0..<context.frameCount { context.output[0][f] = input[0][f] } }
            return 0
        }
        try unit.setStreamFormat(.float32(sampleRate: 16_000, channels: 1), scope: .output, element: 0)
        let (graph, renderer) = try graph(unit)
        let tone = sine(frequency: 1000, frames: 48_000)
        let out = try renderer.render(input: [tone, tone], frameCount: 48_000, sliceFrames: 256)
        let state = saw.withLock { $0 }
        #expect(state.0 == nil && state.1 == 1 && state.2 == 16_000)
        let latency = Int((graph.renderLatency * 48_000).rounded())
        let gain = decibels(rms(out[1][(latency + 4800)..<40_000]) / rms(tone[4800..<(40_000 - latency)]))
        #expect(abs(gain) < 0.05, "1 kHz through a 16 kHz custom unit: \(gain) dB")
    }

    /// State the unit owns, handed back mutably: a frame counter written as the output carries
    /// on across slices of any size (and across the pieces automation splits them into).
    @Test func unitOwnedStateCarriesAcrossSlices() throws {
        struct Counter { var frames: Int = 0; var calls: Int = 0 }
        let unit = try RenderCallbackUnit(inputs: 0, state: Counter()) { counter, context in
            counter.calls += 1
            for f in 0..<context.frameCount { context.output[0][f] = Float(counter.frames + f) }
            counter.frames += context.frameCount
            return 0
        }
        let (_, renderer) = try graph(unit)
        let out = try renderer.render(input: [[], []], frameCount: 3000, sliceFrames: 256)
        #expect(out[0] == (0..<3000).map(Float.init), "one ramp, no restart at a slice boundary")
    }

    /// A RenderState box gives a plain render callback state of its own, the same way.
    @Test func renderStateKeepsACallbacksStateBetweenSlices() throws {
        let position = RenderState(0)
        let unit = try RenderCallbackUnit(inputs: 2) { context in
            if let input = context.input(1) { _ = context.output[0].update(from: input[0]) }
            return 0
        }
        let (_, renderer) = try graph(unit) { _, _, list in
            for f in 0..<list.frameCount { list[0][f] = Float(position.value + f) }
            position.value += list.frameCount
            return 0
        }
        let out = try renderer.render(input: [[], []], frameCount: 1000, sliceFrames: 128)
        #expect(out[0] == (0..<1000).map(Float.init))
        #expect(position.value == 1000)
    }

    @Test func badDefinitionsAreRefused() {
        let block: RenderCallbackUnit.Process = { _ in 0 }
        let wrongID = AudioUnitParameterInfo(id: 3, name: "X", unit: .linearGain, minValue: 0, maxValue: 1, defaultValue: 0)
        let notGlobal = AudioUnitParameterInfo(id: 0, name: "X", scope: .input, unit: .linearGain, minValue: 0, maxValue: 1, defaultValue: 0)
        let backwards = AudioUnitParameterInfo(id: 0, name: "X", unit: .linearGain, minValue: 1, maxValue: 0, defaultValue: 0)
        let infinite = AudioUnitParameterInfo(id: 0, name: "X", unit: .linearGain, minValue: 0, maxValue: .infinity, defaultValue: 0)
        for bad in [wrongID, notGlobal, backwards, infinite] {
            #expect(throws: AudioUnitError.invalidParameter) { try RenderCallbackUnit(parameters: [bad], process: block) }
        }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try RenderCallbackUnit(inputs: 65, process: block) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try RenderCallbackUnit(inputs: -1, process: block) }
    }
}

// Tests, Graph: render callbacks that pull other nodes' outputs (the AudioUnitRender-in-a-callback port).
import AudioGraph
import Synchronization
import Testing
import AudioGraphTestSupport

/// A mute switch shared between the control thread and a render callback (RealTimeRules'
/// "sharing state with a callback").
final class MuteSwitch: Sendable {
    let isOn = Atomic<Bool>(false)
}

@Suite("Render callbacks that pull node outputs")
struct PullingCallbackTests {
    /// IO element 0 fed by a callback that pulls the microphone (IO element 1) and zeroes it when
    /// muted: the classic AUGraph play-through. Bit-exact unmuted, exact zeros muted.
    @Test(arguments: [64, 256, 1000])
    func playThroughWithAMuteInTheCallback(slice: Int) throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let mute = MuteSwitch()
        try graph.setNodeInputCallback(ioNode, inputElement: IOUnit.outputElement,
                                       pulling: [AUNodeOutput(ioNode, element: IOUnit.inputElement)]) { context in
            let status = context.render(ioNode, element: IOUnit.inputElement)
            if mute.isOn.load(ordering: .relaxed) {
                for c in 0..<context.buffers.channelCount { context.buffers[c].update(repeating: 0) }
            }
            return status
        }
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        let left = noise(frames: 4800, seed: 1), right = noise(frames: 4800, seed: 2)
        let out = try renderer.render(input: [left, right], frameCount: 4800, sliceFrames: slice)
        #expect(out[0] == left && out[1] == right, "unmuted: the microphone passes bit for bit")
        mute.isOn.store(true, ordering: .relaxed)
        let muted = try renderer.render(input: [left, right], frameCount: 4800, sliceFrames: slice)
        #expect(muted.allSatisfy { $0.allSatisfy { $0 == 0 } }, "muted: exact zeros")
        #expect(graph.renderErrorCount == 0)
    }

    /// A unit read by two pulling callbacks and by a connection renders once per slice, and a
    /// node only pulled (connected to nothing else) renders too.
    @Test func aPulledNodeRendersOncePerSlice() throws {
        let calls = Atomic<Int>(0)
        let source = try RenderCallbackUnit(inputs: 1) { context in
            calls.add(1, ordering: .relaxed)
            if let input = context.input(0) {
                for c in 0..<context.output.channelCount { _ = context.output[c].update(from: input[c]) }
            }
            return 0
        }
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let sourceNode = try graph.addNode(source)
        let mixer = MultichannelMixerUnit(inputs: 3)
        let mixerNode = try graph.addNode(mixer)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, sourceNode, destinationInputElement: 0)
        let pulled = [AUNodeOutput(sourceNode)]
        for element: AudioUnitElement in 0...1 {
            try graph.setNodeInputCallback(mixerNode, inputElement: element, pulling: pulled) { context in
                context.render(sourceNode)
            }
        }
        try graph.connectNodeInput(sourceNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 2)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        let left = [Float](repeating: 0.1, count: 1024), right = [Float](repeating: -0.2, count: 1024)
        let out = try renderer.render(input: [left, right], frameCount: 1024, sliceFrames: 256)
        #expect(calls.load(ordering: .relaxed) == 4, "four slices, one render each")
        // Three inputs at unity gain, no pan: each output channel is three times its input.
        #expect(abs(out[0][500] - 0.3) < 1e-6 && abs(out[1][500] + 0.6) < 1e-6, "\(out[0][500]), \(out[1][500])")

        // Only pulled: the connection goes, the callbacks still read the unit, which still renders.
        try graph.disconnectNodeInput(mixerNode, inputElement: 2)
        try graph.update()
        calls.store(0, ordering: .relaxed)
        let again = try renderer.render(input: [left, right], frameCount: 512, sliceFrames: 256)
        #expect(calls.load(ordering: .relaxed) == 2)
        #expect(abs(again[0][100] - 0.2) < 1e-6)
    }

    /// The callback's own format: a mono source pulled into a 16-bit interleaved stereo callback
    /// fills both channels with the mono samples, encoded.
    @Test func pullsConvertToTheCallbacksSampleFormat() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        try io.setStreamFormat(.float32(sampleRate: 48_000, channels: 1), scope: .output, element: IOUnit.inputElement)
        let mixer = MultichannelMixerUnit(inputs: 1)
        try mixer.setStreamFormat(.float32(sampleRate: 48_000, channels: 2), scope: .output, element: 0)
        let mixerNode = try graph.addNode(mixer)
        let int16Stereo = try StreamFormat.int16(sampleRate: 48_000, channels: 2, interleaved: true)
        try mixer.setStreamFormat(int16Stereo, scope: .input, element: 0)
        let seen = Mutex<[Int16]>([])
        try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [AUNodeOutput(ioNode, element: 1)]) { context in
            let status = context.render(ioNode, element: 1)
            let samples = context.buffers.int16Samples(0)
            seen.withLock { $0 += samples }
            return status
        }
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        let input: [Float] = (0..<512).map { Float($0 - 256) / 512 }  // −0.5 … 0.498, exact in Int16
        _ = try renderer.render(input: [input], frameCount: 512, sliceFrames: 256)
        let expected = input.flatMap { [Int16($0 * 32_768), Int16($0 * 32_768)] }
        #expect(seen.withLock { $0 } == expected)
    }

    @Test func badPullsAreTypedErrorsAndChangeNothing() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let gate = MuteGateUnit()
        let gateNode = try graph.addNode(gate)
        let mixer = MultichannelMixerUnit(inputs: 2)
        let mixerNode = try graph.addNode(mixer)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
        try graph.connectNodeInput(gateNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let before = graph.interactions
        let noop: PullingRenderCallback = { _ in 0 }
        #expect(throws: AudioUnitError.invalidConnection, "the gate is fed by the mixer: a cycle") {
            try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [AUNodeOutput(gateNode)], noop)
        }
        #expect(throws: AudioUnitError.invalidElement, "IO element 0's output goes to the device") {
            try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [AUNodeOutput(ioNode, element: 0)], noop)
        }
        #expect(throws: AudioUnitError.invalidElement) {
            try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [AUNodeOutput(gateNode, element: 1)], noop)
        }
        #expect(throws: AudioUnitError.nodeNotFound) {
            try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [AUNodeOutput(AUNode(rawValue: 99))], noop)
        }
        #expect(throws: AudioUnitError.invalidPropertyValue, "nothing to pull") {
            try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [], noop)
        }
        #expect(throws: AudioUnitError.invalidPropertyValue, "named twice") {
            try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [AUNodeOutput(ioNode, element: 1), AUNodeOutput(ioNode, element: 1)], noop)
        }
        #expect(throws: AudioUnitError.invalidElement, "the device's input cannot be fed") {
            try graph.setNodeInputCallback(ioNode, inputElement: 1, pulling: [AUNodeOutput(ioNode, element: 1)], noop)
        }
        #expect(graph.interactions == before)
        #expect(mixer.elementCount(.input) == 2)

        // A source at another rate: refused when the graph compiles, all or none.
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        let slow = try RenderCallbackUnit(inputs: 0) { _ in 0 }
        try slow.setStreamFormat(.float32(sampleRate: 16_000, channels: 2), scope: .output, element: 0)
        let slowNode = try graph.addNode(slow)
        try graph.setNodeInputCallback(mixerNode, inputElement: 0, pulling: [AUNodeOutput(slowNode)], noop)
        #expect(throws: AudioUnitError.formatNotSupported) { try graph.update() }
        let out = try renderer.render(input: [[0.25], [0.25]], frameCount: 1)
        #expect(out[0] == [0], "the running plan is the one before: the mixer's inputs are unfed")
    }

    /// An output the callback did not declare, and one removed since: the documented statuses,
    /// counted as render errors, and silence.
    @Test func undeclaredAndRemovedSourcesReportTheirStatus() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let gate = MuteGateUnit()
        let gateNode = try graph.addNode(gate)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, gateNode, destinationInputElement: 0)
        let statuses = Mutex<[Int32]>([])
        try graph.setNodeInputCallback(ioNode, inputElement: 0, pulling: [AUNodeOutput(gateNode)]) { context in
            let undeclared = context.render(ioNode, element: 1)
            let declared = context.render(gateNode)
            statuses.withLock { $0 = [undeclared, declared] }
            return declared
        }
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 1)
        try graph.initialize()
        try graph.start()
        let tone = sine(frequency: 1000, frames: 256)
        #expect(try renderer.render(input: [tone], frameCount: 256) == [tone])
        #expect(statuses.withLock { $0 } == [AudioUnitError.invalidElement.rawValue, 0])
        try graph.removeNode(gateNode)
        try graph.update()
        let out = try renderer.render(input: [tone], frameCount: 256)
        #expect(statuses.withLock { $0 } == [AudioUnitError.invalidElement.rawValue, AudioUnitError.noConnection.rawValue])
        #expect(out[0].allSatisfy { $0 == 0 } && graph.renderErrorCount == 1)
    }
}

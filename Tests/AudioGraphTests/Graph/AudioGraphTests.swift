// Tests, Graph: graph edits, lifecycle and errors.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("Graph edits, lifecycle and errors")
struct AudioGraphTests {
    @Test func connectionErrorsGiveExactCodesAndChangeNothing() throws {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        let gate = try graph.addNode(MuteGateUnit())
        let filter = try graph.addNode(LowPassFilterUnit())
        let mixer = try graph.addNode(MultichannelMixerUnit(inputs: 2))
        try graph.connectNodeInput(io, sourceOutputElement: 1, gate, destinationInputElement: 0)
        try graph.connectNodeInput(gate, sourceOutputElement: 0, filter, destinationInputElement: 0)
        try graph.connectNodeInput(filter, sourceOutputElement: 0, mixer, destinationInputElement: 0)
        let before = graph.connections
        let ghost = AUNode(rawValue: 999)

        #expect(throws: AudioUnitError.nodeNotFound) { try graph.connectNodeInput(ghost, sourceOutputElement: 0, mixer, destinationInputElement: 1) }
        #expect(throws: AudioUnitError.nodeNotFound) { try graph.connectNodeInput(gate, sourceOutputElement: 0, ghost, destinationInputElement: 0) }
        #expect(throws: AudioUnitError.invalidElement) { try graph.connectNodeInput(gate, sourceOutputElement: 3, mixer, destinationInputElement: 1) }
        #expect(throws: AudioUnitError.invalidElement) { try graph.connectNodeInput(gate, sourceOutputElement: 0, mixer, destinationInputElement: 3) }  // 2 would add an input
        #expect(throws: AudioUnitError.invalidConnection, "already fed") { try graph.connectNodeInput(io, sourceOutputElement: 1, gate, destinationInputElement: 0) }
        #expect(throws: AudioUnitError.invalidConnection, "cycle") { try graph.connectNodeInput(mixer, sourceOutputElement: 0, mixer, destinationInputElement: 1) }
        let gate2 = try graph.addNode(MuteGateUnit())
        try graph.connectNodeInput(mixer, sourceOutputElement: 0, gate2, destinationInputElement: 0)
        #expect(throws: AudioUnitError.invalidConnection, "longer cycle") { try graph.connectNodeInput(gate2, sourceOutputElement: 0, mixer, destinationInputElement: 1) }
        try graph.disconnectNodeInput(gate2, inputElement: 0)
        #expect(throws: AudioUnitError.invalidElement, "IO element 0 does not feed") { try graph.connectNodeInput(io, sourceOutputElement: 0, mixer, destinationInputElement: 1) }
        #expect(throws: AudioUnitError.invalidElement, "IO element 1 is the device side") { try graph.connectNodeInput(mixer, sourceOutputElement: 0, io, destinationInputElement: 1) }
        #expect(throws: AudioUnitError.invalidElement, "a callback cannot feed the device's input") { try graph.setNodeInputCallback(io, inputElement: IOUnit.inputElement) { _, _, _ in 0 } }
        #expect(AudioUnitError.invalidElement.description.contains("element 1 is the device's input"))
        #expect(throws: AudioUnitError.noConnection) { try graph.disconnectNodeInput(mixer, inputElement: 1) }
        #expect(throws: AudioUnitError.invalidElement) { try graph.disconnectNodeInput(mixer, inputElement: 9) }
        #expect(throws: AudioUnitError.nodeNotFound) { try graph.disconnectNodeInput(ghost, inputElement: 0) }
        #expect(throws: AudioUnitError.nodeNotFound) { try graph.removeNode(ghost) }
        #expect(graph.connections == before)
    }

    @Test func graphMembershipRules() throws {
        let graph = AudioGraph()
        let gate = MuteGateUnit()
        try graph.addNode(gate)
        #expect(throws: AudioUnitError.invalidAudioUnit) { try graph.addNode(gate) }
        #expect(throws: AudioUnitError.invalidAudioUnit) { try AudioGraph().addNode(gate) }
        #expect(throws: AudioUnitError.outputNodeErr, "no IO node") { try graph.initialize() }
        try graph.addNode(IOUnit())
        #expect(throws: AudioUnitError.outputNodeErr, "second IO node") { try graph.addNode(IOUnit()) }
        #expect(throws: AudioUnitError.uninitialized) { try graph.start() }
        #expect(graph.nodeCount == 2)
        #expect(throws: AudioUnitError.invalidElement) { try graph.node(at: 2) }
        #expect(try graph.nodeInfo(try graph.node(at: 0)) === gate)
    }

    @Test func removedNodeCanJoinAnotherGraphAfterUpdate() throws {
        let chain = try Chain([MuteGateUnit()])
        let gate = try chain.graph.nodeInfo(chain.nodes[0])
        try chain.graph.removeNode(chain.nodes[0])
        #expect(throws: AudioUnitError.invalidAudioUnit) { try AudioGraph().addNode(gate) }
        try chain.graph.update()
        #expect(throws: AudioUnitError.nodeNotFound) { try chain.graph.nodeInfo(chain.nodes[0]) }
        #expect(!gate.isInitialized)
        try AudioGraph().addNode(gate)
        // The IO output lost its source: silence.
        let out = try chain.render([[Float](repeating: 0.5, count: 64), [Float](repeating: 0.5, count: 64)])
        #expect(out[0].allSatisfy { $0 == 0 })
    }

    @Test func failedUpdateIsAllOrNoneAndAudioKeepsFlowing() throws {
        let chain = try Chain([MuteGateUnit(), MultichannelMixerUnit(inputs: 2)])
        let graph = chain.graph
        let input = [noise(frames: 512, seed: 1), noise(frames: 512, seed: 2)]
        #expect(try chain.render(input) == input)
        let before = graph.connections

        // A mixer at 100 Hz cannot feed a 48 kHz device (libsamplerate converts ratios up to
        // 256): the whole batch fails at update().
        let odd = MultichannelMixerUnit(inputs: 1)
        try odd.setStreamFormat(try .float32(sampleRate: 100, channels: 2), scope: .output, element: 0)
        let oddNode = try graph.addNode(odd)
        try graph.disconnectNodeInput(chain.ioNode, inputElement: 0)
        try graph.connectNodeInput(chain.nodes[1], sourceOutputElement: 0, oddNode, destinationInputElement: 0)
        try graph.connectNodeInput(oddNode, sourceOutputElement: 0, chain.ioNode, destinationInputElement: 0)
        #expect(graph.hasPendingEdits)
        #expect(throws: AudioUnitError.formatNotSupported) { try graph.update() }
        #expect(graph.connections == before, "the queued edits were discarded")
        #expect(!graph.hasPendingEdits)
        #expect(try chain.render(input) == input, "audio flows exactly as before")
    }

    @Test func editsWhileRunningApplyAtUpdateAndKeepState() throws {
        let chain = try Chain([MuteGateUnit(), MultichannelMixerUnit(inputs: 2)])
        let graph = chain.graph
        let filter = LowPassFilterUnit()
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 1000, scope: .global)
        let filterNode = try graph.addNode(filter)
        try graph.disconnectNodeInput(chain.nodes[0], inputElement: 0)
        try graph.connectNodeInput(chain.ioNode, sourceOutputElement: 1, filterNode, destinationInputElement: 0)
        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, chain.nodes[0], destinationInputElement: 0)
        let tone = [sine(frequency: 8000, frames: 4800), sine(frequency: 8000, frames: 4800)]
        let unfiltered = try chain.render(tone)
        #expect(unfiltered == tone, "queued edits are not heard before update()")
        try graph.update()
        #expect(filter.isInitialized)
        let filtered = try chain.render(tone)
        #expect(decibels(rms(filtered[0][2400...]) / rms(tone[0][2400...])) < -30)
    }

    @Test func fanOutRendersTheSourceOncePerSlice() throws {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        let gate = try graph.addNode(MuteGateUnit())
        let mixer = try graph.addNode(MultichannelMixerUnit(inputs: 2))
        let calls = Counter()
        try graph.setNodeInputCallback(gate, inputElement: 0) { _, _, buffers in
            calls.increment()
            for c in 0..<buffers.channelCount { for f in 0..<buffers.frameCount { buffers[c][f] = 0.25 } }
            return 0
        }
        try graph.connectNodeInput(gate, sourceOutputElement: 0, mixer, destinationInputElement: 0)
        try graph.connectNodeInput(gate, sourceOutputElement: 0, mixer, destinationInputElement: 1)
        try graph.connectNodeInput(mixer, sourceOutputElement: 0, io, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        let out = try renderer.render(input: [], frameCount: 1024, sliceFrames: 256)
        #expect(calls.value == 4, "one pull per slice, not one per consumer")
        #expect(out[0].allSatisfy { $0 == 0.5 } && out[1].allSatisfy { $0 == 0.5 }, "both mixer inputs summed")
    }

    @Test func failingRenderCallbackRendersSilenceAndIsCounted() throws {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        try graph.setNodeInputCallback(io, inputElement: 0) { _, _, buffers in
            buffers[0][0] = 1
            return -1
        }
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        let out = try renderer.render(input: [], frameCount: 512, sliceFrames: 256)
        #expect(out.allSatisfy { $0.allSatisfy { $0 == 0 } })
        #expect(graph.renderErrorCount == 2)
    }

    @Test func editFromTheRenderThreadIsRefused() throws {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        let box = ErrorBox()
        try graph.setNodeInputCallback(io, inputElement: 0) { _, _, _ in
            do throws(AudioUnitError) { try graph.clearConnections() } catch { box.set(error) }
            return 0
        }
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        _ = try renderer.render(input: [], frameCount: 256)
        #expect(box.error == .cannotDoInCurrentContext)
        #expect(graph.connections.isEmpty && !graph.hasPendingEdits)
    }

    @Test func stoppedGraphRendersSilence() throws {
        let chain = try Chain([MuteGateUnit()])
        chain.graph.stop()
        #expect(!chain.graph.isRunning)
        let out = try chain.render([[Float](repeating: 0.5, count: 256), [Float](repeating: 0.5, count: 256)])
        #expect(out.allSatisfy { $0.allSatisfy { $0 == 0 } })
        try chain.graph.uninitialize()
        #expect(throws: AudioUnitError.uninitialized) { try chain.render([[0]]) }
    }

    @Test func dumpNamesMembersConnectionsAndFormats() throws {
        let chain = try Chain([MuteGateUnit(), MultichannelMixerUnit(inputs: 1)])
        let text = chain.graph.description
        #expect(text.contains("initialized, running"))
        #expect(text.contains("muteGate") && text.contains("multichannelMixer") && text.contains("← node 1:1"))
        #expect(text.contains("48000 Hz, 2 ch, Float32, non-interleaved"))
    }

    /// The dump with an application's names for its nodes (graphrun: the file's ids): named
    /// nodes and the connections from them use the names, an unnamed node keeps its number.
    @Test func dumpCallsNodesByTheNamesGiven() throws {
        let chain = try Chain([MuteGateUnit(), MultichannelMixerUnit(inputs: 1)])
        let text = chain.graph.description(nodeNames: [chain.ioNode: "io", chain.nodes[0]: "gate"])
        #expect(text.contains("\n  io: io\n") && text.contains("\n  gate: muteGate\n"), "\(text)")
        #expect(text.contains("← io:1") && text.contains("← gate:0"), "connections from named nodes: \(text)")
        #expect(text.contains("\n  \(chain.nodes[1]): multichannelMixer\n") && text.contains("← \(chain.nodes[1]):0"), "an unnamed node keeps its number: \(text)")
        #expect(chain.graph.description(nodeNames: [:]) == chain.graph.description)
    }
}

// SAFETY (@unchecked Sendable): touched by callbacks the offline renderer calls on the test's own thread, and read there after.
final class Counter: @unchecked Sendable {
    private var count = 0
    func increment() { count += 1 }
    var value: Int { count }
}

// SAFETY (@unchecked Sendable): set by a callback the offline renderer calls on the test's own thread, read there after.
final class ErrorBox: @unchecked Sendable {
    private(set) var error: AudioUnitError?
    func set(_ e: AudioUnitError) { error = e }
}

@Suite("Callbacks and connection properties")
struct CallbackTests {
    @Test func inputCallbackSeesTheDeviceInputEachSlice() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let node = try graph.addNode(io)
        try io.setInputEnabled(true)
        let seen = SampleLog()
        try io.setProperty(.setInputCallback, scope: .global, element: 0, .inputCallback { time, buffers in
            seen.record(time: time.sampleTime, first: buffers[0][0], frames: buffers.frameCount)
        })
        try graph.connectNodeInput(node, sourceOutputElement: 1, node, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 1)
        try graph.initialize()
        try graph.start()
        let ramp = (0..<512).map { Float($0) / 512 }
        _ = try renderer.render(input: [ramp], frameCount: 512, sliceFrames: 128)
        #expect(seen.entries.map(\.time) == [0, 128, 256, 384], "time stamps advance by the slice")
        #expect(seen.entries.map(\.first) == [0, 0.25, 0.5, 0.75])
        #expect(seen.entries.allSatisfy { $0.frames == 128 })
        #expect(throws: AudioUnitError.initialized) {
            try io.setProperty(.setInputCallback, scope: .global, element: 0, .inputCallback(nil))
        }
    }

    @Test func renderCallbackAndMakeConnectionPropertiesAreGraphEdits() throws {
        let graph = AudioGraph()
        let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: 2), gate = MuteGateUnit()
        try gate.setProperty(.setRenderCallback, scope: .input, element: 0, .renderCallback { _, _, buffers in
            for c in 0..<buffers.channelCount { for f in 0..<buffers.frameCount { buffers[c][f] = 0.5 } }
            return 0
        })
        let ioNode = try graph.addNode(io)
        try graph.addNode(gate)
        try graph.addNode(mixer)
        #expect(throws: AudioUnitError.invalidScope) {
            try mixer.setProperty(.makeConnection, scope: .output, element: 0, .connection(AudioUnitConnection(sourceUnit: gate, sourceOutputElement: 0)))
        }
        try mixer.setProperty(.makeConnection, scope: .input, element: 1, .connection(AudioUnitConnection(sourceUnit: gate, sourceOutputElement: 0)))
        try graph.connectNodeInput(try #require(mixer.nodeForTest), sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        #expect(graph.connections.count == 2)
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        let out = try renderer.render(input: [], frameCount: 256)
        #expect(out[0].allSatisfy { $0 == 0.5 }, "callback set on the unit before it joined the graph feeds it")
        try mixer.setProperty(.makeConnection, scope: .input, element: 1, .connection(AudioUnitConnection(sourceUnit: nil, sourceOutputElement: 0)))
        try graph.update()
        #expect(try renderer.render(input: [], frameCount: 256)[0].allSatisfy { $0 == 0 })
    }
}

extension AudioUnit {
    var nodeForTest: AUNode? { node }
}

// SAFETY (@unchecked Sendable): appended to by a callback the offline renderer calls on the test's own thread, read there after.
final class SampleLog: @unchecked Sendable {
    struct Entry { let time: Double; let first: Float; let frames: Int }
    private(set) var entries: [Entry] = []
    func record(time: Double, first: Float, frames: Int) { entries.append(Entry(time: time, first: first, frames: frames)) }
}

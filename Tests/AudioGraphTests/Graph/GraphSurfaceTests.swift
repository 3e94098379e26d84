// Tests, Graph: interactions, render notifications, CPU load.
import AudioGraph
import Synchronization
import Testing
import AudioGraphTestSupport

@Suite("Interactions, render notifications, CPU load")
struct GraphSurfaceTests {
    @Test func interactionsListConnectionsAndCallbacks() throws {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        let gate = try graph.addNode(MuteGateUnit())
        let mixer = try graph.addNode(MultichannelMixerUnit(inputs: 2))
        try graph.connectNodeInput(io, sourceOutputElement: 1, gate, destinationInputElement: 0)
        try graph.connectNodeInput(gate, sourceOutputElement: 0, mixer, destinationInputElement: 0)
        try graph.setNodeInputCallback(mixer, inputElement: 1) { _, _, _ in 0 }
        try graph.connectNodeInput(mixer, sourceOutputElement: 0, io, destinationInputElement: 0)
        let c = { (s: AUNode, se: UInt32, d: AUNode, de: UInt32) in
            AUNodeInteraction.connection(AUNodeConnection(sourceNode: s, sourceOutputElement: se, destinationNode: d, destinationInputElement: de))
        }
        #expect(graph.interactions == [c(mixer, 0, io, 0), c(io, 1, gate, 0), c(gate, 0, mixer, 0),
                                       .inputCallback(destinationNode: mixer, destinationInputElement: 1)])
        #expect(try graph.interactions(of: gate) == [c(io, 1, gate, 0), c(gate, 0, mixer, 0)])
        #expect(try graph.interactions(of: mixer).count == 3)
        #expect(graph.nodeCount == 3)
        #expect(try graph.node(at: 2) == mixer)
        #expect(throws: AudioUnitError.nodeNotFound) { try graph.interactions(of: AUNode(rawValue: 42)) }
        #expect(throws: AudioUnitError.invalidElement) { try graph.node(at: 3) }
        try graph.clearConnections()
        #expect(graph.interactions.isEmpty)
        #expect(graph.description.contains("(unconnected)"))
    }

    @Test func notificationsSeeInputBeforeAndOutputAfterEachSlice() throws {
        let gate = MuteGateUnit()
        let chain = try Chain([gate])
        let calls = Mutex<[(RenderNotificationPhase, Double, Float)]>([])
        let token = try chain.graph.addRenderNotification { phase, time, buffers in
            let first = buffers.channelCount > 0 ? buffers[0][0] : .nan
            calls.withLock { $0.append((phase, time.sampleTime, first)) }
            // A post-render notification may write the output (here: a final gain of 2).
            if phase == .postRender { for c in 0..<buffers.channelCount { for f in 0..<buffers.frameCount { buffers[c][f] *= 2 } } }
        }
        let input = [[Float](repeating: 0.25, count: 512), [Float](repeating: 0.25, count: 512)]
        let out = try chain.render(input, slice: 256)
        #expect(out[0].allSatisfy { $0 == 0.5 }, "the post-render notification's gain reached the device")
        let seen = calls.withLock { $0 }
        #expect(seen.map(\.0) == [.preRender, .postRender, .preRender, .postRender])
        #expect(seen.map(\.1) == [256, 256, 512, 512].map { Double($0 - 256) })
        #expect(seen[0].2 == 0.25 && seen[1].2 == 0.25, "pre sees the input, post the output before its gain")

        try chain.graph.removeRenderNotification(token)
        let plain = try chain.render(input, slice: 256)
        #expect(plain[0].allSatisfy { $0 == 0.25 })
        #expect(calls.withLock { $0.count } == 4, "not called after removal")
        #expect(throws: AudioUnitError.invalidPropertyValue) { try chain.graph.removeRenderNotification(token) }
    }

    @Test func editsAndNotificationChangesFromTheRenderThreadAreRefused() throws {
        let chain = try Chain([MuteGateUnit()])
        let graph = chain.graph
        let codes = Mutex<[AudioUnitError]>([])
        try graph.addRenderNotification { phase, _, _ in
            guard phase == .preRender else { return }
            do throws(AudioUnitError) { try graph.addRenderNotification { _, _, _ in } } catch { codes.withLock { $0.append(error) } }
            do throws(AudioUnitError) { try graph.clearConnections() } catch { codes.withLock { $0.append(error) } }
            do throws(AudioUnitError) { try graph.update() } catch { codes.withLock { $0.append(error) } }
        }
        _ = try chain.render([[0], [0]], slice: 1)
        #expect(codes.withLock { $0 } == [.cannotDoInCurrentContext, .cannotDoInCurrentContext, .cannotDoInCurrentContext])
    }

    @Test func cpuLoadIsMeasuredAndResetOnRead() throws {
        let chain = try Chain([LowPassFilterUnit(), MuteGateUnit()])
        _ = chain.graph.cpuLoad()
        _ = try chain.render([noise(frames: 48_000, seed: 1), noise(frames: 48_000, seed: 2)], slice: 256)
        let load = chain.graph.cpuLoad()
        #expect(load.average > 0 && load.average < 1, "average \(load.average)")
        #expect(load.maximum >= load.average, "maximum \(load.maximum)")
        let again = chain.graph.cpuLoad()
        #expect(again.average == 0 && again.maximum == 0, "reset by the read")
    }
}

@Suite("A mixer with no inputs")
struct EmptyMixerTests {
    @Test func rendersZerosThenTakesConnectionsWhileRunning() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let mixer = MultichannelMixerUnit(inputs: 0)
        let mixerNode = try graph.addNode(mixer)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        let input = [noise(frames: 512, seed: 1), noise(frames: 512, seed: 2)]
        #expect(try renderer.render(input: input, frameCount: 512).allSatisfy { $0.allSatisfy { $0 == 0 } }, "exact zeros")

        // Connections to the next input add it, while running; a gap is still an error.
        #expect(throws: AudioUnitError.invalidElement) {
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, mixerNode, destinationInputElement: 1)
        }
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, mixerNode, destinationInputElement: 0)
        #expect(mixer.elementCount(.input) == 1)
        try graph.setNodeInputCallback(mixerNode, inputElement: 1) { _, _, list in
            for c in 0..<list.channelCount { for f in 0..<list.frameCount { list[c][f] = 0.25 } }
            return 0
        }
        #expect(mixer.elementCount(.input) == 2)
        #expect(try mixer.parameter(MultichannelMixerUnit.Parameter.volume, scope: .input, element: 1) == 1, "unity gain")
        try graph.update()
        let out = try renderer.render(input: input, frameCount: 512)
        for c in 0..<2 { #expect(out[c] == input[c].map { $0 + 0.25 }) }
    }

    @Test func aFailedUpdateTakesTheAddedInputAwayAndParametersStillReachTheRenderer() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let mixer = MultichannelMixerUnit(inputs: 1)
        let mixerNode = try graph.addNode(mixer)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        // A 100 Hz filter cannot be resampled to 48 kHz: the batch that adds input 1 fails.
        let odd = LowPassFilterUnit()
        try odd.setStreamFormat(.float32(sampleRate: 100, channels: 2), scope: .output, element: 0)
        let oddNode = try graph.addNode(odd)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, oddNode, destinationInputElement: 0)
        try graph.connectNodeInput(oddNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 1)
        #expect(mixer.elementCount(.input) == 2)
        #expect(throws: AudioUnitError.formatNotSupported) { try graph.update() }
        #expect(mixer.elementCount(.input) == 1, "the input the failed batch added is gone")
        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0.5, scope: .input, element: 0)
        let input = [[Float](repeating: 0.5, count: 512), [Float](repeating: 0.5, count: 512)]
        let out = try renderer.render(input: input, frameCount: 512)
        #expect(out[0].suffix(256).allSatisfy { $0 == 0.25 }, "the running plan hears the parameter")
    }
}

@Suite("Following a new device rate")
struct MoveSetFormatsTests {
    /// moveSetFormats moves only formats set at the old rate, refuses a rate no format can carry
    /// (changing nothing) and refuses an initialized graph.
    @Test func movingSetFormatsMovesOnlyThoseAtTheOldRate() throws {
        let graph = AudioGraph()
        let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: 1)
        let ioNode = try graph.addNode(io), mixerNode = try graph.addNode(mixer)
        try mixer.setStreamFormat(try .float32(sampleRate: 48_000, channels: 2), scope: .output, element: 0)
        try mixer.setStreamFormat(try .float32(sampleRate: 48_000, channels: 1), scope: .input, element: 0)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        #expect(throws: AudioUnitError.formatNotSupported) { try graph.moveSetFormats(from: 48_000, to: 0) }
        #expect(try mixer.streamFormat(scope: .output, element: 0).sampleRate == 48_000)
        let other = MultichannelMixerUnit(inputs: 1)
        _ = try graph.addNode(other)
        try other.setStreamFormat(try .float32(sampleRate: 44_100, channels: 2), scope: .output, element: 0)
        try graph.moveSetFormats(from: 48_000, to: 96_000)
        #expect(try other.streamFormat(scope: .output, element: 0).sampleRate == 44_100, "set at another rate: kept")
        #expect(try mixer.streamFormat(scope: .output, element: 0).sampleRate == 96_000)
        #expect(try mixer.streamFormat(scope: .input, element: 0) == .float32(sampleRate: 96_000, channels: 1))
        try io.configureDevice(inputChannels: 2, outputChannels: 2, sampleRate: 96_000)
        try graph.initialize()
        #expect(throws: AudioUnitError.initialized) { try graph.moveSetFormats(from: 96_000, to: 48_000) }
    }
}

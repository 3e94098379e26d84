// Tests, Render: independent branches rendered on several threads give the single-threaded render's output bit for bit.
import Foundation
import Synchronization
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("Rendering branches on several threads")
struct ParallelRenderTests {
    /// IO → two chains of `length` biquads (low-passes and high-passes at different cutoffs) →
    /// mixer inputs 0 and 1 → IO.
    static func twoChains(length: Int, mixerInputs: Int = 2) throws -> AudioGraph {
        let graph = AudioGraph()
        let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: mixerInputs)
        let ioNode = try graph.addNode(io), mixerNode = try graph.addNode(mixer)
        try io.setInputEnabled(true)
        for branch in 0..<2 {
            var previous = (ioNode, IOUnit.inputElement)
            for i in 0..<length {
                let unit: AudioUnit
                if branch == 0 {
                    let filter = LowPassFilterUnit()
                    try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, Float(2000 + 50 * i), scope: .global)
                    unit = filter
                } else {
                    let filter = HighPassFilterUnit()
                    try filter.setParameter(HighPassFilterUnit.Parameter.cutoffFrequency, Float(100 + 10 * i), scope: .global)
                    unit = filter
                }
                let node = try graph.addNode(unit)
                try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, node, destinationInputElement: 0)
                previous = (node, 0)
            }
            try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, mixerNode, destinationInputElement: AudioUnitElement(branch))
        }
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
        return graph
    }

    /// A wider graph with every kind of dependency: four branches of different lengths and units
    /// (biquads, a delay, a compressor, a sample delay), a render callback on a mixer input, a
    /// pulling callback that reads two branches, fan-in mixers in two levels, a 16 kHz mono island
    /// (converters both ways) and latency compensation.
    static func wideGraph() throws -> AudioGraph {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        func chain(_ units: [AudioUnit]) throws -> AUNode {
            var previous = (ioNode, IOUnit.inputElement)
            for unit in units {
                let node = try graph.addNode(unit)
                try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, node, destinationInputElement: 0)
                previous = (node, 0)
            }
            return previous.0
        }
        let delay = DelayUnit()
        try delay.setParameter(DelayUnit.Parameter.delayTime, 0.013, scope: .global)
        let island = LowPassFilterUnit()
        try island.setStreamFormat(.float32(sampleRate: 16_000, channels: 1), scope: .output, element: 0)
        let sampleDelay = SampleDelayUnit()
        let a = try chain((0..<12).map { _ in LowPassFilterUnit() })
        let b = try chain([HighPassFilterUnit(), delay, DynamicsProcessorUnit()])
        let c = try chain([island, HighPassFilterUnit()])
        let d = try chain([sampleDelay, LowPassFilterUnit(), LowPassFilterUnit()])
        let first = MultichannelMixerUnit(inputs: 3), second = MultichannelMixerUnit(inputs: 3), root = MultichannelMixerUnit(inputs: 2)
        let firstNode = try graph.addNode(first), secondNode = try graph.addNode(second), rootNode = try graph.addNode(root)
        try graph.connectNodeInput(a, sourceOutputElement: 0, firstNode, destinationInputElement: 0)
        try graph.connectNodeInput(b, sourceOutputElement: 0, firstNode, destinationInputElement: 1)
        try graph.setNodeInputCallback(firstNode, inputElement: 2) { timeStamp, _, buffers in
            for f in 0..<buffers.frameCount {
                let v = 0.1 * Float(sin((timeStamp.sampleTime + Double(f)) * 0.031))
                for ch in 0..<buffers.channelCount { buffers[ch][f] = v }
            }
            return 0
        }
        try graph.connectNodeInput(c, sourceOutputElement: 0, secondNode, destinationInputElement: 0)
        try graph.connectNodeInput(d, sourceOutputElement: 0, secondNode, destinationInputElement: 1)
        try graph.setNodeInputCallback(secondNode, inputElement: 2,
                                       pulling: [AUNodeOutput(a), AUNodeOutput(d)]) { context in
            let status = context.render(a, element: 0)
            guard status == 0 else { return status }
            let first = (0..<context.buffers.channelCount).map { Array(context.buffers[$0]) }
            let again = context.render(d, element: 0)
            for ch in 0..<context.buffers.channelCount {
                for f in 0..<context.buffers.frameCount { context.buffers[ch][f] = 0.5 * (context.buffers[ch][f] - first[ch][f]) }
            }
            return again
        }
        try graph.connectNodeInput(firstNode, sourceOutputElement: 0, rootNode, destinationInputElement: 0)
        try graph.connectNodeInput(secondNode, sourceOutputElement: 0, rootNode, destinationInputElement: 1)
        try graph.connectNodeInput(rootNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
        return graph
    }

    /// Renders `graph` on `threads` threads over real speech (left) and noise (right).
    static func render(_ graph: AudioGraph, threads: Int, slice: Int = 256, frames: Int = 48_000) throws -> (output: [[Float]], inUse: Int) {
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.setRenderThreads(threads)
        try graph.initialize()
        try graph.start()
        let speech = Array(Speech.load().samples.prefix(frames))
        let input = [speech + [Float](repeating: 0, count: frames - speech.count), noise(frames: frames, seed: 7).map { $0 * 0.3 }]
        let output = try renderer.render(input: input, frameCount: frames, sliceFrames: slice)
        return (output, graph.renderThreadsInUse)
    }

    @Test(arguments: [2, 3, 4])
    func twoChainsOfBiquadsRenderTheSameOnSeveralThreads(threads: Int) throws {
        let serial = try Self.render(Self.twoChains(length: 30), threads: 1)
        let parallel = try Self.render(Self.twoChains(length: 30), threads: threads)
        #expect(serial.inUse == 1 && parallel.inUse == threads)
        #expect(parallel.output == serial.output, "bit for bit the single-threaded render")
        #expect(serial.output[0].contains { $0 != 0 } && serial.output[1].contains { $0 != 0 }, "audio came through")
    }

    @Test(arguments: [(2, 64), (3, 256), (4, 1000)])
    func aWideGraphWithCallbacksConvertersAndCompensationRendersTheSame(threads: Int, slice: Int) throws {
        let serial = try Self.render(Self.wideGraph(), threads: 1, slice: slice)
        let parallel = try Self.render(Self.wideGraph(), threads: threads, slice: slice)
        #expect(parallel.inUse == threads)
        #expect(parallel.output == serial.output, "bit for bit the single-threaded render")
        #expect(serial.output[0].contains { $0 != 0 }, "audio came through")
    }

    /// The default (0) keeps a small graph on one thread and spreads a heavy one with two
    /// independent branches over two threads (one where the machine has one core).
    @Test func theChosenThreadCountFollowsTheEstimatedCost() throws {
        let small = AudioGraph()
        let io = IOUnit()
        let ioNode = try small.addNode(io), gate = try small.addNode(MuteGateUnit())
        try io.setInputEnabled(true)
        try small.connectNodeInput(ioNode, sourceOutputElement: 1, gate, destinationInputElement: 0)
        try small.connectNodeInput(gate, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        #expect(try Self.render(small, threads: 0, frames: 4800).inUse == 1)
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let heavy = try Self.render(Self.twoChains(length: 30), threads: 0, frames: 4800)
        #expect(heavy.inUse == min(2, cores), "two equal branches of 30 biquads: \(heavy.inUse) thread(s) on \(cores) core(s)")
        #expect(heavy.output == (try Self.render(Self.twoChains(length: 30), threads: 1, frames: 4800)).output)
        // A long chain has no independent branches: one thread, however costly.
        let chain = AudioGraph()
        let chainIO = IOUnit()
        let chainIONode = try chain.addNode(chainIO)
        try chainIO.setInputEnabled(true)
        var previous = (chainIONode, IOUnit.inputElement)
        for _ in 0..<60 {
            let node = try chain.addNode(LowPassFilterUnit())
            try chain.connectNodeInput(previous.0, sourceOutputElement: previous.1, node, destinationInputElement: 0)
            previous = (node, 0)
        }
        try chain.connectNodeInput(previous.0, sourceOutputElement: previous.1, chainIONode, destinationInputElement: 0)
        #expect(try Self.render(chain, threads: 0, frames: 4800).inUse == 1)
    }

    /// A bad count is refused and changes nothing; a good one takes effect while running.
    @Test func aBadThreadCountIsRefusedAndChangesNothing() throws {
        let graph = try Self.twoChains(length: 4)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.setRenderThreads(2)
        try graph.initialize()
        try graph.start()
        for bad in [-1, 65, Int.max] {
            #expect(throws: AudioUnitError.invalidPropertyValue) { try graph.setRenderThreads(bad) }
            #expect(graph.renderThreads == 2 && graph.renderThreadsInUse == 2)
        }
        let input = [noise(frames: 4096, seed: 1), noise(frames: 4096, seed: 2)]
        let before = try renderer.render(input: input, frameCount: 4096)
        try graph.setRenderThreads(1)
        #expect(graph.renderThreadsInUse == 1)
        try graph.setRenderThreads(3)
        #expect(graph.renderThreadsInUse == 3)
        #expect(before.allSatisfy { $0.contains { $0 != 0 } })
    }

    /// Graph edits from a render callback are refused on whichever thread renders it.
    @Test func editsFromARenderCallbackOnAnyRenderThreadAreRefused() throws {
        // A third branch: a render callback on mixer input 2, beside the two chains.
        let graph = try Self.twoChains(length: 20, mixerInputs: 3)
        let refusals = Atomic<Int>(0), calls = Atomic<Int>(0)
        let mixer = try #require(graph.nodes.first { (try? graph.nodeInfo($0)) is MultichannelMixerUnit })
        try graph.setNodeInputCallback(mixer, inputElement: 2) { [unowned graph] _, _, _ in
            calls.add(1, ordering: .relaxed)
            do throws(AudioUnitError) { try graph.update() } catch { if error == .cannotDoInCurrentContext { refusals.add(1, ordering: .relaxed) } }
            return 0
        }
        _ = try Self.render(graph, threads: 3, frames: 4800)
        #expect(calls.load(ordering: .relaxed) > 0 && refusals.load(ordering: .relaxed) == calls.load(ordering: .relaxed))
    }
}

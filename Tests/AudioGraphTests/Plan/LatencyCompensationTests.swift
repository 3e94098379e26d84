// Tests, Plan: latency compensation — parallel paths of different latency arrive aligned, and stay so through live re-plans.
import AudioGraph
import Synchronization
import Testing
import AudioGraphTestSupport

/// The frames a look-ahead unit delays by, set from the test's thread.
final class LookAheadDelay: Sendable {
    let frames = Atomic<Int>(100)
}

@Suite("Latency compensation")
struct LatencyCompensationTests {
    /// A mono custom unit that delays its input by `delay.frames` and reports that as latency.
    static func lookAhead(_ delay: LookAheadDelay) throws -> RenderCallbackUnit {
        struct Ring { var samples: UnsafeMutablePointer<Float>; var write: Int }
        let samples = UnsafeMutablePointer<Float>.allocate(capacity: 4096)
        samples.initialize(repeating: 0, count: 4096)  // lives as long as the test process: a few KB
        let unit = try RenderCallbackUnit(inputs: 1, state: Ring(samples: samples, write: 0)) { ring, context in
            guard let input = context.input(0) else { return 0 }
            let d = delay.frames.load(ordering: .relaxed)
            for f in 0..<context.frameCount {
                ring.samples[(ring.write + f) & 4095] = input[0][f]
                context.output[0][f] = ring.samples[(ring.write + f - d + 4096) & 4095]
            }
            ring.write = (ring.write + context.frameCount) & 4095
            return 0
        }
        try unit.setStreamFormat(.float32(sampleRate: 48_000, channels: 1), scope: .output, element: 0)
        try unit.setLatency(Double(delay.frames.load(ordering: .relaxed)) / 48_000)
        return unit
    }

    /// IO → look-ahead → mixer input 0, IO → mixer input 1 (dry), mixer → IO; mono.
    func parallelPaths(_ delay: LookAheadDelay) throws -> (AudioGraph, OfflineRenderer, RenderCallbackUnit, AUNode) {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let unit = try Self.lookAhead(delay)
        let unitNode = try graph.addNode(unit)
        let mixer = MultichannelMixerUnit(inputs: 2)
        try mixer.setStreamFormat(.float32(sampleRate: 48_000, channels: 1), scope: .output, element: 0)
        let mixerNode = try graph.addNode(mixer)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, unitNode, destinationInputElement: 0)
        try graph.connectNodeInput(unitNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, mixerNode, destinationInputElement: 1)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 1)
        try graph.initialize()
        try graph.start()
        return (graph, renderer, unit, mixerNode)
    }

    /// The measurement: a dry path and a look-ahead path into one mixer turn an impulse
    /// into one impulse (of twice the height), at the look-ahead's latency, which the graph reports.
    @Test(arguments: [64, 256, 1000])
    func anImpulseThroughParallelPathsStaysOneImpulse(slice: Int) throws {
        let delay = LookAheadDelay()
        let (graph, renderer, _, _) = try parallelPaths(delay)
        var impulse = [Float](repeating: 0, count: 4800)
        impulse[1000] = 0.5
        let out = try renderer.render(input: [impulse], frameCount: 4800, sliceFrames: slice)[0]
        let nonzero = out.indices.filter { out[$0] != 0 }
        #expect(nonzero == [1100] && out[1100] == 1.0, "one impulse at 1100: \(nonzero.prefix(4)) \(nonzero.map { out[$0] }.prefix(4))")
        #expect(abs(graph.renderLatency * 48_000 - 100) < 1e-6, "the longest path: \(graph.renderLatency * 48_000) frames")
        #expect(graph.description.contains("delayed 100 frame(s) to align"), "\(graph)")
    }

    /// Re-planning for an unrelated edit keeps the compensated path going without a gap; a
    /// changed latency re-plans the compensation to the new value.
    @Test func liveReplansKeepTheAlignment() throws {
        let delay = LookAheadDelay()
        let (graph, renderer, unit, _) = try parallelPaths(delay)
        let (_, quiet, _, _) = try parallelPaths(LookAheadDelay())
        let tone = sine(frequency: 440, frames: 9600, amplitude: 0.25)
        var edited: [Float] = [], reference: [Float] = []
        for piece in 0..<4 {
            let input = Array(tone[(piece * 2400)..<((piece + 1) * 2400)])
            edited += try renderer.render(input: [input], frameCount: 2400, sliceFrames: 256)[0]
            reference += try quiet.render(input: [input], frameCount: 2400, sliceFrames: 256)[0]
            _ = try graph.addNode(MuteGateUnit())  // an unrelated edit: a new plan each time
            try graph.update()
        }
        #expect(edited == reference, "the compensated paths carried on through three re-plans, sample for sample")

        // The look-ahead grows to 300 frames: the dry path's compensation follows.
        delay.frames.store(300, ordering: .relaxed)
        try unit.setLatency(300.0 / 48_000)
        try graph.update()
        _ = try renderer.render(input: [[Float](repeating: 0, count: 4800)], frameCount: 4800)  // flush both paths
        var impulse = [Float](repeating: 0, count: 4800)
        impulse[500] = 0.5
        let out = try renderer.render(input: [impulse], frameCount: 4800, sliceFrames: 256)[0]
        let nonzero = out.indices.filter { out[$0] != 0 }
        #expect(nonzero == [800] && out[800] == 1.0, "\(nonzero.prefix(4))")
        #expect(abs(graph.renderLatency * 48_000 - 300) < 1e-6)
        // Compensation off: each path keeps its own latency (two impulses), the longest is still reported.
        graph.compensatesLatency = false
        try graph.update()
        let apart = try renderer.render(input: [impulse], frameCount: 4800, sliceFrames: 256)[0]
        #expect(apart.indices.filter { apart[$0] != 0 } == [500, 800])
        #expect(abs(graph.renderLatency * 48_000 - 300) < 1e-6)
        #expect(throws: AudioUnitError.invalidPropertyValue) { try unit.setLatency(-1) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try unit.setLatency(.nan) }
        #expect(unit.latency == 300.0 / 48_000, "a refused value changes nothing")
    }
}

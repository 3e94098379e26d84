// Tests, Graph: live edit stress.
import Foundation
import Synchronization
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

/// Thousands of random edits, valid and invalid, from this thread while another thread pulls
/// the graph as a driver would. Run under ThreadSanitizer by scripts/test
/// (`swift test --sanitize=thread --filter LiveEditStress`).
@Suite("Live edit stress")
struct LiveEditStressTests {
    /// Pulls the graph on its own thread with a tone in, and checks every slice came out equal.
    // SAFETY (@unchecked Sendable): constants and atomics only; the render context is itself a handle to atomics.
    final class RenderThread: @unchecked Sendable {
        let context: GraphRenderContext
        let stop = Atomic<Bool>(false)
        let slices = Atomic<Int>(0)
        let mismatches = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        init(_ context: GraphRenderContext) { self.context = context }

        func run() {
            let frames = 256
            let input = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2)
            let output = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2)
            for c in 0..<2 { input[c] = .allocate(capacity: frames); output[c] = .allocate(capacity: frames) }
            var phase = 0
            while !stop.load(ordering: .relaxed) {
                for f in 0..<frames {
                    let v = 0.5 * Float(sin(2 * Double.pi * 440 * Double(phase + f) / 48_000))
                    input[0][f] = v; input[1][f] = -v
                }
                phase += frames
                context.render(frameCount: frames, input: input, inputChannelCount: 2, output: output, outputChannelCount: 2)
                for c in 0..<2 where !(0..<frames).allSatisfy({ output[c][$0] == input[c][$0] }) {
                    mismatches.add(1, ordering: .relaxed)
                }
                slices.add(1, ordering: .relaxed)
            }
            for c in 0..<2 { input[c].deallocate(); output[c].deallocate() }
            input.deallocate(); output.deallocate()
            done.store(true, ordering: .releasing)
        }
    }

    /// On one render thread, and on three (the render thread and two workers: the islands
    /// render beside the untouched path).
    @Test(arguments: [1, 3])
    func randomEditsWhileRenderingKeepTheUntouchedPathIntact(threads: Int) throws {
        // The untouched path: IO → gate → mixer input 0 → IO. Mixer inputs 1…4 take whatever the
        // random edits connect, at volume 0, so they reach the output as exact zeros.
        let graph = AudioGraph()
        let io = IOUnit(), gate = MuteGateUnit(), mixer = MultichannelMixerUnit(inputs: 5)
        let ioNode = try graph.addNode(io), gateNode = try graph.addNode(gate), mixerNode = try graph.addNode(mixer)
        try io.setInputEnabled(true)
        for e: AudioUnitElement in 1...4 { try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0, scope: .input, element: e) }
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, gateNode, destinationInputElement: 0)
        try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        _ = try OfflineRenderer(graph: graph)
        // Islands at 16 kHz on mixer inputs 1…4 would otherwise delay input 0 to align with
        // them (latency compensation) each time one joins: the untouched path must stay bit-exact.
        graph.compensatesLatency = false
        try graph.setRenderThreads(threads)
        try graph.initialize()
        try graph.start()

        let renderer = RenderThread(graph.renderContext)
        let thread = Thread { renderer.run() }
        thread.start()
        while renderer.slices.load(ordering: .relaxed) < 10 { usleep(1000) }

        var random = SplitMix64(seed: 0xA11D10)   // deterministic, so a failure can be replayed
        var island: [AUNode] = []          // nodes the edits may touch
        var removed: [AUNode] = []
        var counts = (valid: 0, invalid: 0, updates: 0)
        var wrongCodes: [String] = []
        func expect(_ code: AudioUnitError, _ what: String, _ body: () throws(AudioUnitError) -> Void) {
            do throws(AudioUnitError) {
                try body()
                wrongCodes.append("\(what): no error, expected \(code)")
            } catch {
                if error != code { wrongCodes.append("\(what): \(error), expected \(code)") }
                counts.invalid += 1
            }
        }
        let targets = [mixerNode]  // mixer inputs 1…4 are the island's way in
        for step in 0..<3000 {
            let roll = Int.random(in: 0..<100, using: &random)
            do {
                switch roll {
                case 0..<15:  // add a unit
                    let unit: AudioUnit = [LowPassFilterUnit(), MuteGateUnit(), MultichannelMixerUnit(inputs: 2)][Int.random(in: 0..<3, using: &random)]
                    // Some run at 16 kHz mono: their connections resample both ways.
                    if Int.random(in: 0..<3, using: &random) == 0 {
                        try unit.setStreamFormat(.float32(sampleRate: 16_000, channels: 1), scope: .output, element: 0)
                    }
                    island.append(try graph.addNode(unit)); counts.valid += 1
                case 15..<25:  // remove one
                    guard !island.isEmpty else { continue }
                    let node = island.remove(at: Int.random(in: 0..<island.count, using: &random))
                    try graph.removeNode(node); removed.append(node); counts.valid += 1
                case 25..<45:  // connect island → island or island → mixer input 1…4 (maybe invalid)
                    guard let source = island.randomElement(using: &random) else { continue }
                    let destination = Bool.random(using: &random) ? island.randomElement(using: &random)! : targets[0]
                    let element: AudioUnitElement = destination == mixerNode ? AudioUnitElement.random(in: 1...4, using: &random) : 0
                    do throws(AudioUnitError) {
                        try graph.connectNodeInput(source, sourceOutputElement: 0, destination, destinationInputElement: element)
                        counts.valid += 1
                    } catch {
                        // Legitimate refusals only: the input is fed already, or a cycle.
                        if error != .invalidConnection { wrongCodes.append("connect: \(error)") }
                        counts.invalid += 1
                    }
                case 45..<55:  // disconnect
                    guard let node = island.randomElement(using: &random) else { continue }
                    do throws(AudioUnitError) { try graph.disconnectNodeInput(node, inputElement: 0); counts.valid += 1 }
                    catch { if error != .noConnection { wrongCodes.append("disconnect: \(error)") }; counts.invalid += 1 }
                case 55..<70:  // parameters, from this thread, while rendering
                    guard let node = island.randomElement(using: &random), let unit = try? graph.nodeInfo(node) else { continue }
                    if let filter = unit as? LowPassFilterUnit {
                        if Bool.random(using: &random) {
                            try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, Float.random(in: -100...30_000, using: &random), scope: .global)
                        } else {  // scheduled ramps and approaches through the lock-free queue
                            try filter.scheduleParameter(AudioUnitParameterEvent(
                                id: LowPassFilterUnit.Parameter.cutoffFrequency, scope: .global, bufferOffset: Int.random(in: 0..<600, using: &random),
                                Bool.random(using: &random) ? .linearRamp(to: Float.random(in: 20...20_000, using: &random), durationFrames: Int.random(in: 1...2000, using: &random))
                                                            : .target(Float.random(in: 20...20_000, using: &random), timeConstant: 0.002)))
                        }
                        // The main mixer's silent inputs get scheduled zeros: same value, same output.
                        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0, scope: .input,
                                               element: AudioUnitElement.random(in: 1...4, using: &random), bufferOffset: Int.random(in: 0..<300, using: &random))
                    } else if let g = unit as? MuteGateUnit {
                        g.isMuted.toggle()
                    }
                    counts.valid += 1
                case 70..<80:  // deliberately invalid edits, each with its exact code
                    let ghost = removed.last ?? AUNode(rawValue: 1_000_000)
                    switch step % 5 {
                    case 0: expect(.nodeNotFound, "connect a removed node") { () throws(AudioUnitError) in try graph.connectNodeInput(ghost, sourceOutputElement: 0, mixerNode, destinationInputElement: 1) }
                    case 1: expect(.invalidElement, "mixer input 9") { () throws(AudioUnitError) in try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 9) }
                    case 2: expect(.invalidConnection, "refeed mixer input 0") { () throws(AudioUnitError) in try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0) }
                    case 3: expect(.invalidParameter, "NaN cutoff") { () throws(AudioUnitError) in try LowPassFilterUnit().setParameter(0, .nan, scope: .global) }
                    default: expect(.initialized, "format change while initialized") { () throws(AudioUnitError) in try mixer.setStreamFormat(try .float32(sampleRate: 48_000, channels: 1), scope: .output, element: 0) }
                    }
                default:  // apply
                    try graph.update(); counts.updates += 1
                }
            } catch {
                wrongCodes.append("step \(step): unexpected \(error)")
            }
        }
        try graph.update()
        renderer.stop.store(true, ordering: .relaxed)
        while !renderer.done.load(ordering: .acquiring) { usleep(1000) }

        #expect(wrongCodes.isEmpty, "\(wrongCodes.prefix(5))")
        #expect(counts.updates > 100 && counts.invalid > 100, "\(counts)")
        #expect(renderer.slices.load(ordering: .relaxed) > 10)
        #expect(renderer.mismatches.load(ordering: .relaxed) == 0, "the tone through the untouched path changed")
        #expect(graph.renderThreadsInUse == threads)
    }
}

// Tests, Observers: taps through the offline renderer.
import Synchronization
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Collects a push tap's blocks (the handler runs on the tap's thread).
final class BlockCollector: Sendable {
    let blocks = Mutex<[AudioTapBlock]>([])
    func add(_ block: AudioTapBlock) { blocks.withLock { $0.append(block) } }
    var all: [AudioTapBlock] { blocks.withLock { $0 } }
}

/// Channel `c` of the blocks, concatenated.
func joined(_ blocks: [AudioTapBlock], channel: Int) -> [Float] {
    blocks.flatMap { $0.floatChannel(channel) ?? [] }
}

@Suite("Taps through the offline renderer")
struct TapTests {
    /// What reaches the handler is exactly what the node rendered: no frame lost, duplicated or
    /// moved, whatever the block size against the slice size.
    @Test(arguments: [(100, 64), (256, 256), (1000, 256), (4097, 1000), (1, 33)])
    func pushTapIsSampleExactAcrossBlockBoundaries(blockFrames: Int, slice: Int) throws {
        let filter = LowPassFilterUnit()
        let chain = try Chain([filter], channels: 2)
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 2000, scope: .global)
        let collector = BlockCollector()
        let tap = try chain.graph.installTap(on: chain.nodes[0], blockFrames: blockFrames, bufferDuration: 10) { collector.add($0) }
        let frames = 48_000
        let output = try chain.render([noise(frames: frames, seed: 1), noise(frames: frames, seed: 2)], slice: slice)
        try chain.graph.removeTap(tap)
        let blocks = collector.all
        #expect(joined(blocks, channel: 0) == output[0])
        #expect(joined(blocks, channel: 1) == output[1])
        #expect(blocks.dropLast().allSatisfy { $0.frameCount == blockFrames }, "full blocks until the remainder")
        #expect(blocks.last!.frameCount == (frames % blockFrames == 0 ? blockFrames : frames % blockFrames))
        var time = 0.0
        for block in blocks {
            #expect(block.sampleTime == time && block.framesDroppedBefore == 0)
            time += Double(block.frameCount)
        }
        #expect(tap.framesDropped == 0 && tap.framesWritten == UInt64(frames) && tap.framesDelivered == UInt64(frames))
        #expect(!tap.isInstalled)
    }

    /// A handler that stalls: the render thread never waits, drops whole slices, counts them,
    /// and the blocks after each gap say how much was lost and carry the exact sample time.
    @Test func overflowIsCountedAndTheGapIsMarked() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let release = Atomic<Bool>(false)
        let collector = BlockCollector()
        let tap = try chain.graph.installTap(on: chain.nodes[0], blockFrames: 480, bufferDuration: 0.1) { block in
            while !release.load(ordering: .acquiring) { usleep(1000) }  // stalls on the first block
            collector.add(block)
        }
        let frames = 48_000
        let input = noise(frames: frames, seed: 9)
        var output = try chain.render([Array(input[0..<43_200])], slice: 256)[0]
        release.store(true, ordering: .releasing)
        // Once the handler has caught up, the next slices fit again and carry the gap's size.
        while tap.framesDelivered + 480 <= tap.framesWritten { usleep(1000) }
        output += try chain.render([Array(input[43_200...])], slice: 256)[0]
        try chain.graph.removeTap(tap)
        let blocks = collector.all
        #expect(tap.framesDropped > 0, "a 0.1 s ring cannot hold 1 s rendered while the handler stalls")
        #expect(tap.framesWritten + tap.framesDropped == UInt64(frames))
        #expect(tap.framesDelivered == tap.framesWritten, "everything that entered the ring came out")
        #expect(blocks.reduce(0) { $0 + $1.framesDroppedBefore } == tap.framesDropped)
        #expect(blocks.contains { $0.framesDroppedBefore > 0 })
        var expectedTime = 0.0
        for block in blocks {
            let start = Int(block.sampleTime)
            #expect(block.sampleTime == expectedTime + Double(block.framesDroppedBefore), "the gap is exactly where the block says")
            #expect(block.floatChannel(0)! == Array(output[start..<start + block.frameCount]))
            expectedTime = block.sampleTime + Double(block.frameCount)
        }
    }

    @Test func pullTapsAndSeveralTapsAtOnce() throws {
        let filter = LowPassFilterUnit()
        let chain = try Chain([filter], channels: 2)
        let pull = try chain.graph.installTap(on: chain.nodes[0], bufferDuration: 10)
        let deviceInput = try chain.graph.installTap(on: chain.ioNode, element: IOUnit.inputElement, bufferDuration: 10)
        let collector = BlockCollector()
        let interleaved = try StreamFormat.float32(sampleRate: 48_000, channels: 2, interleaved: true)
        let push = try chain.graph.installTap(on: chain.nodes[0], blockFrames: 512, format: interleaved, bufferDuration: 10) { collector.add($0) }
        let input = [noise(frames: 20_000, seed: 3), noise(frames: 20_000, seed: 4)]
        let output = try chain.render(input, slice: 128)
        var pulled: [AudioTapBlock] = []
        while let block = try pull.read(maxFrames: 300) { pulled.append(block) }
        #expect(pulled.allSatisfy { $0.frameCount <= 300 })
        #expect(joined(pulled, channel: 0) == output[0] && joined(pulled, channel: 1) == output[1])
        var inputPulled: [AudioTapBlock] = []
        while let block = try deviceInput.read(maxFrames: 4096) { inputPulled.append(block) }
        #expect(joined(inputPulled, channel: 1) == input[1])
        try chain.graph.removeTap(push)
        #expect(collector.all.allSatisfy { $0.format == interleaved && $0.buffers.count == 1 })
        #expect(joined(collector.all, channel: 1) == output[1])
        #expect(try pull.read(maxFrames: 10) == nil)
        #expect(throws: AudioUnitError.cannotDoInCurrentContext) { try push.read(maxFrames: 10) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try pull.read(maxFrames: 0) }
        try chain.graph.removeTap(pull)
        try chain.graph.removeTap(pull)  // twice: nothing happens
    }

    /// Installed and removed between slices of a running graph: the tap sees exactly the
    /// slices rendered while it was installed.
    @Test func installAndRemoveWhileRunning() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let input = noise(frames: 30_000, seed: 5)
        _ = try chain.render([Array(input[0..<10_000])], slice: 250)
        let tap = try chain.graph.installTap(on: chain.nodes[0], bufferDuration: 10)
        _ = try chain.render([Array(input[10_000..<20_000])], slice: 250)
        try chain.graph.removeTap(tap)
        _ = try chain.render([Array(input[20_000...])], slice: 250)
        let block = try #require(try tap.read(maxFrames: 100_000))
        #expect(block.sampleTime == 10_000 && block.floatChannel(0)! == Array(input[10_000..<20_000]))
        #expect(try tap.read(maxFrames: 100_000) == nil)
    }

    /// A speech recognizer's format: 16 kHz Int16 mono blocks of 20 ms from a 48 kHz stereo
    /// node. What arrives equals the node's output run through one AudioConverter as one stream.
    @Test(arguments: [64, 256, 1000])
    func int16At16kHzMonoMatchesTheConverterOverTheWholeOutput(slice: Int) throws {
        let filter = LowPassFilterUnit()
        let chain = try Chain([filter], channels: 2)
        let speech = try StreamFormat.int16(sampleRate: 16_000, channels: 1)
        let collector = BlockCollector()
        let tap = try chain.graph.installTap(on: chain.nodes[0], blockFrames: 320, format: speech, bufferDuration: 10) { collector.add($0) }
        let input = [sine(frequency: 440, frames: 48_000, amplitude: 0.5), noise(frames: 48_000, seed: 6).map { $0 * 0.25 }]
        let output = try chain.render(input, slice: slice)
        try chain.graph.removeTap(tap)
        let blocks = collector.all
        let received = blocks.flatMap { $0.int16Samples()! }
        let converter = try AudioConverter(from: try .float32(sampleRate: 48_000, channels: 2), to: speech, maximumInputFrames: 4096)
        let expected = try runConverter(converter, output, chunk: 4096)[0].map { Int16(($0 * 32768).rounded()) }
        #expect(blocks.dropLast().allSatisfy { $0.frameCount == 320 && $0.format == speech && $0.framesDroppedBefore == 0 })
        #expect(received.count == expected.count, "\(received.count) vs \(expected.count) frames")
        #expect(received == expected, "first difference at \(String(describing: zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset))")
        #expect(abs(received.count - 16_000) <= 1)
        #expect(blocks[1].sampleTime == 960, "block 1 starts 320 frames at 16 kHz = 960 graph frames in")
    }

    @Test func badRequestsThrowTheirCodes() throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let node = chain.nodes[0]
        #expect(throws: AudioUnitError.invalidPropertyValue) { try chain.graph.installTap(on: node, blockFrames: 0) { _ in } }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try chain.graph.installTap(on: node, bufferDuration: .infinity) }
        #expect(throws: AudioUnitError.invalidElement) { try chain.graph.installTap(on: node, element: 1) }
        #expect(throws: AudioUnitError.nodeNotFound) { try chain.graph.installTap(on: AUNode(rawValue: 42)) }
        var broken = try StreamFormat.float32(sampleRate: 48_000, channels: 2)
        broken.bytesPerFrame = 3
        #expect(throws: AudioUnitError.formatNotSupported) { try chain.graph.installTap(on: node, format: broken) }
    }
}

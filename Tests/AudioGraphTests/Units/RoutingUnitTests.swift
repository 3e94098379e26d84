// Tests, Units: the splitter, channel splitter and merger — units with several elements on one side.
import AudioGraph
import Testing
import AudioGraphTestSupport

@Suite("Splitter, channel splitter and merger")
struct RoutingUnitTests {
    /// IO → splitter; output 0 through a gate and output 1 straight into a two-input mixer: the
    /// sum is exactly twice the input, and taps and meters watch output element 1.
    @Test(arguments: [64, 256, 1000])
    func splitterFeedsTwoBranchesBitExact(slice: Int) throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let splitter = try SplitterUnit(outputs: 2, channels: 2)
        let splitterNode = try graph.addNode(splitter)
        let gateNode = try graph.addNode(MuteGateUnit())
        let mixer = MultichannelMixerUnit(inputs: 2)
        let mixerNode = try graph.addNode(mixer)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, splitterNode, destinationInputElement: 0)
        try graph.connectNodeInput(splitterNode, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
        try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(splitterNode, sourceOutputElement: 1, mixerNode, destinationInputElement: 1)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
        #expect(throws: AudioUnitError.invalidElement) {
            try graph.connectNodeInput(splitterNode, sourceOutputElement: 2, mixerNode, destinationInputElement: 2)
        }
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        let meter = try graph.installLevelMeter(on: splitterNode, element: 1)
        let tap = try graph.installTap(on: splitterNode, element: 1)
        let left = noise(frames: 4800, seed: 7).map { $0 * 0.25 }, right = noise(frames: 4800, seed: 8).map { $0 * 0.25 }
        let out = try renderer.render(input: [left, right], frameCount: 4800, sliceFrames: slice)
        #expect(out[0] == left.map { $0 + $0 } && out[1] == right.map { $0 + $0 }, "both branches carry the input bit for bit")
        #expect(try meter.channelCount == 2 && meter.maximumPeakPower(channel: 0) > -20)
        var tapped: [Float] = []
        while let block = try tap.read(maxFrames: 4096) { tapped += block.floatChannel(0) ?? [] }
        #expect(tapped == left, "a tap on output element 1 sees the input")
        #expect(splitter.elementCount(.output) == 2)
    }

    /// Channel splitter → merger with the outputs crossed: left and right swap, exactly; a mono
    /// low-pass on one channel only processes that one.
    @Test func channelSplitterAndMergerSwapAndProcessOneSide() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let splitterNode = try graph.addNode(try ChannelSplitterUnit(channels: 2))
        let merger = try MergerUnit(inputChannels: [1, 1])
        let mergerNode = try graph.addNode(merger)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, splitterNode, destinationInputElement: 0)
        try graph.connectNodeInput(splitterNode, sourceOutputElement: 0, mergerNode, destinationInputElement: 1)
        try graph.connectNodeInput(splitterNode, sourceOutputElement: 1, mergerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mergerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        let left = noise(frames: 2048, seed: 1), right = noise(frames: 2048, seed: 2)
        let out = try renderer.render(input: [left, right], frameCount: 2048, sliceFrames: 256)
        #expect(out[0] == right && out[1] == left, "crossed: the channels swap bit for bit")

        // A mono low-pass on the left branch only (inserted live).
        let filter = LowPassFilterUnit()
        try filter.setStreamFormat(.float32(sampleRate: 48_000, channels: 1), scope: .input, element: 0)
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 200, scope: .global)
        let filterNode = try graph.addNode(filter)
        try graph.disconnectNodeInput(mergerNode, inputElement: 1)
        try graph.connectNodeInput(splitterNode, sourceOutputElement: 0, filterNode, destinationInputElement: 0)
        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, mergerNode, destinationInputElement: 1)
        try graph.update()
        let filtered = try renderer.render(input: [left, right], frameCount: 2048, sliceFrames: 256)
        #expect(filtered[0] == right, "the unfiltered side is untouched")
        #expect(rms(filtered[1][1024...]) < 0.5 * rms(left[1024...]), "noise through a 200 Hz low-pass loses most of its energy")
    }

    /// An unconnected merger input is silence; formats keep their channel counts; bad counts are refused.
    @Test func mergerSilenceFormatsAndErrors() throws {
        let merger = try MergerUnit(inputChannels: [2, 1])
        #expect(try merger.streamFormat(scope: .output, element: 0).channelsPerFrame == 3)
        #expect(throws: AudioUnitError.formatNotSupported) {
            try merger.setStreamFormat(.float32(sampleRate: 48_000, channels: 2), scope: .input, element: 1)
        }
        try merger.setStreamFormat(.float32(sampleRate: 44_100, channels: 1), scope: .input, element: 1)  // a rate is fine
        #expect(throws: AudioUnitError.invalidPropertyValue) { try MergerUnit(inputChannels: []) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try MergerUnit(inputChannels: [40, 40]) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try SplitterUnit(outputs: 0) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try ChannelSplitterUnit(channels: 65) }

        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let mergerNode = try graph.addNode(merger)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, mergerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mergerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 3)
        try graph.initialize()
        try graph.start()
        let left = noise(frames: 512, seed: 3), right = noise(frames: 512, seed: 4)
        let out = try renderer.render(input: [left, right], frameCount: 512)
        #expect(out[0] == left && out[1] == right)
        #expect(out[2].allSatisfy { $0 == 0 }, "input element 1 is unconnected: its channel is silent")
    }

    /// Output elements after the first follow its rate; a rate set on one alone is refused when
    /// the graph compiles.
    @Test func outputElementsShareTheUnitsRate() throws {
        let splitter = try SplitterUnit(outputs: 2, channels: 1)
        try splitter.setStreamFormat(.float32(sampleRate: 16_000, channels: 1), scope: .output, element: 0)
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let splitterNode = try graph.addNode(splitter)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, splitterNode, destinationInputElement: 0)
        try graph.connectNodeInput(splitterNode, sourceOutputElement: 1, ioNode, destinationInputElement: 0)
        _ = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 1)
        try graph.initialize()
        #expect(graph.description.contains("out 1"), "\(graph)")
        try graph.uninitialize()
        try splitter.setStreamFormat(.float32(sampleRate: 22_050, channels: 1), scope: .output, element: 1)
        #expect(throws: AudioUnitError.formatNotSupported) { try graph.initialize() }
    }
}

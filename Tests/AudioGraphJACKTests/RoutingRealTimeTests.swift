// Tests, JACK: the splitter, channel splitter, merger and latency-compensation delays on the JACK process thread — no allocation, no lock, under live edits.
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

extension JACKIntegration {
    @Suite("Routing units and latency compensation on the JACK process thread")
    struct RoutingRealTimeTests {
        /// IO → splitter; output 0 → channel splitter → merger (crossed) → mixer 0; output 1 →
        /// a look-ahead custom unit (latency re-planned live) → mixer 1, so mixer 0 is delayed to
        /// align; mixer → IO. Edits from this thread while JACK pulls: latency changes with
        /// updates, the merger's inputs crossed and straightened, a node added and removed.
        @Test func routingAndCompensationNeitherAllocateNorLock() throws {
            let graph = AudioGraph()
            let io = IOUnit()
            let ioNode = try graph.addNode(io)
            try io.setInputEnabled(true)
            let splitterNode = try graph.addNode(try SplitterUnit(outputs: 2, channels: 2))
            let channelsNode = try graph.addNode(try ChannelSplitterUnit(channels: 2))
            let mergerNode = try graph.addNode(try MergerUnit(inputChannels: [1, 1]))
            let armed = RenderState(false)
            let lookAhead = try RenderCallbackUnit(inputs: 1) { context in
                if !armed.value { alloccounter_arm_this_thread(); armed.value = true }
                if let input = context.input(0) {
                    for c in 0..<context.output.channelCount { _ = context.output[c].update(from: input[c]) }
                }
                return 0
            }
            try lookAhead.setLatency(0.002)
            let lookAheadNode = try graph.addNode(lookAhead)
            let mixerNode = try graph.addNode(MultichannelMixerUnit(inputs: 2))
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, splitterNode, destinationInputElement: 0)
            try graph.connectNodeInput(splitterNode, sourceOutputElement: 0, channelsNode, destinationInputElement: 0)
            try graph.connectNodeInput(channelsNode, sourceOutputElement: 0, mergerNode, destinationInputElement: 1)
            try graph.connectNodeInput(channelsNode, sourceOutputElement: 1, mergerNode, destinationInputElement: 0)
            try graph.connectNodeInput(mergerNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
            try graph.connectNodeInput(splitterNode, sourceOutputElement: 1, lookAheadNode, destinationInputElement: 0)
            try graph.connectNodeInput(lookAheadNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 1)
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)

            let counted = try CountedProcessThread(graph: graph, clientName: "ag-routing-rt")
            #expect(graph.description.contains("delayed 96 frame(s)"), "mixer input 0 waits for the 2 ms look-ahead: \(graph)")

            var crossed = true, extra: AUNode?, round = 0
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline {
                round += 1
                switch round % 3 {
                case 0:
                    try lookAhead.setLatency(Double(round % 5) / 1000)  // 0…4 ms: the compensation follows
                case 1:
                    try graph.disconnectNodeInput(mergerNode, inputElement: 0)
                    try graph.disconnectNodeInput(mergerNode, inputElement: 1)
                    try graph.connectNodeInput(channelsNode, sourceOutputElement: crossed ? 0 : 1, mergerNode, destinationInputElement: 0)
                    try graph.connectNodeInput(channelsNode, sourceOutputElement: crossed ? 1 : 0, mergerNode, destinationInputElement: 1)
                    crossed.toggle()
                default:
                    if let node = extra { try graph.removeNode(node); extra = nil } else {
                        let node = try graph.addNode(try SplitterUnit(outputs: 3, channels: 1))
                        try graph.connectNodeInput(channelsNode, sourceOutputElement: 0, node, destinationInputElement: 0)
                        extra = node
                    }
                }
                try graph.update()
                usleep(2000)
            }
            counted.expectNeitherAllocationNorLock("\(round) edits")
            #expect(graph.renderErrorCount == 0)
        }
    }
}

// Tests, JACK: a graph rendered on several threads — no allocation and no lock on the JACK process thread or the render workers, under live edits.
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

extension JACKIntegration {
    @Suite("Rendering branches on several threads on the JACK process thread")
    struct ParallelRenderRealTimeTests {
        /// IO → two branches, each a custom unit (which counts the thread it runs on) and 20
        /// biquads → mixer → IO, on 2 threads: the JACK thread and one worker at its priority.
        /// Edits from this thread while JACK pulls: cutoffs, a node added and removed, updates.
        @Test func twoBranchesOnTwoThreadsNeitherAllocateNorLock() throws {
            let graph = AudioGraph()
            let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: 2)
            let ioNode = try graph.addNode(io), mixerNode = try graph.addNode(mixer)
            try io.setInputEnabled(true)
            var filters: [LowPassFilterUnit] = []
            var heads: [AUNode] = []
            for branch in 0..<2 {
                let head = try RenderCallbackUnit(inputs: 1) { context in
                    alloccounter_arm_this_thread()  // whichever thread renders this branch
                    if let input = context.input(0) {
                        for c in 0..<context.output.channelCount { _ = context.output[c].update(from: input[c]) }
                    }
                    return 0
                }
                let headNode = try graph.addNode(head)
                heads.append(headNode)
                try graph.connectNodeInput(ioNode, sourceOutputElement: 1, headNode, destinationInputElement: 0)
                var previous = headNode
                for _ in 0..<20 {
                    let filter = LowPassFilterUnit()
                    filters.append(filter)
                    let node = try graph.addNode(filter)
                    try graph.connectNodeInput(previous, sourceOutputElement: 0, node, destinationInputElement: 0)
                    previous = node
                }
                try graph.connectNodeInput(previous, sourceOutputElement: 0, mixerNode, destinationInputElement: AudioUnitElement(branch))
            }
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
            try graph.setRenderThreads(2)

            let counted = try CountedProcessThread(graph: graph, clientName: "ag-parallel-rt")
            #expect(graph.renderThreadsInUse == 2)
            var extra: AUNode?, round = 0
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline {
                round += 1
                try filters[round % filters.count].setParameter(LowPassFilterUnit.Parameter.cutoffFrequency,
                                                                 Float(500 + 37 * (round % 100)), scope: .global)
                if round % 4 == 0 {
                    if let node = extra { try graph.removeNode(node); extra = nil } else {
                        let node = try graph.addNode(MuteGateUnit())
                        try graph.connectNodeInput(heads[round % 2], sourceOutputElement: 0, node, destinationInputElement: 0)
                        extra = node
                    }
                    try graph.update()
                }
                usleep(2000)
            }
            counted.expectNeitherAllocationNorLock("\(round) edits, on the process thread and the render worker")
            #expect(alloccounter_armed_threads() >= 2, "both the JACK thread and the worker rendered a branch")
            #expect(graph.renderErrorCount == 0)
            print("render workers: \(graph.realTimeRenderWorkerCount) of 1 real-time at priority \(graph.renderWorkerPriority); woken \(graph.renderWorkerWakeUps) times in \(counted.cycles) cycles")
        }
    }
}

// Tests, JACK: the biquad family, the N-band EQ, the delay and the sample delay on the JACK process thread under live edits — no allocation, no lock.
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

extension JACKIntegration {
    /// Every unit of the filters track in one chain pulled by the JACK driver, its parameters
    /// edited, scheduled and swept to their extremes from this thread and the graph updated,
    /// while the allocation/lock counter (Tests/CAllocCounter) watches the process thread.
    @Suite("Filters, EQ and delays on the JACK process thread")
    struct FiltersRealTimeTests {
        /// Parameter calls on every unit of the track, from a thread the counter watches, as a
        /// render callback automating them would make them. Optimized builds only (see
        /// RealTimeSafetyTests.parameterCallsNeitherAllocateNorLock).
        @Test(.enabled(if: isOptimizedBuild, "run with -c release (scripts/test does)"))
        func parameterCallsOnTheTracksUnitsNeitherAllocateNorLock() throws {
            try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds")
            let units: [AudioUnit] = [HighPassFilterUnit(), BandPassFilterUnit(), LowShelfFilterUnit(), HighShelfFilterUnit(),
                                      ParametricEQUnit(), NotchFilterUnit(), AllPassFilterUnit(), NBandEQUnit(),
                                      DelayUnit(), SampleDelayUnit()]
            let ids = units.map { $0.parameterList(scope: .global).map(\.id) }
            let (allocations, locks, calls) = countedOnOwnThread {
                var calls = 0
                // 60 rounds: each unit's queue gets 60 events and 59 cancels (from setParameter),
                // below its 256 (a full queue's refusal: RealTimeSafetyTests.aFullQueueRefusesWithoutAllocating).
                for i in 0..<60 {
                    for (unit, list) in zip(units, ids) {
                        let id = list[i % list.count]
                        try? unit.setParameter(id, Float(i % 50), scope: .global)
                        _ = try? unit.parameter(id, scope: .global)
                        try? unit.scheduleParameter(AudioUnitParameterEvent(id: id, scope: .global, bufferOffset: i % 64,
                                                                            .immediate(value: Float(i % 30))))
                        calls += 3
                    }
                }
                return calls
            }
            #expect(allocations == 0 && locks == 0, "\(calls) parameter calls: \(allocations) allocations, \(locks) locks")
        }

        @Test func filtersEQAndDelaysNeitherAllocateNorLockOnTheProcessThread() throws {
            let graph = AudioGraph()
            let io = IOUnit()
            let ioNode = try graph.addNode(io)
            let eq = NBandEQUnit(bands: 6)
            let units: [AudioUnit] = [HighPassFilterUnit(), BandPassFilterUnit(), LowShelfFilterUnit(), HighShelfFilterUnit(),
                                      ParametricEQUnit(), NotchFilterUnit(), AllPassFilterUnit(), eq, DelayUnit(),
                                      SampleDelayUnit(), LowPassFilterUnit()]
            let nodes = try countedToneChain(graph, units, into: ioNode)
            for b in 0..<4 { try eq.setParameter(NBandEQUnit.Parameter.bypassBand + AudioUnitParameterID(b), 0, scope: .global) }

            var meter: LevelMeter!
            let counted = try CountedProcessThread(graph: graph, clientName: "ag-filters-rt", connectPhysicalPorts: false,
                                                   afterStart: { _ in meter = try graph.installLevelMeter(on: nodes.last!) })

            var random = SplitMix64(seed: 0xF1_17E5)
            var inserted: AUNode?
            var edits = 0, updates = 0
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline {
                edits += 1
                let unit = units[random(units.count)]
                let infos = unit.parameterList(scope: .global)
                let info = infos[random(infos.count)]
                // Anywhere in the range, or at either end.
                let value: Float = switch random(4) {
                case 0: info.minValue
                case 1: info.maxValue
                default: info.minValue + (info.maxValue - info.minValue) * Float(random(1001)) / 1000
                }
                switch random(8) {
                case 0, 1, 2: try unit.setParameter(info.id, value, scope: .global)
                case 3: try unit.setParameter(info.id, value, scope: .global, bufferOffset: random(600))
                case 4 where info.unit != .boolean && info.unit != .indexed:
                    try unit.scheduleParameter(AudioUnitParameterEvent(id: info.id, scope: .global, bufferOffset: random(1000),
                                                                       .linearRamp(to: value, durationFrames: 1 + random(4000))))
                case 5 where info.unit != .boolean && info.unit != .indexed:
                    try unit.scheduleParameter(AudioUnitParameterEvent(id: info.id, scope: .global, bufferOffset: random(1000),
                                                                       .target(value, timeConstant: 0.001 + Double(random(50)) / 1000)))
                case 6 where random(20) == 0:
                    // A filter of a random kind inserted before the device output, or taken out.
                    try graph.disconnectNodeInput(ioNode, inputElement: 0)
                    if let node = inserted {
                        try graph.removeNode(node)
                        inserted = nil
                        try graph.connectNodeInput(nodes.last!, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
                    } else {
                        let kinds: [() -> AudioUnit] = [{ NotchFilterUnit() }, { DelayUnit() }, { NBandEQUnit(bands: 3) },
                                                        { SampleDelayUnit() }, { ParametricEQUnit() }]
                        let node = try graph.addNode(kinds[random(kinds.count)]())
                        try graph.connectNodeInput(nodes.last!, sourceOutputElement: 0, node, destinationInputElement: 0)
                        try graph.connectNodeInput(node, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
                        inserted = node
                    }
                    try graph.update()
                    updates += 1
                default: try unit.setParameter(info.id, value, scope: .global)
                }
                usleep(500)
            }
            counted.expectNeitherAllocationNorLock("the edits")
            // Back to moderate settings, then the output must be real audio: finite, not silent.
            for unit in units { for info in unit.parameterList(scope: .global) { try unit.setParameter(info.id, info.defaultValue, scope: .global) } }
            meter.resetPeaks()
            usleep(400_000)
            let peak = try meter.peakPower(channel: 0)
            #expect(edits >= 1000 && updates >= 5, "\(edits) edits, \(updates) updates in 2 s")
            #expect(peak.isFinite && peak > -60, "after the edits the chain still carries the tone: peak \(peak) dBFS")
        }
    }
}

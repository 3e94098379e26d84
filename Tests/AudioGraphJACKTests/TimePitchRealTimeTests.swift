// Tests, JACK: varispeed and time-pitch (libsamplerate, SoundTouch) on the JACK process thread under live edits of rate and pitch — no allocation, no lock.
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// A varispeed and two time-pitch units in one chain pulled by the JACK driver while this
    /// thread sets, schedules and ramps Rate, Pitch and PlaybackRate/Cents across their ranges
    /// (extremes included, so SoundTouch's tempo jumps between 1/8 and 8) and inserts and removes
    /// a third time-pitch unit (graph updates, each a fresh SoundTouch warmed up on this thread);
    /// the allocation/lock counter (Tests/CAllocCounter) watches the process thread. This is the
    /// measurement of whether SoundTouch's putSamples/receiveSamples/setTempo allocate there.
    @Suite("Varispeed and time-pitch on the JACK process thread")
    struct TimePitchRealTimeTests {
        /// Parameter calls on the units from a thread the counter watches, as a render callback
        /// automating them would make them. Optimized builds only (see
        /// RealTimeSafetyTests.parameterCallsNeitherAllocateNorLock).
        @Test(.enabled(if: isOptimizedBuild, "run with -c release (scripts/test does)"))
        func timePitchParameterCallsNeitherAllocateNorLock() throws {
            try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds")
            let units: [AudioUnit] = [VarispeedUnit(), TimePitchUnit()]
            let infos = units.map { $0.parameterList(scope: .global) }
            let (allocations, locks, calls) = countedOnOwnThread {
                var calls = 0
                for i in 0..<60 {
                    for (unit, list) in zip(units, infos) {
                        let info = list[i % list.count]
                        let value = info.minValue + (info.maxValue - info.minValue) * Float(i % 11) / 10
                        try? unit.setParameter(info.id, value, scope: .global)
                        _ = try? unit.parameter(info.id, scope: .global)
                        try? unit.scheduleParameter(AudioUnitParameterEvent(id: info.id, scope: .global, bufferOffset: i % 64,
                                                                            .immediate(value: value)))
                        calls += 3
                    }
                }
                return calls
            }
            #expect(allocations == 0 && locks == 0, "\(calls) parameter calls: \(allocations) allocations, \(locks) locks")
            // Refusals (NaN, out of range) throw; under Swift Testing any throw allocates and
            // locks once (its swift_willThrow hook, RealTimeSafetyTests.aFullQueueRefusesWithoutAllocating),
            // so a refusal may cost no more than a bare throw of the same error on the same thread.
            @Sendable @inline(never) func bareThrow(_ i: Int) throws(AudioUnitError) { if i >= 0 { throw .invalidParameter } }
            let baseline = countedOnOwnThread {
                var thrown = 0
                for i in 0..<120 { do throws(AudioUnitError) { try bareThrow(i) } catch { thrown += 1 } }
                return thrown
            }
            let refusals = countedOnOwnThread {
                var refused = 0
                for i in 0..<60 {
                    for (unit, list) in zip(units, infos) {
                        let info = list[i % list.count]
                        do throws(AudioUnitError) {
                            try unit.setParameter(info.id, i % 2 == 0 || info.unit == .boolean ? .nan : info.maxValue + 1, scope: .global)
                        } catch { refused += 1 }
                    }
                }
                return refused
            }
            #expect(refusals.calls == 120, "every bad value refused")
            #expect(refusals.allocations <= baseline.allocations && refusals.locks <= baseline.locks,
                    "120 refusals: \(refusals.allocations) allocations, \(refusals.locks) locks; 120 bare throws: \(baseline.allocations), \(baseline.locks)")
            for (unit, list) in zip(units, infos) {
                for info in list { #expect(try unit.parameter(info.id, scope: .global).isFinite) }
            }
        }

        @Test func varispeedAndTimePitchNeitherAllocateNorLockOnTheProcessThread() throws {
            let graph = AudioGraph()
            let io = IOUnit()
            let ioNode = try graph.addNode(io)
            let varispeed = VarispeedUnit(), pitch = TimePitchUnit(), second = TimePitchUnit()
            let units: [AudioUnit] = [varispeed, pitch, second]
            let nodes = try countedToneChain(graph, units, into: ioNode)

            var meter: LevelMeter!
            let counted = try CountedProcessThread(graph: graph, clientName: "ag-timepitch-rt", connectPhysicalPorts: false,
                                                   afterStart: { _ in meter = try graph.installLevelMeter(on: nodes.last!) })
            var random = SplitMix64(seed: 0x7139_0C4)
            var inserted: AUNode?
            var edits = 0, updates = 0, jumps = 0
            // At least 2 s, and until the minimum numbers of each kind of edit have happened (a
            // slow machine takes longer; nothing here fails on time).
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline || edits < 500 || jumps < 20 || updates < 3 {
                edits += 1
                let unit = units[random(units.count)]
                let infos = unit.parameterList(scope: .global)
                let info = infos[random(infos.count)]
                let value: Float = switch random(4) {
                case 0: info.minValue
                case 1: info.maxValue
                default: info.minValue + (info.maxValue - info.minValue) * Float(random(1001)) / 1000
                }
                switch random(8) {
                case 0, 1, 2: try unit.setParameter(info.id, value, scope: .global)
                case 3: try unit.setParameter(info.id, value, scope: .global, bufferOffset: random(600))
                case 4 where info.unit != .boolean:
                    try unit.scheduleParameter(AudioUnitParameterEvent(id: info.id, scope: .global, bufferOffset: random(1000),
                                                                       .linearRamp(to: value, durationFrames: 1 + random(4000))))
                case 5:
                    // SoundTouch's worst jump: top tempo (Rate 4, Pitch −1200 → 8) straight to the
                    // bottom (Rate 1/4, Pitch +1200 → 1/8) a few cycles later.
                    try pitch.setParameter(TimePitchUnit.Parameter.rate, 4, scope: .global)
                    try pitch.setParameter(TimePitchUnit.Parameter.pitch, -1200, scope: .global)
                    usleep(20_000)
                    try pitch.setParameter(TimePitchUnit.Parameter.rate, 0.25, scope: .global)
                    try pitch.setParameter(TimePitchUnit.Parameter.pitch, 1200, scope: .global)
                    jumps += 1
                case 6 where random(20) == 0:
                    try graph.disconnectNodeInput(ioNode, inputElement: 0)
                    if let node = inserted {
                        try graph.removeNode(node)
                        inserted = nil
                        try graph.connectNodeInput(nodes.last!, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
                    } else {
                        let node = try graph.addNode(random(2) == 0 ? TimePitchUnit() as AudioUnit : VarispeedUnit())
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
            for unit in units { for info in unit.parameterList(scope: .global) { try unit.setParameter(info.id, info.defaultValue, scope: .global) } }
            meter.resetPeaks()
            usleep(400_000)
            let peak = try meter.peakPower(channel: 0)
            print("time-pitch on JACK: \(edits) edits, \(jumps) tempo jumps, \(updates) updates, \(counted.cycles) cycles")
            #expect(peak.isFinite && peak > -60, "after the edits the chain still carries the tone: peak \(peak) dBFS")
        }
    }
}

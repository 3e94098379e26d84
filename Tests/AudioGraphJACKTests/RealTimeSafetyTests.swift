// Tests, JACK: real-time safety measured on the JACK process thread (allocations, frees, locks).
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

extension JACKIntegration {
    /// The JACK process thread, measured: allocations and lock calls counted by interposed
    /// malloc/free/pthread_mutex_lock (Tests/CAllocCounter) while a graph with every unit type
    /// runs under a real jackd and is edited from this thread.
    @Suite("Real-time safety on the JACK process thread")
    struct RealTimeSafetyTests {
        /// Optimized builds only: unoptimized Swift allocates for things an optimized build keeps
        /// on the stack, and real-time code runs optimized. scripts/test runs this suite with
        /// `swift test -c release` too.
        @Test(.enabled(if: isOptimizedBuild, "run with -c release (scripts/test does)"))
        func parameterCallsNeitherAllocateNorLock() throws {
            try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds")
            let filter = LowPassFilterUnit(), mixer = MultichannelMixerUnit(inputs: 4), gate = MuteGateUnit()
            let (allocations, locks, calls) = countedOnOwnThread {
                var sum: Float = 0
                for i in 0..<1000 {
                    try? filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, Float(100 + i), scope: .global)
                    try? mixer.setParameter(MultichannelMixerUnit.Parameter.pan, Float(i % 3) - 1, scope: .input, element: UInt32(i % 4))
                    try? mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0.5, scope: .output)
                    sum += (try? filter.parameter(LowPassFilterUnit.Parameter.cutoffFrequency, scope: .global)) ?? 0
                    sum += (try? mixer.parameter(MultichannelMixerUnit.Parameter.pan, scope: .input, element: 3)) ?? 0
                    gate.isMuted = i % 2 == 0
                }
                return sum.isFinite ? 6000 : 0
            }
            #expect(calls == 6000 && allocations == 0 && locks == 0, "\(calls) parameter calls: \(allocations) allocations, \(locks) locks")
        }

        /// A full automation queue refuses the event with cannotDoInCurrentContext, and the
        /// refusal costs nothing beyond the throw itself. Under the test runner every throw
        /// allocates and locks once (Swift Testing installs a `swift_willThrow` hook that records
        /// the thrower's backtrace); so the same thread first throws the same error from a bare
        /// function, and the refusals may cost no more than that.
        @Test(.enabled(if: isOptimizedBuild, "run with -c release (scripts/test does)"))
        func aFullQueueRefusesWithoutAllocating() throws {
            try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds")
            let filter = LowPassFilterUnit()  // in no graph: nothing drains its queue
            @Sendable @inline(never) func bareThrow(_ i: Int) throws(AudioUnitError) { if i >= 0 { throw .cannotDoInCurrentContext } }
            let baseline = countedOnOwnThread {
                var thrown = 0
                for i in 0..<144 { do throws(AudioUnitError) { try bareThrow(i) } catch { thrown += 1 } }
                return thrown
            }
            let refusals = Atomic<Int>(0)
            let (allocations, locks, calls) = countedOnOwnThread {
                for i in 0..<400 {
                    do throws(AudioUnitError) {
                        try filter.scheduleParameter(AudioUnitParameterEvent(id: LowPassFilterUnit.Parameter.cutoffFrequency, scope: .global,
                                                                             bufferOffset: i, .immediate(value: Float(100 + i))))
                    } catch {
                        if error == .cannotDoInCurrentContext { refusals.add(1, ordering: .relaxed) }
                    }
                }
                return 400
            }
            let refused = refusals.load(ordering: .relaxed)
            #expect(refused > 0 && refused < 400, "the queue filled and then refused: \(refused) of \(calls) refused")
            let perThrow = (Double(baseline.allocations) / Double(baseline.calls), Double(baseline.locks) / Double(baseline.calls))
            #expect(Double(allocations) <= perThrow.0 * Double(refused) && Double(locks) <= perThrow.1 * Double(refused),
                    "\(calls) schedules, \(refused) refused: \(allocations) allocations, \(locks) locks; a bare throw here costs \(perThrow.0) allocations, \(perThrow.1) locks")
        }

        @Test func noAllocationOrLockOnTheProcessThreadUnderLiveEdits() throws {
            let graph = AudioGraph()
            let io = IOUnit(), filter = LowPassFilterUnit(), gate = MuteGateUnit(), mixer = MultichannelMixerUnit(inputs: 4)
            let ioNode = try graph.addNode(io)
            let filterNode = try graph.addNode(filter), gateNode = try graph.addNode(gate), mixerNode = try graph.addNode(mixer)
            try io.setInputEnabled(true)
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, filterNode, destinationInputElement: 0)
            try graph.connectNodeInput(filterNode, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
            try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
            // A render callback on mixer input 1, in 16-bit 22.05 kHz mono (converted and
            // resampled to the mixer's format every cycle): arms the counter for the thread it
            // runs on (the JACK process thread) and writes a tone from a table made beforehand.
            try mixer.setStreamFormat(.int16(sampleRate: 22_050, channels: 1), scope: .input, element: 1)
            let table = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 441)
            for i in 0..<441 { table[i] = Int16(8000 * sin(2 * Double.pi * Double(i) / 441)) }
            defer { table.deallocate() }
            // The callback's state in a RenderState box: the table's address and a read position.
            struct ToneState { var table: UnsafeMutablePointer<Int16>; var position: Int }
            let tone = RenderState(ToneState(table: table.baseAddress!, position: 0))
            try graph.setNodeInputCallback(mixerNode, inputElement: 1) { _, _, buffers in
                alloccounter_arm_this_thread()
                let out = buffers.int16Samples(0)
                for f in 0..<out.count { out[f] = tone.value.table[(tone.value.position + f) % 441] }
                tone.value.position = (tone.value.position + out.count) % 441
                return 0
            }
            // Mixer input 3: a callback pulling the gate's output (AudioUnitRender in a callback).
            try graph.setNodeInputCallback(mixerNode, inputElement: 3, pulling: [AUNodeOutput(gateNode)]) { context in
                alloccounter_arm_this_thread()
                return context.render(gateNode)
            }
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)

            let counted = try CountedProcessThread(graph: graph, clientName: "ag-rtsafety") { driver in
                try mixer.setStreamFormat(.float32(sampleRate: Double(driver.sampleRate), channels: 2), scope: .output, element: 0)
            }

            // Live edits from this (control) thread while JACK pulls the graph: random, anywhere
            // in the graph (a second filter inserted into and taken out of the main chain, nodes
            // added to and removed from a mixer input), valid and invalid, with updates.
            var random = SplitMix64(seed: 0x5EED_0F_4A4B)
            var extra: AUNode?, inserted: AUNode?
            var edits = 0, invalid = 0, wrongCodes: [String] = []
            func refused(_ expected: AudioUnitError, _ body: () throws(AudioUnitError) -> Void) {
                do throws(AudioUnitError) { try body(); wrongCodes.append("accepted, expected \(expected)") } catch {
                    if error != expected { wrongCodes.append("\(error), expected \(expected)") }
                    invalid += 1
                }
            }
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline {
                edits += 1
                switch random(10) {
                case 0: gate.isMuted.toggle()
                case 1:
                    if random(2) == 0 {
                        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, Float(random(30_000)), scope: .global)
                    } else {  // scheduled: a ramp or an approach, starting somewhere in the next slices
                        try filter.scheduleParameter(AudioUnitParameterEvent(
                            id: LowPassFilterUnit.Parameter.cutoffFrequency, scope: .global, bufferOffset: random(1000),
                            random(2) == 0 ? .linearRamp(to: Float(100 + random(20_000)), durationFrames: 1 + random(4000))
                                           : .target(Float(100 + random(20_000)), timeConstant: 0.001 + Double(random(50)) / 1000)))
                    }
                case 2:
                    if random(2) == 0 {
                        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, Float(random(11)) / 10, scope: .input, element: UInt32(random(3)))
                    } else {
                        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, Float(random(11)) / 10, scope: .input,
                                               element: UInt32(random(3)), bufferOffset: random(512))
                    }
                case 3: try mixer.setParameter(MultichannelMixerUnit.Parameter.pan, Float(random(21) - 10) / 10, scope: .input, element: UInt32(random(3)))
                case 4:  // a node on mixer input 2, added or removed
                    if let node = extra { try graph.removeNode(node); extra = nil } else {
                        // Half of them run at 16 kHz mono: resampled both ways.
                        let unit: AudioUnit = random(2) == 0 ? LowPassFilterUnit() : MuteGateUnit()
                        if random(2) == 0 { try unit.setStreamFormat(.float32(sampleRate: 16_000, channels: 1), scope: .output, element: 0) }
                        let node = try graph.addNode(unit)
                        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, node, destinationInputElement: 0)
                        try graph.connectNodeInput(node, sourceOutputElement: 0, mixerNode, destinationInputElement: 2)
                        extra = node
                    }
                    try graph.update()
                case 5:  // a filter inserted between the main filter and the gate, or taken out
                    try graph.disconnectNodeInput(gateNode, inputElement: 0)
                    if let node = inserted {
                        try graph.removeNode(node)
                        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
                        inserted = nil
                    } else {
                        let node = try graph.addNode(LowPassFilterUnit())
                        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, node, destinationInputElement: 0)
                        try graph.connectNodeInput(node, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
                        inserted = node
                    }
                    try graph.update()
                case 6: refused(.invalidConnection) { () throws(AudioUnitError) in try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, filterNode, destinationInputElement: 0) }
                case 7: refused(.invalidElement) { () throws(AudioUnitError) in try graph.connectNodeInput(ioNode, sourceOutputElement: 1, mixerNode, destinationInputElement: 7) }
                case 8: refused(.invalidParameter) { () throws(AudioUnitError) in try filter.setParameter(LowPassFilterUnit.Parameter.resonance, .nan, scope: .global) }
                default: refused(.nodeNotFound) { () throws(AudioUnitError) in try graph.removeNode(AUNode(rawValue: 99_999)) }
                }
                usleep(500)
            }
            let invalidAnswered = invalid
            #expect(wrongCodes.isEmpty, "\(wrongCodes.prefix(3))")
            counted.expectNeitherAllocationNorLock("the edits")
            #expect(invalidAnswered > 100, "\(invalidAnswered) invalid edits, each answered with its code")
            #expect(edits >= 1000, "\(edits) random edits in 2 s")
        }
    }
}

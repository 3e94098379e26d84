// Tests, JACK: real-time safety measured on the JACK process thread (allocations, frees, locks).
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

#if DEBUG
let isOptimizedBuild = false
#else
let isOptimizedBuild = true
#endif

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
            // Count on a thread of its own, as a render callback automating parameters would run.
            let counts = Mutex<(allocations: UInt, locks: UInt, sum: Float)>((0, 0, 0))
            let thread = Thread {
                alloccounter_arm_this_thread()
                let a0 = alloccounter_allocations(), l0 = alloccounter_locks()
                var sum: Float = 0
                for i in 0..<1000 {
                    try? filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, Float(100 + i), scope: .global)
                    try? mixer.setParameter(MultichannelMixerUnit.Parameter.pan, Float(i % 3) - 1, scope: .input, element: UInt32(i % 4))
                    try? mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0.5, scope: .output)
                    sum += (try? filter.parameter(LowPassFilterUnit.Parameter.cutoffFrequency, scope: .global)) ?? 0
                    sum += (try? mixer.parameter(MultichannelMixerUnit.Parameter.pan, scope: .input, element: 3)) ?? 0
                    gate.isMuted = i % 2 == 0
                }
                let a1 = alloccounter_allocations(), l1 = alloccounter_locks()
                counts.withLock { $0 = (a1 - a0, l1 - l0, sum) }
            }
            thread.start()
            while counts.withLock({ $0.sum }) == 0 { usleep(1000) }
            let (allocations, locks, _) = counts.withLock { $0 }
            #expect(allocations == 0 && locks == 0, "6,000 parameter calls: \(allocations) allocations, \(locks) locks")
        }

        @Test func noAllocationOrLockOnTheProcessThreadUnderLiveEdits() throws {
            try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds; run without --sanitize")
            let server = TestServer.shared
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

            var options = JACKDriver.Options()
            options.clientName = "ag-rtsafety"
            options.serverName = server
            let driver = try JACKDriver(graph: graph, options: options)
            defer { driver.close() }
            let format = try StreamFormat.float32(sampleRate: Double(driver.sampleRate), channels: 2)
            try mixer.setStreamFormat(format, scope: .output, element: 0)
            try driver.start()
            try driver.connectPhysicalPorts()

            usleep(300_000)  // warm-up: first cycles, first plan
            #expect(alloccounter_armed_threads() >= 1, "the callback ran on the process thread")
            alloccounter_reset()
            let cyclesBefore = driver.processCycleCount

            // Live edits from this (control) thread while JACK pulls the graph: random, anywhere
            // in the graph (a second filter inserted into and taken out of the main chain, nodes
            // added to and removed from a mixer input), valid and invalid, with updates.
            var seed: UInt64 = 0x5EED_0F_4A4B
            func random(_ n: Int) -> Int {  // SplitMix64, reproducible
                seed &+= 0x9E37_79B9_7F4A_7C15
                var z = seed
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return Int((z ^ (z >> 31)) % UInt64(n))
            }
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
            let cycles = driver.processCycleCount - cyclesBefore
            let allocations = alloccounter_allocations(), frees = alloccounter_frees(), locks = alloccounter_locks()
            #expect(cycles > 100, "JACK ran \(cycles) cycles during the edits")
            #expect(invalidAnswered > 100, "\(invalidAnswered) invalid edits, each answered with its code")
            #expect(edits >= 1000, "\(edits) random edits in 2 s")
            #expect(allocations == 0 && frees == 0, "process thread: \(allocations) allocations, \(frees) frees")
            #expect(locks == 0, "process thread: \(locks) pthread_mutex_lock calls")
        }
    }
}

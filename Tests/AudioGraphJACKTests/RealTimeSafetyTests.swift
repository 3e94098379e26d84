import AudioGraph
import AudioGraphJACK
import CAllocCounter
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
            let io = IOUnit(), filter = LowPassFilterUnit(), gate = MuteGateUnit(), mixer = MultichannelMixerUnit(inputs: 3)
            let ioNode = try graph.addNode(io)
            let filterNode = try graph.addNode(filter), gateNode = try graph.addNode(gate), mixerNode = try graph.addNode(mixer)
            try io.setInputEnabled(true)
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, filterNode, destinationInputElement: 0)
            try graph.connectNodeInput(filterNode, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
            try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
            // A render callback on mixer input 1: arms the counter for the thread it runs on (the
            // JACK process thread) and writes a tone from a table made beforehand.
            let table = UnsafeMutableBufferPointer<Float>.allocate(capacity: 480)
            for i in 0..<480 { table[i] = 0.25 * Float(sin(2 * Double.pi * Double(i) / 480)) }
            defer { table.deallocate() }
            let tableAddress = UInt(bitPattern: table.baseAddress)
            try graph.setNodeInputCallback(mixerNode, inputElement: 1) { time, _, buffers in
                alloccounter_arm_this_thread()
                let t = UnsafeMutablePointer<Float>(bitPattern: tableAddress)!
                let start = Int(time.sampleTime) % 480
                for c in 0..<buffers.channelCount {
                    let out = buffers[c]
                    for f in 0..<buffers.frameCount { out[f] = t[(start + f) % 480] }
                }
                return 0
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

            // Live edits from this (control) thread while JACK pulls the graph.
            var extra: AUNode?
            var invalidAnswered = 0
            let deadline = Date().addingTimeInterval(2)
            var step = 0
            while Date() < deadline {
                step += 1
                gate.isMuted = step % 7 == 0
                try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, Float(200 + (step * 37) % 9000), scope: .global)
                try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, Float(step % 10) / 10, scope: .input, element: 0)
                try mixer.setParameter(MultichannelMixerUnit.Parameter.pan, Float(step % 21 - 10) / 10, scope: .input, element: 1)
                if step % 5 == 0 {
                    if let node = extra {
                        try graph.removeNode(node)
                        extra = nil
                    } else {
                        let node = try graph.addNode(LowPassFilterUnit())
                        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, node, destinationInputElement: 0)
                        try graph.connectNodeInput(node, sourceOutputElement: 0, mixerNode, destinationInputElement: 2)
                        extra = node
                    }
                    try graph.update()
                }
                // An invalid edit: answered with its code, changes nothing.
                do throws(AudioUnitError) {
                    try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, filterNode, destinationInputElement: 0)
                } catch {
                    if error == .invalidConnection { invalidAnswered += 1 }
                }
                usleep(1_000)
            }
            let cycles = driver.processCycleCount - cyclesBefore
            let allocations = alloccounter_allocations(), frees = alloccounter_frees(), locks = alloccounter_locks()
            #expect(cycles > 100, "JACK ran \(cycles) cycles during the edits")
            #expect(invalidAnswered == step, "every invalid edit answered with invalidConnection")
            #expect(step >= 500, "\(step) rounds of edits (each: 4 parameters, 1 invalid connect; every 5th: add or remove + update)")
            #expect(allocations == 0 && frees == 0, "process thread: \(allocations) allocations, \(frees) frees")
            #expect(locks == 0, "process thread: \(locks) pthread_mutex_lock calls")
        }
    }
}

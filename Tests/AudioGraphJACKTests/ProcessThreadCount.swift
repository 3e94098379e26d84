// Tests, JACK: what the real-time tests share — a driver on the shared server whose process thread is counted from after its warm-up, a thread of its own for counting parameter calls, and reproducible random choices.
import AudioGraph
import AudioGraphJACK
import AudioGraphTestSupport
import CAllocCounter
import Foundation
import Synchronization
import Testing

#if DEBUG
let isOptimizedBuild = false
#else
let isOptimizedBuild = true
#endif

/// A JACK driver pulling a graph on the shared test server (TestServer.shared), warmed up for
/// 300 ms (first cycles, first plan), then the allocation/lock counter (Tests/CAllocCounter)
/// reset: from then on every malloc, free and pthread_mutex_lock on a thread the graph's render
/// callbacks armed (the JACK process thread) is counted. A render callback in the graph must call
/// `alloccounter_arm_this_thread()`.
final class CountedProcessThread {
    let driver: JACKDriver
    private let cyclesBefore: UInt64

    /// - Parameters:
    ///   - clientName: the JACK client's name (unique per test).
    ///   - connectPhysicalPorts: connect the client to the server's physical ports after start.
    ///   - beforeStart: formats that depend on the server's rate, and the like.
    ///   - afterStart: observers (meters, analysers) installed on the running graph before the warm-up.
    /// - Throws: the driver's errors, or a failed requirement when the counter is unavailable
    ///   (sanitizer builds replace malloc).
    init(graph: AudioGraph, clientName: String, connectPhysicalPorts: Bool = true,
         beforeStart: (JACKDriver) throws -> Void = { _ in }, afterStart: (JACKDriver) throws -> Void = { _ in },
         sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds; run without --sanitize",
                     sourceLocation: sourceLocation)
        var options = JACKDriver.Options()
        options.clientName = clientName
        options.serverName = TestServer.shared
        driver = try JACKDriver(graph: graph, options: options)
        do {
            try beforeStart(driver)
            try driver.start()
            if connectPhysicalPorts { _ = try driver.connectPhysicalPorts() }
            try afterStart(driver)
        } catch {
            driver.close()
            throw error
        }
        usleep(300_000)
        #expect(alloccounter_armed_threads() >= 1, "the callback ran on the process thread", sourceLocation: sourceLocation)
        alloccounter_reset()
        cyclesBefore = driver.processCycleCount
    }

    deinit { driver.close() }

    /// Process cycles since the count began.
    var cycles: UInt64 { driver.processCycleCount - cyclesBefore }

    /// Expects that JACK ran more than 100 cycles since the count began and that the process
    /// thread neither allocated, freed nor locked.
    func expectNeitherAllocationNorLock(_ what: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let allocations = alloccounter_allocations(), frees = alloccounter_frees(), locks = alloccounter_locks()
        let cycles = cycles
        #expect(cycles > 100, "JACK ran \(cycles) cycles during \(what())", sourceLocation: sourceLocation)
        #expect(allocations == 0 && frees == 0, "process thread: \(allocations) allocations, \(frees) frees", sourceLocation: sourceLocation)
        #expect(locks == 0, "process thread: \(locks) pthread_mutex_lock calls", sourceLocation: sourceLocation)
    }
}

/// A 480-frame tone table for the chains the real-time tests count (a sine plus a small
/// staircase, so every unit has something to work on). Deallocated with the last reference,
/// which the render callback holds, so it outlives the graph's callback, never the other way.
/// SAFETY (`@unchecked Sendable`): written once in `init`; only the render callback reads it.
final class ToneTable: @unchecked Sendable {
    let samples = UnsafeMutablePointer<Float>.allocate(capacity: 480)
    init() { for i in 0..<480 { samples[i] = Float(0.3 * sin(2 * Double.pi * Double(i) / 480)) + Float(i % 7) * 0.01 } }
    deinit { samples.deallocate() }
}

/// Adds `units` to `graph` chained in order, the last into `ioNode`'s element 0, fed by a render
/// callback on the first one's input 0 that arms the counter for the thread it runs on (the
/// JACK process thread) and writes a tone from a table made beforehand. The nodes, in order.
func countedToneChain(_ graph: AudioGraph, _ units: [AudioUnit], into ioNode: AUNode) throws -> [AUNode] {
    let nodes = try units.map { try graph.addNode($0) }
    let table = ToneTable()
    let position = RenderState(0)
    try graph.setNodeInputCallback(nodes[0], inputElement: 0) { _, _, buffers in
        alloccounter_arm_this_thread()
        for c in 0..<buffers.channelCount {
            let out = buffers[c]
            for f in 0..<out.count { out[f] = table.samples[(position.value + f) % 480] }
        }
        position.value = (position.value + buffers.frameCount) % 480
        return 0
    }
    for i in 1..<nodes.count { try graph.connectNodeInput(nodes[i - 1], sourceOutputElement: 0, nodes[i], destinationInputElement: 0) }
    try graph.connectNodeInput(nodes.last!, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
    return nodes
}

/// Runs `body` on a thread of its own armed for the counter, as a render callback automating
/// parameters would run it, and returns what the thread allocated and locked meanwhile and the
/// count `body` returned (its calls).
func countedOnOwnThread(_ body: @escaping @Sendable () -> Int) -> (allocations: UInt, locks: UInt, calls: Int) {
    let counts = Mutex<(allocations: UInt, locks: UInt, calls: Int)?>(nil)
    let thread = Thread {
        alloccounter_arm_this_thread()
        let a0 = alloccounter_allocations(), l0 = alloccounter_locks()
        let calls = body()
        let a1 = alloccounter_allocations(), l1 = alloccounter_locks()
        counts.withLock { $0 = (a1 - a0, l1 - l0, calls) }
    }
    thread.start()
    while true {
        if let result = counts.withLock({ $0 }) { return result }
        usleep(1000)
    }
}


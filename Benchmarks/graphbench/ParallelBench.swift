// graphbench: rendering independent branches on several threads — speedup, the standard graph's choice, and the wake-up cost.
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// IO → `branches` chains of `length` low-pass biquads (each at its own cutoff) → mixer → IO.
func branchesGraph(branches: Int, length: Int) throws -> AudioGraph {
    let graph = AudioGraph()
    let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: branches)
    let ioNode = try graph.addNode(io), mixerNode = try graph.addNode(mixer)
    try io.setInputEnabled(true)
    for branch in 0..<branches {
        var previous = (ioNode, AudioUnitElement(1))
        for i in 0..<length {
            let filter = LowPassFilterUnit()
            try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, Float(1000 + 40 * i + 500 * branch), scope: .global)
            let node = try graph.addNode(filter)
            try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, node, destinationInputElement: 0)
            previous = (node, 0)
        }
        try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, mixerNode, destinationInputElement: AudioUnitElement(branch))
    }
    try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
    return graph
}

/// Prints the parallel section and returns the speedup of two 100-biquad branches on 2 threads
/// at 256-frame slices (serial time over parallel time, best of each, alternating).
func runParallelBench(frames: Int, input: Buffers, callgrind: Bool) throws -> Double {
    print("")
    print("several threads: IO → 2 chains of 100 low-pass biquads → mixer → IO (threads: 1 = the render thread alone)")
    print("  slice   1 thread ns/frame   2 threads ns/frame   speedup   checksums")
    let rounds = callgrind ? 1 : 3
    var speedup256 = 0.0
    for slice in callgrind ? [256] : [64, 256, 1024] {
        let serialOut = Buffers(channels: 2, frames: input.frames, seed: nil)
        let parallelOut = Buffers(channels: 2, frames: input.frames, seed: nil)
        let serial = try branchesGraph(branches: 2, length: 100)
        try serial.setRenderThreads(1)
        let parallel = try branchesGraph(branches: 2, length: 100)
        try parallel.setRenderThreads(2)
        let s = try serial.prepared(channels: 2), p = try parallel.prepared(channels: 2)
        guard p.renderThreadsInUse == 2 else { print("  (the plan did not take 2 threads)"); return 0 }
        if !callgrind {
            _ = renderEngine(s, input: input, output: serialOut, slice: slice)
            _ = renderEngine(p, input: input, output: parallelOut, slice: slice)
        }
        var serialBest = Double.infinity, parallelBest = Double.infinity
        for _ in 0..<rounds {
            serialBest = min(serialBest, renderEngine(s, input: input, output: serialOut, slice: slice, total: frames))
            parallelBest = min(parallelBest, renderEngine(p, input: input, output: parallelOut, slice: slice, total: frames))
        }
        let speedup = serialBest / parallelBest
        if slice == 256 { speedup256 = speedup }
        let same = serialOut.checksum == parallelOut.checksum ? "identical" : "DIFFER"
        print("  \(pad(String(slice), 5))   \(pad(fixed(serialBest / Double(frames) * 1e9, 2), 17))   \(pad(fixed(parallelBest / Double(frames) * 1e9, 2), 18))   \(pad(fixed(speedup, 2), 7))   \(same)")
    }
    if callgrind { return speedup256 }

    // The standard graph keeps one thread when left to choose: the same path as before.
    let chosen = try standardGraph().prepared(channels: 2)
    print("standard graph, threads chosen by the engine: \(chosen.renderThreadsInUse)")

    // Wake-up cost: two branches of one biquad each, on 2 threads against 1, slices back to back
    // (the worker spins between them) and 200 µs apart (it sleeps, and is woken by sem_post).
    print("wake-up cost: IO → 2 biquads → mixer → IO, 2 threads against 1, per 64-frame slice")
    for (label, gap) in [("back to back (worker spins)", 0), ("200 µs apart (worker sleeps)", 200)] {
        let one = try branchesGraph(branches: 2, length: 1)
        try one.setRenderThreads(1)
        let two = try branchesGraph(branches: 2, length: 1)
        try two.setRenderThreads(2)
        let a = try one.prepared(channels: 2), b = try two.prepared(channels: 2)
        let slices = 2000
        func perSlice(_ g: AudioGraph) -> Double {
            var total = 0.0
            for _ in 0..<slices {
                if gap > 0 { usleep(UInt32(gap)) }
                total += renderEngine(g, input: input, output: Buffers(channels: 2, frames: 64, seed: nil), slice: 64, total: 64)
            }
            return total / Double(slices)
        }
        var oneBest = Double.infinity, twoBest = Double.infinity
        for _ in 0..<3 { oneBest = min(oneBest, perSlice(a)); twoBest = min(twoBest, perSlice(b)) }
        let wakes = b.renderWorkerWakeUps
        print("  \(label): \(fixed((twoBest - oneBest) * 1e6, 2)) µs more per slice (\(fixed(oneBest * 1e6, 2)) → \(fixed(twoBest * 1e6, 2)) µs); worker woken \(wakes) times")
    }
    return speedup256
}

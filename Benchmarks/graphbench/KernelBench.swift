// graphbench: per-kernel figures — each catalogue unit alone (IO → unit → IO) against a plain C loop of the same arithmetic, timed in the same run.
import AudioGraph

/// One unit's kernel measured against its C reference. The engine side is a whole graph (IO →
/// unit → IO, pulled like a driver pulls), so the figure includes the engine's per-slice cost;
/// the C side is the bare loop.
struct KernelBench {
    /// What is measured, e.g. "high-pass biquad 1 kHz".
    let name: String
    /// IO → the unit → IO, not yet prepared (``AudioGraph/prepared(channels:)`` is applied).
    let makeGraph: () throws -> AudioGraph
    /// The C loop over the same buffers, cycled as ``renderEngine(_:input:output:slice:total:)``
    /// cycles them; returns seconds taken.
    let reference: (_ input: Buffers, _ output: Buffers, _ slice: Int, _ total: Int) -> Double
    /// Whether engine and C must produce identical samples (checksums compared) — true where the
    /// C loop does the same operations in the same order.
    let bitIdentical: Bool
}

extension KernelBench {
    /// IO → `unit` → IO.
    static func graph(with unit: AudioUnit) throws -> AudioGraph {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        let node = try graph.addNode(unit)
        try io.setInputEnabled(true)
        if unit.elementCount(.input) > 0 {
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, node, destinationInputElement: 0)
        }
        try graph.connectNodeInput(node, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        return graph
    }

    /// Every catalogue kernel measured (each unit family adds its list here).
    static var all: [KernelBench] { [] + dynamics + generators }
}

/// Measures every kernel at slice 64 and 256, alternating engine and C, best of three.
func runKernelBenches(frames: Int, input: Buffers, callgrind: Bool) throws {
    let benches = KernelBench.all
    guard !benches.isEmpty else { return }
    print("")
    print("catalogue kernels alone (IO → unit → IO) against a plain C loop of the same arithmetic")
    print("  kernel                              slice   engine ns/frame   C ns/frame   ratio   output")
    for bench in benches {
        for slice in callgrind ? [64] : [64, 256] {
            let engineOut = Buffers(channels: input.channels, frames: input.frames, seed: nil)
            let referenceOut = Buffers(channels: input.channels, frames: input.frames, seed: nil)
            var engineBest = Double.infinity, referenceBest = Double.infinity
            for _ in 0..<(callgrind ? 1 : 3) {
                let graph = try bench.makeGraph().prepared(channels: input.channels)
                engineBest = min(engineBest, renderEngine(graph, input: input, output: engineOut, slice: slice, total: frames))
                referenceBest = min(referenceBest, bench.reference(input, referenceOut, slice, frames))
            }
            let e = engineBest / Double(frames) * 1e9, r = referenceBest / Double(frames) * 1e9
            let same = engineOut.checksum == referenceOut.checksum
            let verdict = bench.bitIdentical ? (same ? "identical" : "DIFFER") : "not compared"
            let label = bench.name.count >= 34 ? String(bench.name.prefix(34)) : bench.name + String(repeating: " ", count: 34 - bench.name.count)
            print("  \(label)  \(pad(String(slice), 5))   \(pad(fixed(e, 2), 15))   \(pad(fixed(r, 2), 10))   \(pad(fixed(e / r, 2), 5))   \(verdict)")
        }
    }
}

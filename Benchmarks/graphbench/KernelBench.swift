// graphbench: per-kernel figures — each catalogue unit alone (IO → unit → IO) against a plain C loop of the same arithmetic, timed in the same run.
import AudioGraph
import CReference
#if canImport(Glibc)
import Glibc
#endif

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
    static var all: [KernelBench] { convolution + dynamics + generators }
}

// MARK: - Convolution

extension KernelBench {
    /// The convolution reverb with a stereo response of 0.1 s and of 1 s (decaying noise), 100 %
    /// wet at 0 dB, against the C reference's partitioned convolution (creference.c: the same
    /// head, delay line, complex multiply-adds and KissFFT transforms, in the same order).
    static var convolution: [KernelBench] {
        [0.1, 1.0].map { seconds in
            let response = benchResponse(frames: Int(seconds * 48_000))
            return KernelBench(
                name: "convolution \(seconds == 1 ? "1" : "0.1") s stereo response",
                makeGraph: {
                    let unit = ConvolutionReverbUnit()
                    try unit.setImpulseResponse(response, sampleRate: 48_000)
                    return try graph(with: unit)
                },
                reference: { input, output, slice, total in
                    let pointers = response.map { channel in
                        let p = UnsafeMutablePointer<Float>.allocate(capacity: channel.count)
                        p.initialize(from: channel, count: channel.count)
                        return UnsafePointer(p)
                    }
                    defer { pointers.forEach { UnsafeMutablePointer(mutating: $0).deallocate() } }
                    let convolver = pointers.withUnsafeBufferPointer { list in
                        list.withMemoryRebound(to: UnsafePointer<Float>?.self) {
                            creference_convolver_new($0.baseAddress, Int32(response.count), Int32(response[0].count),
                                                     Int32(input.channels), Int32(ConvolutionReverbUnit.partitionSize))
                        }
                    }!
                    defer { creference_convolver_free(convolver) }
                    let inPtrs = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: input.channels)
                    let outPtrs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: output.channels)
                    defer { inPtrs.deallocate(); outPtrs.deallocate() }
                    let start = now()
                    var done = 0
                    while done < total {
                        let offset = done % input.frames
                        let n = min(slice, input.frames - offset, total - done)
                        for c in 0..<input.channels {
                            inPtrs[c] = UnsafePointer(input.pointers[c] + offset)
                            outPtrs[c] = output.pointers[c] + offset
                        }
                        creference_convolver_process(convolver, inPtrs, outPtrs, Int32(n))
                        done += n
                    }
                    return now() - start
                },
                bitIdentical: true)
        }
    }

    /// `[2][frames]` decaying noise (a 64-bit LCG, e^(−5t/T)), the benchmark's responses.
    static func benchResponse(frames: Int) -> [[Float]] {
        var x: UInt64 = 7
        return (0..<2).map { _ in
            (0..<frames).map { f in
                x = x &* 6364136223846793005 &+ 1442695040888963407
                let n = Float(Int32(truncatingIfNeeded: x >> 32)) / Float(Int32.max)
                return n * Float(exp(-5 * Double(f) / Double(frames))) * 0.1
            }
        }
    }
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

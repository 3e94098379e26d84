// graphbench: per-kernel figures — each catalogue unit alone (IO → unit → IO) against a plain C loop of the same arithmetic, timed in the same run.
import AudioGraph
import AudioGraphPlugins
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
    static var all: [KernelBench] { filters + convolution + dynamics + generators + plugins + timePitch }
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
                    return cycled(input, output, slice: slice, total: total) { i, o, n in
                        creference_convolver_process(convolver, i, o, n)
                    }
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

// MARK: - Filters track: the biquad family, the N-band EQ, the delays

extension KernelBench {
    /// Times `slice`-frame calls of `body` over the input and output, cycled as the engine's
    /// are: ``cycleReference(input:output:slice:total:_:)`` with the frame count as C takes it.
    static func cycled(_ input: Buffers, _ output: Buffers, slice: Int, total: Int,
                       _ body: (_ in: UnsafePointer<UnsafePointer<Float>?>, _ out: UnsafePointer<UnsafeMutablePointer<Float>?>, _ frames: Int32) -> Void) -> Double {
        cycleReference(input: input, output: output, slice: slice, total: total) { i, o, n in body(i, o, Int32(n)) }
    }

    /// A cookbook design in C, as the engine makes it.
    static func design(_ response: Int32, _ frequency: Double, q: Double? = nil, octaves: Double? = nil, gain: Double = 0) -> [Double] {
        var c = [Double](repeating: 0, count: 5)
        creference_biquad_design(response, frequency, q ?? octaves!, octaves != nil ? 1 : 0, gain, 48_000, &c)
        return c
    }

    /// A single-biquad unit against the C biquad with the same design.
    static func biquad(_ name: String, _ make: @escaping () throws -> AudioUnit, _ coefficients: [Double]) -> KernelBench {
        KernelBench(name: name, makeGraph: { try graph(with: make()) }, reference: { input, output, slice, total in
            var state = [Double](repeating: 0, count: 4 * input.channels)
            return cycled(input, output, slice: slice, total: total) { i, o, n in
                creference_biquad64(i, o, Int32(input.channels), n, coefficients, &state)
            }
        }, bitIdentical: true)
    }

    static var filters: [KernelBench] {
        let butterworth = 0.7071067811865476
        // N-band EQ: high-pass 80 Hz, low shelf 200 Hz +3 dB, parametric 1 kHz −6 dB 1 octave, high shelf 8 kHz +2 dB.
        let eqBands: [(NBandEQUnit.FilterType, Float, Float, [Double])] = [
            (.butterworthHighPass, 80, 0, design(1, 80, q: butterworth)),
            (.lowShelf, 200, 3, design(6, 200, q: butterworth, gain: 3)),
            (.parametric, 1000, -6, design(5, 1000, octaves: 1, gain: -6)),
            (.highShelf, 8000, 2, design(7, 8000, q: butterworth, gain: 2)),
        ]
        let delayLowPass = design(0, 15_000, q: butterworth)
        return [
            biquad("high-pass biquad 1 kHz", {
                let unit = HighPassFilterUnit()
                try unit.setParameter(HighPassFilterUnit.Parameter.cutoffFrequency, 1000, scope: .global)
                return unit
            }, design(1, 1000, q: butterworth)),
            biquad("parametric EQ 1 kHz Q 2 +6 dB", {
                let unit = ParametricEQUnit()
                try unit.setParameter(ParametricEQUnit.Parameter.centerFrequency, 1000, scope: .global)
                try unit.setParameter(ParametricEQUnit.Parameter.q, 2, scope: .global)
                try unit.setParameter(ParametricEQUnit.Parameter.gain, 6, scope: .global)
                return unit
            }, design(5, 1000, q: 2, gain: 6)),
            KernelBench(name: "N-band EQ, 4 bands", makeGraph: {
                let eq = NBandEQUnit(bands: 4)
                for (b, band) in eqBands.enumerated() {
                    let id = AudioUnitParameterID(b)
                    try eq.setParameter(NBandEQUnit.Parameter.filterType + id, Float(band.0.rawValue), scope: .global)
                    try eq.setParameter(NBandEQUnit.Parameter.frequency + id, band.1, scope: .global)
                    try eq.setParameter(NBandEQUnit.Parameter.gain + id, band.2, scope: .global)
                    try eq.setParameter(NBandEQUnit.Parameter.bandwidth + id, 1, scope: .global)
                    try eq.setParameter(NBandEQUnit.Parameter.bypassBand + id, 0, scope: .global)
                }
                return try graph(with: eq)
            }, reference: { input, output, slice, total in
                var states = eqBands.map { _ in [Double](repeating: 0, count: 4 * input.channels) }
                return cycled(input, output, slice: slice, total: total) { i, o, n in
                    creference_biquad64(i, o, Int32(input.channels), n, eqBands[0].3, &states[0])
                    o.withMemoryRebound(to: UnsafePointer<Float>?.self, capacity: input.channels) { inPlace in
                        for b in 1..<eqBands.count {
                            creference_biquad64(inPlace, o, Int32(input.channels), n, eqBands[b].3, &states[b])
                        }
                    }
                }
            }, bitIdentical: true),
            KernelBench(name: "delay 0.25 s, 50 % feedback", makeGraph: {
                let unit = DelayUnit()
                try unit.setParameter(DelayUnit.Parameter.delayTime, 0.25, scope: .global)
                return try graph(with: unit)
            }, reference: { input, output, slice, total in
                let mask = 131_071
                let lines = UnsafeMutablePointer<Float>.allocate(capacity: (mask + 1) * input.channels)
                lines.initialize(repeating: 0, count: (mask + 1) * input.channels)
                defer { lines.deallocate() }
                var state = [Double](repeating: 0, count: 4 * input.channels)
                var write: Int32 = 0
                let dry = Float(cos(Double.pi / 2 * 50 / 100)), wet = Float(sin(Double.pi / 2 * 50 / 100))
                return cycled(input, output, slice: slice, total: total) { i, o, n in
                    creference_feedback_delay(i, o, Int32(input.channels), n, lines, Int32(mask), &write, 12_000, 0.5, dry, wet,
                                              delayLowPass, &state)
                }
            }, bitIdentical: true),
            KernelBench(name: "sample delay 1000 frames", makeGraph: {
                let unit = SampleDelayUnit()
                try unit.setParameter(SampleDelayUnit.Parameter.delayFrames, 1000, scope: .global)
                return try graph(with: unit)
            }, reference: { input, output, slice, total in
                let mask = 65_535
                let lines = UnsafeMutablePointer<Float>.allocate(capacity: (mask + 1) * input.channels)
                lines.initialize(repeating: 0, count: (mask + 1) * input.channels)
                defer { lines.deallocate() }
                var write: Int32 = 0
                return cycled(input, output, slice: slice, total: total) { i, o, n in
                    creference_sample_delay(i, o, Int32(input.channels), n, lines, Int32(mask), &write, 1000)
                }
            }, bitIdentical: true),
        ]
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

// MARK: - Plugin hosting

extension KernelBench {
    /// Plugin hosting overhead: ladspa-sdk's amp_mono (gain 0.5) and lpf (1 kHz) as PluginUnits
    /// (one instance per channel) against the same library's `run` called directly in a C loop
    /// (creference.c: connect_port and run per channel per slice). The engine side includes the
    /// graph's own per-slice cost (IO → unit → IO), as every kernel figure does.
    static var plugins: [KernelBench] {
        [("amp_mono", "amp.so", Float(0.5)), ("lpf", "filter.so", 1000)].map { label, library, control in
            KernelBench(
                name: "plugin: LADSPA \(label) hosted",
                makeGraph: {
                    let unit = try PluginUnit(ladspa: label, library: library)
                    for info in unit.parameterList(scope: .global) where !info.isReadOnly { try unit.setParameter(info.id, control, scope: .global) }
                    return try graph(with: unit)
                },
                reference: { input, output, slice, total in
                    guard let plugin = creference_ladspa_new("/usr/lib/ladspa/" + library, label, 48_000, Int32(input.channels), control) else { return .nan }
                    defer { creference_ladspa_free(plugin) }
                    return cycled(input, output, slice: slice, total: total) { i, o, n in creference_ladspa_process(plugin, i, o, n) }
                },
                bitIdentical: true)
        }
    }
}

// graphbench: the dynamics and generator kernels (compressor, limiter, oscillator, noise, constant), each against its C loop.
import AudioGraph
import CReference
#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` over `total` frames in slices, cycling through `input` and `output` as
/// renderEngine does; returns seconds taken.
func cycleReference(input: Buffers, output: Buffers, slice: Int, total: Int,
                    _ body: (_ input: UnsafeMutablePointer<UnsafePointer<Float>?>, _ output: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, _ frames: Int) -> Void) -> Double {
    let inPtrs = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: input.channels)
    let outPtrs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: output.channels)
    defer { inPtrs.deallocate(); outPtrs.deallocate() }
    // As every C reference: flush-to-zero on (see creference_denormals_flush).
    let mode = creference_denormals_flush()
    defer { creference_denormals_restore(mode) }
    let start = now()
    var done = 0
    while done < total {
        let offset = done % input.frames
        let n = min(slice, input.frames - offset, total - done)
        for c in 0..<input.channels { inPtrs[c] = UnsafePointer(input.pointers[c] + offset) }
        for c in 0..<output.channels { outPtrs[c] = output.pointers[c] + offset }
        body(inPtrs, outPtrs, n)
        done += n
    }
    return now() - start
}

/// The coefficient e^(−1/(τ·fs)) as the kernels compute it (τ a Float parameter).
func timeCoefficient(_ seconds: Float) -> Float { Float(exp(-1 / (Double(seconds) * 48_000))) }

extension KernelBench {
    /// The dynamics processor compressing (4:1 above −40 dBFS: every frame through logf/expf),
    /// the same with its level between the knees (one comparison a frame), and the peak limiter
    /// limiting noise raised 12 dB.
    static var dynamics: [KernelBench] {
        func compressor(threshold: Float, headRoom: Float) -> KernelBench {
            KernelBench(
                name: threshold < 0 ? "dynamics 4:1, compressing" : "dynamics, between the knees",
                makeGraph: {
                    let unit = DynamicsProcessorUnit()
                    try unit.setParameter(DynamicsProcessorUnit.Parameter.threshold, threshold, scope: .global)
                    try unit.setParameter(DynamicsProcessorUnit.Parameter.headRoom, headRoom, scope: .global)
                    return try graph(with: unit)
                },
                reference: { input, output, slice, total in
                    // The kernel's constants, computed as it computes them.
                    let knee = DynamicsProcessorUnit.kneeWidth
                    let ratio = max(1, -threshold / headRoom)
                    let low = Float(pow(10, Double(-100 + knee / 2) / 20))
                    let unityHigh = threshold - knee / 2
                    let high = Float(pow(10, Double(unityHigh) / 20))
                    let curve: [Float] = [threshold, ratio, -100, 2, knee, 0]
                    var envelope: Float = 0
                    let gains = UnsafeMutablePointer<Float>.allocate(capacity: 64)
                    defer { gains.deallocate() }
                    return cycleReference(input: input, output: output, slice: slice, total: total) { inPtrs, outPtrs, n in
                        creference_dynamics(inPtrs, outPtrs, Int32(input.channels), Int32(n), &envelope,
                                            timeCoefficient(0.001), timeCoefficient(0.05), low, high, 1, curve, gains)
                    }
                },
                bitIdentical: true)
        }
        let limiter = KernelBench(
            name: "peak limiter, +12 dB into 0 dBFS",
            makeGraph: {
                let unit = PeakLimiterUnit()
                try unit.setParameter(PeakLimiterUnit.Parameter.preGain, 12, scope: .global)
                return try graph(with: unit)
            },
            reference: { input, output, slice, total in
                let d = 1440, a = 576  // 30 ms look-ahead, the default 12 ms attack
                var capacity = 16
                while capacity < 2 * d + 2 { capacity *= 2 }
                let state = UnsafeMutableRawPointer.allocate(byteCount: Int(creference_limiter_size(Int32(input.channels), Int32(capacity))), alignment: 16)
                defer { state.deallocate() }
                creference_limiter_init(state, Int32(input.channels), Int32(capacity), Int32(d), Int32(a))
                let preGain = Float(pow(10, Double(Float(12)) / 20))
                return cycleReference(input: input, output: output, slice: slice, total: total) { inPtrs, outPtrs, n in
                    creference_limiter(state, inPtrs, outPtrs, Int32(n), preGain, 1, timeCoefficient(0.024))
                }
            },
            bitIdentical: true)
        return [compressor(threshold: -40, headRoom: 10), compressor(threshold: 10, headRoom: 5), limiter]
    }

    /// The generators (no input): a band-limited sawtooth at 1 kHz, pink noise, a constant.
    static var generators: [KernelBench] {
        // The sawtooth table a 1 kHz note reads at 48 kHz: 23 harmonics, built as the engine builds it.
        let table = UnsafeMutablePointer<Float>.allocate(capacity: 4097)
        do {
            let n = 4096
            var sine = [Double](repeating: 0, count: n), sum = [Double](repeating: 0, count: n)
            for m in 0..<n { sine[m] = sin(2 * Double.pi * Double(m) / Double(n)) }
            for k in 1...23 {
                let b = (k % 2 == 1 ? 2.0 : -2.0) / (Double.pi * Double(k))
                var index = 0
                for i in 0..<n { sum[i] += b * sine[index]; index = (index + k) & (n - 1) }
            }
            for i in 0..<n { table[i] = Float(sum[i]) }
            table[n] = table[0]
        }
        func spread(_ out: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, channels: Int, frames: Int) {
            for c in 1..<channels { out[c]!.update(from: out[0]!, count: frames) }
        }
        let oscillator = KernelBench(
            name: "oscillator, sawtooth 1 kHz",
            makeGraph: {
                let unit = OscillatorUnit()
                try unit.setParameter(OscillatorUnit.Parameter.waveform, Float(OscillatorUnit.Waveform.sawtooth.rawValue), scope: .global)
                try unit.setParameter(OscillatorUnit.Parameter.frequency, 1000, scope: .global)
                return try graph(with: unit)
            },
            reference: { input, output, slice, total in
                var phase = 0.0
                return cycleReference(input: input, output: output, slice: slice, total: total) { _, outPtrs, n in
                    creference_wavetable(outPtrs[0], Int32(n), table, &phase, 1000.0 / 48_000)
                    spread(outPtrs, channels: output.channels, frames: n)
                }
            },
            bitIdentical: true)
        let pink = KernelBench(
            name: "noise, pink",
            makeGraph: {
                let unit = NoiseUnit()
                try unit.setParameter(NoiseUnit.Parameter.color, Float(NoiseUnit.Color.pink.rawValue), scope: .global)
                return try graph(with: unit)
            },
            reference: { input, output, slice, total in
                // PCG32 seeded as pcg32_srandom_r(0, 54): two steps from 0.
                var rng: UInt64 = 109 &* 6_364_136_223_846_793_005 &+ 109
                var filter = [Float](repeating: 0, count: 7)
                return cycleReference(input: input, output: output, slice: slice, total: total) { _, outPtrs, n in
                    creference_pink(outPtrs[0], Int32(n), &rng, &filter)
                    spread(outPtrs, channels: output.channels, frames: n)
                }
            },
            bitIdentical: true)
        let constant = KernelBench(
            name: "constant source",
            makeGraph: { try graph(with: ConstantSourceUnit()) },
            reference: { input, output, slice, total in
                cycleReference(input: input, output: output, slice: slice, total: total) { _, outPtrs, n in
                    creference_fill(outPtrs[0], Int32(n), 1)
                    spread(outPtrs, channels: output.channels, frames: n)
                }
            },
            bitIdentical: true)
        return [oscillator, pink, constant]
    }
}

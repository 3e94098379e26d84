// Tests, DSP: the Biquad DSP type on its own — no graph — and the low-pass unit against it.
import Testing
@testable import AudioGraph
#if canImport(Glibc)
import Glibc
import AudioGraphTestSupport
#endif

@Suite("Biquad (DSP, no graph)")
struct BiquadTests {
    /// Filters `input` in runs of `run` frames, the memory carried across runs.
    func filter(_ input: [Float], _ c: BiquadCoefficients, run: Int = 64) -> [Float] {
        var memory = BiquadMemory()
        var output = [Float](repeating: 0, count: input.count)
        input.withUnsafeBufferPointer { src in
            output.withUnsafeMutableBufferPointer { dst in
                var start = 0
                while start < input.count {
                    let n = min(run, input.count - start)
                    Biquad.process(c, &memory, input: src.baseAddress! + start, output: dst.baseAddress! + start, frames: n)
                    start += n
                }
            }
        }
        return output
    }

    @Test func lowPassCoefficientsAreTheCookbooksButterworth() {
        // RBJ cookbook by hand, in Double, for 1 kHz at 48 kHz and Q = 1/√2.
        let w0 = 2 * Double.pi * 1000 / 48_000, alpha = sin(w0) / (2 * 0.7071067811865476), a0 = 1 + alpha
        let c = BiquadCoefficients.lowPass(cutoff: 1000, q: 0.7071067811865476, sampleRate: 48_000)
        #expect(c.b0 == Float((1 - cos(w0)) / 2 / a0))
        #expect(c.b1 == Float((1 - cos(w0)) / a0))
        #expect(c.b2 == c.b0)
        #expect(c.a1 == Float(-2 * cos(w0) / a0))
        #expect(c.a2 == Float((1 - alpha) / a0))
        // DC gain (b0 + b1 + b2) / (1 + a1 + a2) is 1.
        #expect(abs(Double(c.b0 + c.b1 + c.b2) / Double(1 + c.a1 + c.a2) - 1) < 1e-5)
    }

    @Test(arguments: [100.0, 1000.0, 6900.0])
    func frequencyResponseIsMinus3dBAtTheCutoffAndFlatBelow(cutoff: Double) {
        let c = BiquadCoefficients.lowPass(cutoff: Float(cutoff), q: 0.7071067811865476, sampleRate: 48_000)
        let frames = 48_000
        let atCutoff = filter(sine(frequency: cutoff, frames: frames), c)
        let gain = decibels(rms(atCutoff[(frames / 2)...]) / rms(sine(frequency: cutoff, frames: frames)[(frames / 2)...]))
        #expect(abs(gain + 3.01) < 0.05, "gain at the cutoff \(gain) dB")
        let low = cutoff / 10
        let below = filter(sine(frequency: low, frames: frames), c)
        let passband = decibels(rms(below[(frames / 2)...]) / rms(sine(frequency: low, frames: frames)[(frames / 2)...]))
        #expect(abs(passband) < 0.05, "a decade below: \(passband) dB")
        let high = min(cutoff * 4, 20_000)
        let above = filter(sine(frequency: high, frames: frames), c)
        let stopband = decibels(rms(above[(frames / 2)...]) / rms(sine(frequency: high, frames: frames)[(frames / 2)...]))
        #expect(stopband < -20, "two octaves above: \(stopband) dB (12 dB/octave)")
    }

    @Test func stepResponseSettlesAtOneWithoutRinging() {
        let c = BiquadCoefficients.lowPass(cutoff: 1000, q: 0.7071067811865476, sampleRate: 48_000)
        let step = filter([Float](repeating: 1, count: 4800), c)
        #expect(abs(step.last! - 1) < 1e-5)
        // Butterworth overshoots about 4 %; nothing near the ringing of a resonant filter.
        #expect(step.max()! < 1.05 && step.max()! > 1.0)
        #expect(step.first! > 0 && step.first! < 0.01, "the step rises from the first frame")
    }

    @Test func silenceAfterSignalDecaysToExactZeros() {
        let c = BiquadCoefficients.lowPass(cutoff: 1000, q: 0.7071067811865476, sampleRate: 48_000)
        var input = noise(frames: 1000, seed: 1)
        input += [Float](repeating: 0, count: 48_000)
        let output = filter(input, c)
        #expect(output.suffix(1000).allSatisfy { $0 == 0 }, "denormals flushed: exact zeros, not subnormals")
        #expect(!output.contains { $0 != 0 && abs($0) < Float.leastNormalMagnitude })
    }

    @Test func runsOfAnyLengthGiveTheSameSamples() {
        let c = BiquadCoefficients.lowPass(cutoff: 2500, q: 2, sampleRate: 44_100)
        let input = noise(frames: 5000, seed: 9)
        let whole = filter(input, c, run: 5000)
        for run in [1, 7, 64, 333] { #expect(filter(input, c, run: run) == whole, "runs of \(run)") }
    }

    @Test func aPairOfChannelsIsBitIdenticalToEachAlone() {
        let c = BiquadCoefficients.lowPass(cutoff: 440, q: 0.9, sampleRate: 48_000)
        let left = noise(frames: 3000, seed: 4), right = noise(frames: 3000, seed: 5)
        var a = BiquadMemory(), b = BiquadMemory()
        var outLeft = [Float](repeating: 0, count: 3000), outRight = outLeft
        left.withUnsafeBufferPointer { l in right.withUnsafeBufferPointer { r in
            outLeft.withUnsafeMutableBufferPointer { ol in outRight.withUnsafeMutableBufferPointer { or in
                for start in stride(from: 0, to: 3000, by: 100) {
                    Biquad.processPair(c, &a, &b, inputs: (l.baseAddress! + start, r.baseAddress! + start),
                                       outputs: (ol.baseAddress! + start, or.baseAddress! + start), frames: 100)
                }
            } }
        } }
        #expect(outLeft == filter(left, c, run: 100))
        #expect(outRight == filter(right, c, run: 100))
    }

    @Test func theLowPassUnitIsTheBiquadBitForBit() throws {
        // The unit's kernel (through a graph) against the DSP type alone: the plumbing adds nothing.
        let unit = LowPassFilterUnit()
        try unit.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 1000, scope: .global)
        try unit.setParameter(LowPassFilterUnit.Parameter.resonance, 6, scope: .global)
        let chain = try Chain([unit], channels: 2)
        let input = [noise(frames: 10_000, seed: 11), noise(frames: 10_000, seed: 12)]
        let output = try chain.render(input, slice: 256)
        let c = BiquadCoefficients.lowPass(cutoff: 1000, q: pow(10, 6.0 / 20) * 0.7071067811865476, sampleRate: 48_000)
        #expect(output[0] == filter(input[0], c, run: 256))
        #expect(output[1] == filter(input[1], c, run: 256))
    }
}

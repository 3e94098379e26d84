// Tests, DSP: the delay lines on their own — no graph — against the recurrences written out in the test.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("Delay lines (DSP, no graph)")
struct DelayLineTests {
    @Test func capacityIsAPowerOfTwoWithRoomForTheInterpolation() {
        for (delay, capacity) in [(0, 2), (1, 4), (2, 4), (3, 8), (96_000, 131_072), (131_070, 131_072), (131_071, 262_144)] {
            #expect(DelayLine.capacity(maximumDelay: delay) == capacity, "\(delay)")
        }
    }

    @Test(arguments: [0, 1, 7, 64, 100, 999])
    func wholeFrameDelayIsExactAcrossTheWrap(delay: Int) {
        // A 1024-frame ring, runs of odd lengths: output = input delayed, bit for bit.
        let capacity = 1024, mask = capacity - 1
        let line = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        line.initialize(repeating: 0, count: capacity)
        defer { line.deallocate() }
        let input = noise(frames: 5000, seed: 8)
        var output = [Float](repeating: .nan, count: 5000)
        var write = 0, start = 0, run = 1
        input.withUnsafeBufferPointer { src in output.withUnsafeMutableBufferPointer { dst in
            while start < 5000 {
                let n = min(run, 5000 - start, capacity - delay)
                DelayLine.whole(line: line, mask: mask, write: write, input: src.baseAddress! + start,
                                output: dst.baseAddress! + start, frames: n, delay: delay)
                write = (write + n) & mask
                start += n
                run = run * 3 % 37 + 1
            }
        } }
        #expect(output == [Float](repeating: 0, count: delay) + input.prefix(5000 - delay))
    }

    @Test func theFeedbackDelayIsItsRecurrence() {
        // y[n] = dry·x[n] + wet·d[n], line[n] = x[n] + g·LP(d)[n], d[n] = line read `delay`
        // frames back, interpolated — written out here in the plainest way, per frame.
        let capacity = 4096, mask = capacity - 1
        let delay = 123.375, g: Float = -0.6, dry: Float = 0.3, wet: Float = 0.9
        let lowPass = BiquadCoefficients64.design(.lowPass, frequency: 3000, bandwidth: .q(0.7071067811865476), gain: 0, sampleRate: 48_000)
        let line = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        line.initialize(repeating: 0, count: capacity)
        defer { line.deallocate() }
        let input = noise(frames: 3000, seed: 4)
        var output = [Float](repeating: 0, count: 3000)
        var memory = BiquadMemory64()
        let run = FeedbackDelayRun(delay0: delay, delay1: delay, feedback0: g, feedback1: g, dry0: dry, dry1: dry, wet0: wet, wet1: wet)
        input.withUnsafeBufferPointer { src in output.withUnsafeMutableBufferPointer { dst in
            for start in stride(from: 0, to: 3000, by: 100) {
                DelayLine.feedback(line: line, mask: mask, write: start & mask, input: src.baseAddress! + start,
                                   output: dst.baseAddress! + start, frames: 100, run: run, lowPass: lowPass, memory: &memory)
            }
        } }
        // The reference.
        var history = [Float](repeating: 0, count: 3000)
        var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0
        var expected = [Float](repeating: 0, count: 3000)
        for n in 0..<3000 {
            func at(_ k: Int) -> Float { k >= 0 ? history[k] : 0 }
            let near = at(n - 123), far = at(n - 124)
            let d = near + Float(0.375) * (far - near)
            let y = lowPass.b0 * Double(d) + lowPass.b1 * x1 + lowPass.b2 * x2 - lowPass.a1 * y1 - lowPass.a2 * y2
            x2 = x1; x1 = Double(d); y2 = y1; y1 = y
            history[n] = input[n] + g * Float(y)
            expected[n] = dry * input[n] + wet * d
        }
        #expect(output == expected)
    }

    @Test func aCrossfadeMovesFromOneDelayToTheOther() {
        let capacity = 256, mask = capacity - 1
        let line = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        line.initialize(repeating: 0, count: capacity)
        defer { line.deallocate() }
        let input = (0..<200).map { Float($0) }
        var output = [Float](repeating: 0, count: 200)
        let g = input.withUnsafeBufferPointer { src in output.withUnsafeMutableBufferPointer { dst in
            DelayLine.crossfade(line: line, mask: mask, write: 0, input: src.baseAddress!, output: dst.baseAddress!, frames: 200,
                                from: 10, to: 30, fade0: 0, increment: 0.01)
        } }
        #expect(g == 1)
        // Ramp: (1 − g)·x[n − 10] + g·x[n − 30], g = (n + 1)/100 until 1.
        for n in 30..<200 {
            let fade = min(1, Float(n + 1) * 0.01)
            #expect(abs(output[n] - ((1 - fade) * Float(n - 10) + fade * Float(n - 30))) < 1e-3, "\(n)")
        }
        #expect(output[150] == 120, "past the fade: exactly the new delay")
    }
}

// Tests, DSP: the partitioned convolution against a direct convolution computed here, without a graph.
@testable import AudioGraph
import AudioGraphTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `y[n] = Σ_k h[k]·x[n − k]` in Double, the first `frames` outputs.
func directConvolution(_ x: [Float], _ h: [Float], frames: Int) -> [Double] {
    var y = [Double](repeating: 0, count: frames)
    for n in 0..<frames {
        var s = 0.0
        for k in 0..<min(h.count, n + 1) where n - k < x.count { s += Double(h[k]) * Double(x[n - k]) }
        y[n] = s
    }
    return y
}

/// Largest error relative to the reference's peak, and RMS error relative to its RMS.
func relativeErrors(_ y: [Float], _ reference: [Double]) -> (peak: Double, rms: Double) {
    var maxError = 0.0, maxReference = 0.0, sumError = 0.0, sumReference = 0.0
    for (a, b) in zip(y, reference) {
        let e = Double(a) - b
        maxError = max(maxError, abs(e)); maxReference = max(maxReference, abs(b))
        sumError += e * e; sumReference += b * b
    }
    return (maxError / max(maxReference, 1e-300), (sumError / max(sumReference, 1e-300)).squareRoot())
}

/// A decaying noise burst: `noise · e^(−t/τ)`, τ = `frames / 5`.
func decayingNoise(frames: Int, seed: UInt64) -> [Float] {
    let n = noise(frames: frames, seed: seed)
    return (0..<frames).map { (f: Int) -> Float in
        let envelope: Double = exp(-5 * Double(f) / Double(frames))
        return n[f] * Float(envelope)
    }
}

/// Runs `convolution` over `input` (`[channel][frame]`) in pieces of the given sizes, cycled.
func run(_ convolution: PartitionedConvolution, _ input: [[Float]], pieces: [Int]) -> [[Float]] {
    let channels = convolution.channels, frames = input[0].count
    let inBuffers = (0..<channels).map { c in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
    let outBuffers = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
    defer { inBuffers.forEach { $0.deallocate() }; outBuffers.forEach { $0.deallocate() } }
    for c in 0..<channels { inBuffers[c].initialize(from: input[c], count: frames); outBuffers[c].initialize(repeating: .nan, count: frames) }
    let inPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
    let outPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
    defer { inPointers.deallocate(); outPointers.deallocate() }
    for c in 0..<channels { inPointers[c] = inBuffers[c]; outPointers[c] = outBuffers[c] }
    var done = 0, i = 0
    while done < frames {
        let n = min(pieces[i % pieces.count], frames - done)
        convolution.process(inPointers, inputChannels: channels, inputOffset: done, outPointers, outputOffset: done, frames: n)
        done += n; i += 1
    }
    return outBuffers.map { Array(UnsafeBufferPointer(start: $0, count: frames)) }
}

@Suite("Partitioned convolution (DSP)")
struct PartitionedConvolutionTests {
    /// Response lengths around the partition size and many partitions, pieces that do not align
    /// with blocks: every output against the direct convolution, within 1e-5 of its peak.
    @Test(arguments: [1, 100, 256, 257, 511, 3000, 12_345])
    func matchesDirectConvolution(responseFrames: Int) throws {
        let h = decayingNoise(frames: responseFrames, seed: UInt64(responseFrames))
        let x = noise(frames: 16_384, seed: 7)
        let convolution = try #require(PartitionedConvolution(response: [h], channels: 1, sampleRate: 48_000))
        let y = run(convolution, [x], pieces: [1, 7, 64, 255, 256, 300, 1000, 3])[0]
        let errors = relativeErrors(y, directConvolution(x, h, frames: x.count))
        print("partitioned convolution, \(responseFrames)-frame response (P = \(convolution.partitions)): peak error \(errors.peak), RMS error \(errors.rms)")
        #expect(errors.peak <= 1e-5)
        #expect(errors.rms <= 1e-5)
    }

    /// No added latency: an impulse at frame 0 gives the response itself from frame 0 on.
    @Test func impulseGivesTheResponseFromFrameZero() throws {
        let h = decayingNoise(frames: 2000, seed: 3)
        let convolution = try #require(PartitionedConvolution(response: [h], channels: 1, sampleRate: 48_000))
        var x = [Float](repeating: 0, count: 4096)
        x[0] = 1
        let y = run(convolution, [x], pieces: [256])[0]
        #expect(y[0] == h[0])  // the head: exact
        let errors = relativeErrors(Array(y[0..<2000]), h.map(Double.init))
        #expect(errors.peak <= 1e-6, "peak error \(errors.peak)")
        #expect(y[2000...].allSatisfy { abs($0) <= 1e-6 })
    }

    /// The channel matrix: mono to every channel, stereo per channel, four channels true stereo.
    @Test func channelMatrix() throws {
        let h = (0..<4).map { decayingNoise(frames: 700, seed: 100 + UInt64($0)) }
        let left = noise(frames: 3000, seed: 1), right = noise(frames: 3000, seed: 2)
        func check(_ y: [Float], _ reference: [Double]) {
            let e = relativeErrors(y, reference)
            #expect(e.peak <= 1e-5, "peak error \(e.peak)")
        }
        let mono = try #require(PartitionedConvolution(response: [h[0]], channels: 2, sampleRate: 48_000))
        var y = run(mono, [left, right], pieces: [128])
        check(y[0], directConvolution(left, h[0], frames: 3000))
        check(y[1], directConvolution(right, h[0], frames: 3000))
        let stereo = try #require(PartitionedConvolution(response: [h[0], h[1]], channels: 2, sampleRate: 48_000))
        y = run(stereo, [left, right], pieces: [128])
        check(y[0], directConvolution(left, h[0], frames: 3000))
        check(y[1], directConvolution(right, h[1], frames: 3000))
        let trueStereo = try #require(PartitionedConvolution(response: h, channels: 2, sampleRate: 48_000))
        y = run(trueStereo, [left, right], pieces: [128])
        let sum = { (a: [Double], b: [Double]) in zip(a, b).map { $0 + $1 } }
        check(y[0], sum(directConvolution(left, h[0], frames: 3000), directConvolution(right, h[2], frames: 3000)))
        check(y[1], sum(directConvolution(left, h[1], frames: 3000), directConvolution(right, h[3], frames: 3000)))
        // Stereo response on three channels: channel 2 wraps to response channel 0.
        let wrap = try #require(PartitionedConvolution(response: [h[0], h[1]], channels: 3, sampleRate: 48_000))
        y = run(wrap, [left, right, left], pieces: [100])
        check(y[2], directConvolution(left, h[0], frames: 3000))
    }

    /// A convolution primed from a running one continues its stream: its output from then on is
    /// what it would have given had it run from the start (the running one holding at least
    /// as many partitions), whatever the position within the block.
    @Test(arguments: [1000, 4096, 4100])
    func primedConvolutionContinuesTheStream(switchFrame: Int) throws {
        let x = noise(frames: 12_000, seed: 11)
        let long = decayingNoise(frames: 5000, seed: 5), short = decayingNoise(frames: 3000, seed: 6)
        let running = try #require(PartitionedConvolution(response: [long], channels: 1, sampleRate: 48_000))
        _ = run(running, [Array(x[0..<switchFrame])], pieces: [64])
        let next = try #require(PartitionedConvolution(response: [short], channels: 1, sampleRate: 48_000))
        next.prime(from: running.stream)
        let y = run(next, [Array(x[switchFrame...])], pieces: [64])[0]
        let reference = Array(directConvolution(x, short, frames: x.count)[switchFrame...])
        let errors = relativeErrors(y, reference)
        #expect(errors.peak <= 1e-5, "peak error \(errors.peak)")
    }

    /// Bad shapes make no convolution.
    @Test func refusesBadShapes() {
        #expect(PartitionedConvolution(response: [], channels: 1, sampleRate: 48_000) == nil)
        #expect(PartitionedConvolution(response: [[]], channels: 1, sampleRate: 48_000) == nil)
        #expect(PartitionedConvolution(response: [[1, 2], [1]], channels: 1, sampleRate: 48_000) == nil)
        #expect(PartitionedConvolution(response: [[1]], channels: 0, sampleRate: 48_000) == nil)
        #expect(PartitionedConvolution(response: [[1]], channels: 1, sampleRate: 48_000, blockSize: 100) == nil)
    }
}

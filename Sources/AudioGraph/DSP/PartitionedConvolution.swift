// DSP: uniformly partitioned convolution with a direct-form head — no added latency (Wefers 2015; Gardner 1995), on KissFFT.
import CKissFFT

/// One input channel convolved with one channel of the response, summed into one output channel.
/// Trivial.
struct ConvolutionPath: Equatable {
    var input: Int
    var response: Int
    var output: Int

    /// A path (explicit: render code in other files may not call an implicit initializer).
    @_noLocks @inline(__always)
    init(input: Int, response: Int, output: Int) {
        self.input = input
        self.response = response
        self.output = output
    }

    /// Which response channel reaches which output from which input, for `channels` channels
    /// and a response of `responseChannels` channels (Web Audio's ConvolverNode matrix,
    /// extended to any count):
    /// - 1 response channel: every channel convolved with it (`out[c] = in[c] ∗ h[0]`);
    /// - 4 response channels on 2 channels, "true stereo": `outL = inL ∗ h[0] + inR ∗ h[2]`,
    ///   `outR = inL ∗ h[1] + inR ∗ h[3]`;
    /// - otherwise channel by channel, wrapping: `out[c] = in[c] ∗ h[c mod K]` (a stereo
    ///   response on stereo: left with left, right with right).
    static func matrix(channels: Int, responseChannels k: Int) -> [ConvolutionPath] {
        if k == 4 && channels == 2 {
            return [ConvolutionPath(input: 0, response: 0, output: 0), ConvolutionPath(input: 1, response: 2, output: 0),
                    ConvolutionPath(input: 0, response: 1, output: 1), ConvolutionPath(input: 1, response: 3, output: 1)]
        }
        return (0..<channels).map { ConvolutionPath(input: $0, response: $0 % max(1, k), output: $0) }
    }
}

/// Where a ``PartitionedConvolution`` is in its stream. Trivial; render thread.
struct ConvolutionCursor {
    /// Frames of the current block received, 0..<blockSize.
    var position: Int
    /// The frequency-delay-line slot holding the newest input spectrum.
    var newest: Int
}

/// Convolves each channel of a stream with an impulse response, with no added latency:
/// uniformly partitioned overlap-save convolution in the frequency domain for all of the
/// response but its first block, and that first block as a direct-form FIR.
///
/// The response `h` (L frames) is cut into P = ⌈L / B⌉ blocks of B = ``blockSize`` frames.
/// - **Head** (frames 0..<B): `y[n] += Σ_{i<B} h[i]·x[n−i]`, computed sample by sample, so the
///   output starts on the input's first frame (the "direct-form head" of Gardner's zero-delay
///   scheme: W. G. Gardner, "Efficient convolution without input-output delay", JAES 43(3),
///   1995).
/// - **Tail** (blocks 1…P−1): uniformly partitioned overlap-save (UPOLS) with a frequency-domain
///   delay line, as F. Wefers describes it ("Partitioned convolution algorithms for real-time
///   auralization", Aachen 2015, §4.4): each time B input frames complete, the FFT of the last
///   2B input frames is pushed into the delay line; the output of the *next* block is then
///   `IFFT(Σ_{k=1}^{P−1} X_{m−k} · H_k)` (last B samples), where `H_k` is the 2B-point FFT of
///   response block k zero-padded, scaled by 1/2B once when prepared. Block k of the response
///   delays its contribution by kB ≥ B frames, so that result is ready before the first of
///   its frames is due: the frequency-domain part adds no latency either.
///
/// The work is uneven: frames within a block cost B multiply-adds per path (the head); the
/// frame that completes a block also costs one forward FFT per channel, (P−1)(B+1) complex
/// multiply-adds per path and one inverse FFT per output channel.
///
/// Everything — FFT plans, the response's spectra, the delay line, history and scratch — is
/// allocated when the convolution is made (a control thread); ``process(_:inputChannels:inputOffset:_:outputOffset:frames:)``
/// allocates nothing and takes no lock. Thread: make, ``prime(from:)`` and free on a control
/// thread or hand over to one render thread; process on one thread at a time.
/// SAFETY (`@unchecked Sendable`): immutable pointers after init; the stream state is touched by one thread at a time (documented).
final class PartitionedConvolution: @unchecked Sendable {
    /// B: frames per partition, a power of two (the FFTs are 2B points).
    let blockSize: Int
    /// Input and output channels.
    let channels: Int
    /// Channels of the response.
    let responseChannels: Int
    /// Frames of the response.
    let responseFrames: Int
    /// P = ⌈L / B⌉ (at least 1): the head and P − 1 frequency-domain partitions.
    let partitions: Int
    /// The rate the response was prepared for (Hz); informational for the caller.
    let sampleRate: Double

    private let fft: RealFFT
    private let bins: Int
    /// `[response channel][B]`: each head reversed (`head[i] = h[B − 1 − i]`), zero-padded.
    private let head: UnsafeMutablePointer<Float>
    /// `[response channel][P − 1][B + 1]`: the partitions' spectra, scaled by 1/2B.
    private let spectra: UnsafeMutablePointer<kiss_fft_cpx>
    private let paths: UnsafeMutablePointer<ConvolutionPath>
    private let pathCount: Int
    /// `[channel][2B]`: the previous block, then the current one as it arrives.
    private let history: UnsafeMutablePointer<Float>
    /// `[channel][P − 1][B + 1]`: the frequency-domain delay line of input spectra (a ring).
    private let delayLine: UnsafeMutablePointer<kiss_fft_cpx>
    /// `[channel][B]`: the tail partitions' output for the current block.
    private let tail: UnsafeMutablePointer<Float>
    private let accumulator: UnsafeMutablePointer<kiss_fft_cpx>
    private let scratch: UnsafeMutablePointer<Float>
    private let cursor: UnsafeMutablePointer<ConvolutionCursor>

    /// Prepares a response.
    /// - Parameters:
    ///   - response: `[response channel][frame]`, 1 or more channels of the same length ≥ 1.
    ///   - channels: input and output channels, ≥ 1.
    ///   - sampleRate: Hz, recorded in ``sampleRate``.
    ///   - blockSize: B, a power of two 16…8192 (default 256).
    /// - Returns: nil for an empty or ragged response, bad counts, or when an FFT plan cannot be made.
    /// - Thread: control thread; allocates about `8·(P−1)·(B+1)` bytes per response channel
    ///   and per channel, and does P − 1 FFTs per response channel.
    init?(response: [[Float]], channels: Int, sampleRate: Double, blockSize: Int = 256) {
        guard channels >= 1, !response.isEmpty, blockSize >= 16, blockSize <= 8192, blockSize & (blockSize - 1) == 0,
              let frames = response.first?.count, frames >= 1, response.allSatisfy({ $0.count == frames }),
              let fft = RealFFT(size: 2 * blockSize) else { return nil }
        // From here on nothing fails: deinit frees what follows.
        let b = blockSize
        self.fft = fft
        self.blockSize = b
        self.bins = b + 1
        self.channels = channels
        self.responseChannels = response.count
        self.responseFrames = frames
        self.sampleRate = sampleRate
        let p = (frames + b - 1) / b
        self.partitions = p
        let matrix = ConvolutionPath.matrix(channels: channels, responseChannels: response.count)
        pathCount = matrix.count
        paths = .allocate(capacity: matrix.count)
        paths.initialize(from: matrix, count: matrix.count)

        head = .allocate(capacity: response.count * b)
        head.initialize(repeating: 0, count: response.count * b)
        let slots = max(0, p - 1)
        spectra = .allocate(capacity: max(1, response.count * slots * bins))
        delayLine = .allocate(capacity: max(1, channels * slots * bins))
        delayLine.initialize(repeating: kiss_fft_cpx(r: 0, i: 0), count: max(1, channels * slots * bins))
        history = .allocate(capacity: channels * 2 * b)
        history.initialize(repeating: 0, count: channels * 2 * b)
        tail = .allocate(capacity: channels * b)
        tail.initialize(repeating: 0, count: channels * b)
        accumulator = .allocate(capacity: bins)
        accumulator.initialize(repeating: kiss_fft_cpx(r: 0, i: 0), count: bins)
        scratch = .allocate(capacity: 2 * b)
        scratch.initialize(repeating: 0, count: 2 * b)
        cursor = .allocate(capacity: 1)
        cursor.initialize(to: ConvolutionCursor(position: 0, newest: 0))

        let scale = 1 / Float(2 * b)
        for (k, h) in response.enumerated() {
            for i in 0..<min(b, frames) { head[k * b + (b - 1 - i)] = h[i] }
            for part in 0..<slots {
                // Response block part + 1, zero-padded to 2B and scaled, then transformed.
                scratch.update(repeating: 0, count: 2 * b)
                let start = (part + 1) * b
                for i in 0..<min(b, frames - start) { scratch[i] = h[start + i] * scale }
                fft.forward(scratch, spectra + (k * slots + part) * bins)
            }
        }
        scratch.update(repeating: 0, count: 2 * b)
    }

    deinit {
        fft.destroy()
        paths.deallocate()
        head.deallocate()
        spectra.deallocate()
        delayLine.deallocate()
        history.deallocate()
        tail.deallocate()
        accumulator.deallocate()
        scratch.deallocate()
        cursor.deallocate()
    }

    /// Where this convolution's input stream is kept, for another one to continue from it
    /// (``prime(from:)``). Trivial.
    struct Stream {
        var blockSize: Int, channels: Int, partitions: Int, bins: Int
        var history: UnsafeMutablePointer<Float>
        var delayLine: UnsafeMutablePointer<kiss_fft_cpx>
        var cursor: UnsafeMutablePointer<ConvolutionCursor>

        /// A stream (explicit: render code in other files may not call an implicit initializer).
        @_noLocks @inline(__always)
        init(blockSize: Int, channels: Int, partitions: Int, bins: Int, history: UnsafeMutablePointer<Float>,
             delayLine: UnsafeMutablePointer<kiss_fft_cpx>, cursor: UnsafeMutablePointer<ConvolutionCursor>) {
            self.blockSize = blockSize; self.channels = channels; self.partitions = partitions; self.bins = bins
            self.history = history; self.delayLine = delayLine; self.cursor = cursor
        }
    }

    /// This convolution's input stream. Render thread (or whichever processes it).
    var stream: Stream {
        @_noLocks get {
            Stream(blockSize: blockSize, channels: channels, partitions: partitions, bins: bins,
                   history: history, delayLine: delayLine, cursor: cursor)
        }
    }

    /// Starts this (fresh) convolution where `other` is in its stream, so it can take over
    /// without a gap: the input history and position are copied, and the newest
    /// `min(P, P_other) − 1` input spectra of its delay line (input older than that, which
    /// `other` no longer holds, is treated as silence); the current block's tail is then
    /// computed with this response. Costs about one block's frequency-domain work.
    /// - Parameter other: the ``stream`` of a convolution with the same ``blockSize`` and
    ///   ``channels``; nothing happens otherwise.
    /// - Thread: the thread that processes `other` (the render thread), before this one
    ///   processes anything; real-time safe.
    @_noLocks
    func prime(from other: Stream) {
        guard other.blockSize == blockSize, other.channels == channels else { return }
        let b = blockSize
        copy(other.history, to: history, frames: channels * 2 * b)
        let position = other.cursor.pointee.position
        let mySlots = partitions - 1, theirSlots = other.partitions - 1
        let kept = min(mySlots, theirSlots)
        var newest = 0
        if kept > 0 {
            for c in 0..<channels {
                var source = other.cursor.pointee.newest
                for k in 0..<kept {
                    // Newest first: theirs at `source`, going back; ours from slot kept − 1 down.
                    let from = other.delayLine + (c * theirSlots + source) * bins
                    let to = delayLine + (c * mySlots + (kept - 1 - k)) * bins
                    UnsafeMutableRawPointer(to).copyMemory(from: from, byteCount: bins &* MemoryLayout<kiss_fft_cpx>.stride)
                    source = source == 0 ? theirSlots - 1 : source - 1
                }
            }
            newest = kept - 1
        }
        cursor.pointee = ConvolutionCursor(position: position, newest: newest)
        if mySlots > 0 { computeTail() }
    }

    /// Convolves `frames` frames: `output[c][outputOffset + f]` = the convolution at that frame
    /// (wet only), reading `input[c][inputOffset + f]`, or silence for a channel the input does
    /// not have (or no input at all).
    /// - Parameters:
    ///   - input: `[channel]` pointers, or nil for silence.
    ///   - inputChannels: channels `input` has.
    ///   - output: ``channels`` pointers; not the same memory as `input`.
    ///   - frames: any count ≥ 0 (pieces need not align with blocks).
    /// - Thread: one thread at a time; real-time safe.
    @_noLocks
    func process(_ input: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, inputChannels: Int, inputOffset: Int,
                 _ output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, outputOffset: Int, frames: Int) {
        let b = blockSize
        var done = 0
        while done < frames {
            let t = cursor.pointee.position
            let n = min(frames - done, b - t)
            for c in 0..<channels {
                let slot = history + c * 2 * b + b + t
                if let input, c < inputChannels {
                    copy(input[c] + inputOffset + done, to: slot, frames: n)
                    // A NaN or Inf in the history would reach every partition's spectrum and
                    // last the response's whole length: kept out as silence.
                    _ = NonFinite.scrub(slot, frames: n)
                } else {
                    slot.update(repeating: 0, count: n)
                }
            }
            for c in 0..<channels {
                let out = output[c] + outputOffset + done
                copy(tail + c * b + t, to: out, frames: n)
                for p in 0..<pathCount where paths[p].output == c {
                    ConvolutionLoops.head(head + paths[p].response * b, history: history + paths[p].input * 2 * b,
                              from: t, frames: n, blockSize: b, into: out)
                }
            }
            if t + n == b {
                completeBlock()
            } else {
                cursor.pointee.position = t + n
            }
            done += n
        }
    }

    /// A block is complete: its 2B-frame window goes into the delay line, the next block's tail
    /// is computed, and the history moves on by B.
    @_noLocks
    private func completeBlock() {
        let b = blockSize, slots = partitions - 1
        if slots > 0 {
            let newest = cursor.pointee.newest + 1 == slots ? 0 : cursor.pointee.newest + 1
            cursor.pointee.newest = newest
            for c in 0..<channels {
                fft.forward(history + c * 2 * b, delayLine + (c * slots + newest) * bins)
            }
            computeTail()
        }
        for c in 0..<channels {
            let h = history + c * 2 * b
            copy(h + b, to: h, frames: b)
        }
        cursor.pointee.position = 0
    }

    /// `tail[c]` = the last B samples of `IFFT(Σ_paths Σ_{k=1}^{P−1} X[newest − (k − 1)] · H_k)`.
    @_noLocks
    private func computeTail() {
        let b = blockSize, slots = partitions - 1, n = bins
        for c in 0..<channels {
            accumulator.update(repeating: kiss_fft_cpx(r: 0, i: 0), count: n)
            var any = false
            for p in 0..<pathCount where paths[p].output == c {
                any = true
                let x = delayLine + paths[p].input * slots * n
                let h = spectra + paths[p].response * slots * n
                var slot = cursor.pointee.newest
                for k in 0..<slots {
                    ConvolutionLoops.multiplyAdd(x + slot * n, h + k * n, into: accumulator, count: n)
                    slot = slot == 0 ? slots - 1 : slot - 1
                }
            }
            if any {
                fft.inverse(accumulator, scratch)
                copy(scratch + b, to: tail + c * b, frames: b)
            } else {
                (tail + c * b).update(repeating: 0, count: b)
            }
        }
    }

    /// Clears the stream: silence in the history, the delay line and the tail. Control thread,
    /// while no thread processes.
    func reset() {
        history.update(repeating: 0, count: channels * 2 * blockSize)
        delayLine.update(repeating: kiss_fft_cpx(r: 0, i: 0), count: max(1, channels * (partitions - 1) * bins))
        tail.update(repeating: 0, count: channels * blockSize)
        cursor.pointee = ConvolutionCursor(position: 0, newest: 0)
    }
}

/// The inner loops of ``PartitionedConvolution``: the direct-form head and the complex
/// multiply-add of the frequency-domain partitions. Render thread.
enum ConvolutionLoops {
    /// The direct-form head over frames `from..<from + frames` of the current block:
    /// `out[j] += Σ_{i<B} reversed[i]·x[from + j + 1 + i]`, where `x` is the 2B-frame history
    /// (frame `B + from + j` is the current sample). Eight lanes, two accumulators.
    @_noLocks @inline(__always)
    static func head(_ reversed: UnsafeMutablePointer<Float>, history: UnsafeMutablePointer<Float>, from t: Int, frames: Int,
                     blockSize b: Int, into out: UnsafeMutablePointer<Float>) {
        let taps = UnsafeRawPointer(reversed)
        for j in 0..<frames {
            let window = UnsafeRawPointer(history + (t + j + 1))
            var a0 = SIMD8<Float>(), a1 = SIMD8<Float>()
            var i = 0
            while i < b {
                let byte = i &* 4
                a0 += window.loadUnaligned(fromByteOffset: byte, as: SIMD8<Float>.self)
                    * taps.loadUnaligned(fromByteOffset: byte, as: SIMD8<Float>.self)
                a1 += window.loadUnaligned(fromByteOffset: byte &+ 32, as: SIMD8<Float>.self)
                    * taps.loadUnaligned(fromByteOffset: byte &+ 32, as: SIMD8<Float>.self)
                i &+= 16
            }
            out[j] += (a0 + a1).sum()
        }
    }

    /// `acc[k] += x[k] · h[k]` (complex) for `k` in `0..<count`.
    @_noLocks @inline(__always)
    static func multiplyAdd(_ x: UnsafeMutablePointer<kiss_fft_cpx>, _ h: UnsafeMutablePointer<kiss_fft_cpx>,
                            into acc: UnsafeMutablePointer<kiss_fft_cpx>, count: Int) {
        // As floats (r, i pairs): the loop the compiler vectorizes.
        let xf = UnsafeMutableRawPointer(x).assumingMemoryBound(to: Float.self)
        let hf = UnsafeMutableRawPointer(h).assumingMemoryBound(to: Float.self)
        let af = UnsafeMutableRawPointer(acc).assumingMemoryBound(to: Float.self)
        for k in 0..<count {
            let xr = xf[2 &* k], xi = xf[2 &* k &+ 1]
            let hr = hf[2 &* k], hi = hf[2 &* k &+ 1]
            af[2 &* k] += xr * hr - xi * hi
            af[2 &* k &+ 1] += xr * hi + xi * hr
        }
    }
}

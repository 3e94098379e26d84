// Formats: the libsamplerate resampler used on connections across rates and by AudioConverter.
import CSampleRate
#if canImport(Glibc)
import Glibc
#endif

/// A libsamplerate converter with its interleaving scratch: `channels` planar streams in, planar
/// out, state kept across calls. Quality: `SRC_SINC_MEDIUM_QUALITY` (band-limited sinc,
/// 97 dB SNR, 90 % of the band passed — libsamplerate's documentation). Built on a control thread;
/// ``process`` is real-time safe (`src_process` works in memory `src_new` allocated).
struct Resampler {
    let state: OpaquePointer
    let channels: Int
    /// Output rate / input rate.
    let ratio: Double
    let maxInput: Int
    let maxOutput: Int
    let interleavedIn: UnsafeMutablePointer<Float>
    let interleavedOut: UnsafeMutablePointer<Float>

    /// Output frames one call may produce for `maxInput` input frames (with slack for the
    /// converter's internal buffering).
    static func outputCapacity(forInput frames: Int, ratio: Double) -> Int {
        Int((Double(frames) * ratio).rounded(.up)) + 64
    }

    /// Creates the converter. Allocates; control thread. Returns nil if libsamplerate refuses
    /// the ratio (it accepts 1/256…256).
    static func make(channels: Int, from inputRate: Double, to outputRate: Double, maxInput: Int) -> Resampler? {
        let ratio = outputRate / inputRate
        guard src_is_valid_ratio(ratio) != 0 else { return nil }
        var error: Int32 = 0
        guard let state = src_new(Int32(SRC_SINC_MEDIUM_QUALITY), Int32(channels), &error) else { return nil }
        let maxOutput = outputCapacity(forInput: maxInput, ratio: ratio)
        let inBuf = UnsafeMutablePointer<Float>.allocate(capacity: max(1, maxInput * channels))
        let outBuf = UnsafeMutablePointer<Float>.allocate(capacity: max(1, maxOutput * channels))
        inBuf.initialize(repeating: 0, count: max(1, maxInput * channels))
        outBuf.initialize(repeating: 0, count: max(1, maxOutput * channels))
        return Resampler(state: state, channels: channels, ratio: ratio, maxInput: maxInput, maxOutput: maxOutput,
                         interleavedIn: inBuf, interleavedOut: outBuf)
    }

    /// Frees the converter. Control thread.
    func destroy() {
        src_delete(state)
        interleavedIn.deallocate()
        interleavedOut.deallocate()
    }

    /// Clears the filter history. Real-time safe.
    @_noLocks
    func reset() { RealTime.srcReset(state) }

    /// Resamples `frames` (≤ `maxInput`) planar input frames, appending the output to `dst` at
    /// frame `dstOffset` (room for `maxOutput` frames needed). Returns the frames produced, which
    /// vary from call to call around `frames × ratio` (libsamplerate buffers internally).
    /// `endOfInput` drains the tail (then ``reset()`` before reuse).
    @_noLocks
    func process(_ src: ChannelPointers, frames: Int, into dst: ChannelPointers, at dstOffset: Int,
                 endOfInput: Bool = false) -> Int {
        let ch = channels
        for c in 0..<ch {
            let s = src[c]
            for i in 0..<frames { interleavedIn[i &* ch &+ c] = s[i] }
        }
        var used = 0, produced = 0
        repeat {
            var data = SRC_DATA(data_in: interleavedIn + used &* ch, data_out: interleavedOut + produced &* ch,
                                input_frames: frames - used, output_frames: maxOutput - produced,
                                input_frames_used: 0, output_frames_gen: 0,
                                end_of_input: endOfInput ? 1 : 0, src_ratio: ratio)
            let status = RealTime.srcProcess(state, &data)
            used += data.input_frames_used
            produced += data.output_frames_gen
            if status != 0 || (data.input_frames_used == 0 && data.output_frames_gen == 0) { break }
        } while (used < frames || endOfInput) && produced < maxOutput
        for c in 0..<ch {
            let d = dst[c] + dstOffset
            for i in 0..<produced { d[i] = interleavedOut[i &* ch &+ c] }
        }
        return produced
    }
}

// graphbench: the time-pitch unit (rate 1, pitch 0) against SoundTouch and libsamplerate called directly, as the unit calls them, without the engine.
import AudioGraph
import CSampleRate
import CSoundTouch

extension KernelBench {
    /// AUNewTimePitch's analogue at rate 1 and pitch 0 cents (it still runs WSOLA and the
    /// resampler at ratio 1) against the same two libraries called directly per slice:
    /// interleave, `putSamples`, `receiveSamples`, `src_process` (SRC_SINC_MEDIUM_QUALITY, ratio
    /// 1), de-interleave. Not bit-identical: the unit right-aligns its start-up output and
    /// keeps a FIFO between the two libraries; the arithmetic per frame is the same.
    static var timePitch: [KernelBench] {
        [KernelBench(
            name: "time-pitch rate 1, pitch 0 (SoundTouch + libsamplerate)",
            makeGraph: { try graph(with: TimePitchUnit()) },
            reference: { input, output, slice, total in
                let channels = input.channels
                guard let st = csoundtouch_create(UInt32(channels), 48_000) else { return .nan }
                defer { csoundtouch_destroy(st) }
                _ = csoundtouch_set_setting(st, Int32(CSOUNDTOUCH_SETTING_OVERLAP_MS), 8)
                var error: Int32 = 0
                guard let src = src_new(Int32(SRC_SINC_MEDIUM_QUALITY), Int32(channels), &error) else { return .nan }
                defer { src_delete(src) }
                let interleaved = UnsafeMutablePointer<Float>.allocate(capacity: slice * channels)
                let stretched = UnsafeMutablePointer<Float>.allocate(capacity: 8 * slice * channels)
                let resampled = UnsafeMutablePointer<Float>.allocate(capacity: slice * channels)
                defer { interleaved.deallocate(); stretched.deallocate(); resampled.deallocate() }
                return cycled(input, output, slice: slice, total: total) { i, o, frames in
                    let n = Int(frames)
                    for c in 0..<channels { for f in 0..<n { interleaved[f * channels + c] = i[c]![f] } }
                    csoundtouch_put_samples(st, interleaved, UInt32(n))
                    let got = Int(csoundtouch_receive_samples(st, stretched, UInt32(8 * slice)))
                    var data = SRC_DATA(data_in: UnsafePointer(stretched), data_out: resampled,
                                        input_frames: got, output_frames: n,
                                        input_frames_used: 0, output_frames_gen: 0, end_of_input: 0, src_ratio: 1)
                    _ = src_process(src, &data)
                    let made = data.output_frames_gen
                    for c in 0..<channels {
                        for f in 0..<made { o[c]![f] = resampled[f * channels + c] }
                        for f in made..<n { o[c]![f] = 0 }
                    }
                }
            },
            bitIdentical: false)]
    }
}

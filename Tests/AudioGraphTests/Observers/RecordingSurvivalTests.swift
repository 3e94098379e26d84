// Tests, Observers: recordings that survive — clipping counted, a stalled writer's gaps located, RF64 past 4 GiB.
import CSndFile
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Recordings that survive clipping, stalls and 4 GiB")
struct RecordingSurvivalTests {
    /// A +6 dB sum — a 0.9-amplitude sine through a mixer input at gain 2, peaks at 1.8 — into
    /// integer files: every sample reads back clamped to ±1 (within one step of the format's
    /// grid), and the count is exactly the samples of the rendered signal beyond ±1. Float32
    /// WAV keeps the same samples as they are and counts none.
    @Test(arguments: [(RecordingSettings.FileType.flac, RecordingSettings.SampleFormat.int24, 24),
                      (.flac, .int16, 16), (.wav, .int16, 16), (.wav, .float32, 0)])
    func samplesBeyondFullScaleAreClippedAndCounted(fileType: RecordingSettings.FileType,
                                                   sampleFormat: RecordingSettings.SampleFormat, bits: Int) throws {
        let mixer = MultichannelMixerUnit(inputs: 1)
        let chain = try Chain([mixer], channels: 2)
        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 2, scope: .input, element: 0)
        let path = temporaryPath("clip-\(sampleFormat).\(fileType)")
        defer { unlink(path) }
        let recorder = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path,
                                    settings: RecordingSettings(fileType: fileType, sampleFormat: sampleFormat))
        let tone = sine(frequency: 997, frames: 48_000, amplitude: 0.9)
        let output = try chain.render([tone, tone], slice: 256)
        try recorder.stop()

        let over = output.reduce(0) { $0 + $1.filter { $0 > 1 || $0 < -1 }.count }
        // Sanity on the signal itself: |1.8 sin| > 1 for 1 − (2/π)·asin(1/1.8) ≈ 62.5 % of samples.
        #expect(Double(over) / Double(2 * tone.count) > 0.6, "the sum is +6 dB: \(over) samples beyond ±1")
        let file = try #require(readAudioFile(path))
        #expect(file.info.frames == 48_000 && recorder.framesWritten == 48_000)
        if bits == 0 {
            #expect(recorder.clippedSampleCount == 0, "float WAV clips nothing")
            #expect(file.channels == output, "float WAV keeps samples beyond ±1 bit for bit")
            #expect(file.channels[0].max()! > 1.7)
        } else {
            #expect(recorder.clippedSampleCount == UInt64(over), "counted \(recorder.clippedSampleCount), the signal has \(over)")
            let step = 1 / Float(1 << (bits - 1))
            for c in 0..<2 {
                #expect(file.channels[c].allSatisfy { $0 >= -1 && $0 <= 1 }, "read back within ±1")
                let worst = zip(file.channels[c], output[c]).map { abs($0 - min(max($1, -1), 1)) }.max()!
                #expect(worst <= step, "channel \(c): the file is the clamped signal, worst \(worst)")
            }
        }
    }

    /// The ring's duration is a setting, bounded 0.1…60 s: outside that, or not finite, a
    /// typed error at the call, and nothing is created.
    @Test(arguments: [0.0, 0.05, 61, -1, .nan, .infinity])
    func aBufferDurationOutOfBoundsIsRefused(seconds: Double) throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let path = temporaryPath("bad-buffer-\(seconds).wav")
        #expect {
            _ = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path,
                             settings: RecordingSettings(bufferDuration: seconds))
        } throws: { error in
            guard let error = error as? RecorderError, case .unsupportedSettings(let why) = error else { return false }
            return why.contains("buffer duration")
        }
        #expect(access(path, F_OK) != 0, "nothing created")
        #expect(throws: RecorderError.self) { try RecordingSettings(bufferDuration: seconds).check(sampleRate: 48_000, channels: 2) }
        // The bounds themselves are accepted.
        try RecordingSettings(bufferDuration: 0.1).check(sampleRate: 48_000, channels: 2)
        try RecordingSettings(bufferDuration: 60).check(sampleRate: 48_000, channels: 2)
    }

    /// A writer stalled for 1 s behind a 0.1 s ring while 2 s are rendered offline: frames are
    /// dropped, and every gap is located — the file is the rendered output with exactly the
    /// listed spans cut out, each at its file frame, and the audio after the stall is there.
    @Test func aStalledWriterDropsFramesAndSaysWhere() throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let path = temporaryPath("stall.wav")
        defer { unlink(path) }
        let recorder = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path,
                                    settings: RecordingSettings(bufferDuration: 0.1))
        recorder.stallWriterForTesting(seconds: 1)
        let input = [noise(frames: 96_000, seed: 41), noise(frames: 96_000, seed: 42)]
        let output = try chain.render(input, slice: 256)  // far faster than the stall
        usleep(1_300_000)                                  // the writer wakes and catches up
        // After the stall, at a pace the writer keeps up with (the 0.1 s ring is 4800 frames).
        let after = [noise(frames: 24_000, seed: 43), noise(frames: 24_000, seed: 44)]
        var tail: [[Float]] = [[], []]
        for start in stride(from: 0, to: 24_000, by: 2_000) {
            let piece = try chain.render(after.map { Array($0[start..<(start + 2_000)]) }, slice: 256)
            for c in 0..<2 { tail[c] += piece[c] }
            usleep(50_000)
        }
        try recorder.stop()

        let rendered = zip(output, tail).map { $0 + $1 }
        let gaps = recorder.gaps
        #expect(recorder.framesDropped > 0 && !gaps.isEmpty, "the stall outlasted the ring")
        #expect(gaps.count == recorder.gapCount)
        #expect(gaps.reduce(0) { $0 + $1.frameCount } == recorder.framesDropped, "every dropped frame is in a gap: \(gaps)")
        #expect(recorder.framesWritten + recorder.framesDropped == UInt64(rendered[0].count))
        // The file is the rendering with the gaps cut out, each at its file frame.
        var expected: [[Float]] = [[], []]
        var next = 0
        for gap in gaps {
            let start = Int(gap.sampleTime)
            #expect(Double(start) == gap.sampleTime && start >= next)
            for c in 0..<2 { expected[c] += rendered[c][next..<start] }
            #expect(gap.fileFrame == UInt64(expected[0].count), "\(gap): the file's frame where the gap sits")
            next = start + Int(gap.frameCount)
        }
        for c in 0..<2 { expected[c] += rendered[c][next...] }
        let file = try #require(readAudioFile(path))
        #expect(file.channels == expected, "the file holds every frame not in a gap, in order")
        #expect(exactOccurrence(of: after[0], in: file.channels[0]) != nil, "recording resumed after the stall")
    }

    /// A WAV recording past 4 GiB: silence, 8 channels of Float32 at 192 kHz, through the
    /// recorder's own file creation (RF64 with automatic downgrade, header rewritten on every
    /// write) and writer thread code, in 4096-frame blocks as the tap delivers them. The file
    /// turns to RF64 and libsndfile reads back every frame, the last ones past 4 GiB too.
    /// (The whole offline path — render, tap ring, conversion — took 84 s for these 4.3 GB in a
    /// debug build, too slow for a test; the render side is covered by the tests above.)
    /// Skipped where /tmp lacks 5 GiB.
    @Test(.enabled(if: RecordingSurvivalTests.freeBytes("/tmp") >= 5 << 30,
                   "needs 5 GiB free in /tmp for a recording past 4 GiB"))
    func aWAVRecordingPast4GiBBecomesRF64AndReadsBackWhole() throws {
        let channels = 8, rate = 192_000.0, blockFrames = 4096
        let folder = "/tmp/audiograph-rf64-\(getpid())"
        mkdir(folder, 0o700)
        let path = folder + "/big.wav"
        defer { unlink(path); rmdir(folder) }
        let settings = RecordingSettings(fileType: .wav, sampleFormat: .float32)
        var info = try settings.checked(sampleRate: rate, channels: channels)
        let file = try Recorder.createFile(path: path, info: &info, settings: settings)
        let writer = RecordingWriter(file: file, path: path, channels: channels, sampleFormat: .float32, frameLimit: .max)
        // Just past 4 GiB of samples: 2^27 frames × 8 channels × 4 bytes is 4 GiB exactly.
        let total = (1 << 27) + 40 * blockFrames
        let format = try StreamFormat.float32(sampleRate: rate, channels: UInt32(channels), interleaved: true)
        let silence = [UInt8](repeating: 0, count: blockFrames * channels * 4)
        let started = monotonicSeconds()
        var time = 0.0
        for _ in 0..<(total / blockFrames) {
            writer.write(AudioTapBlock(format: format, frameCount: blockFrames, sampleTime: time, framesDroppedBefore: 0, buffers: [silence]))
            time += Double(blockFrames)
        }
        writer.close()
        let elapsed = monotonicSeconds() - started
        print("RF64: \(total) frames × \(channels) ch Float32 (\(total * channels * 4) bytes) written in \(elapsed) s")
        #expect(writer.written.load(ordering: .relaxed) == UInt64(total) && writer.lost.load(ordering: .relaxed) == 0)
        #expect(writer.failure.withLock { $0 } == nil)

        var st = stat()
        #expect(stat(path, &st) == 0 && Int(st.st_size) > 1 << 32, "past 4 GiB: \(st.st_size) bytes")
        let fd = open(path, O_RDONLY)
        var magic = [UInt8](repeating: 0, count: 4)
        #expect(read(fd, &magic, 4) == 4)
        close(fd)
        #expect(String(decoding: magic, as: UTF8.self) == "RF64")
        var readInfo = SF_INFO()
        let reader = try #require(sf_open(path, Int32(SFM_READ), &readInfo), "libsndfile opens the file")
        defer { sf_close(reader) }
        #expect(readInfo.frames == sf_count_t(total), "read \(readInfo.frames) frames")
        #expect(readInfo.channels == Int32(channels) && readInfo.samplerate == Int32(rate))
        #expect(readInfo.format == Int32(SF_FORMAT_RF64 | SF_FORMAT_FLOAT), "format 0x\(String(readInfo.format, radix: 16))")
        // The last frames, past 4 GiB, are there and silent.
        #expect(sf_seek(reader, sf_count_t(total - 4096), SEEK_SET) == sf_count_t(total - 4096))
        var last = [Float](repeating: 1, count: 4096 * channels)
        #expect(sf_readf_float(reader, &last, 4096) == 4096 && last.allSatisfy { $0 == 0 })
    }

    /// A WAV recording under 4 GiB is a plain RIFF WAVE file (RF64's automatic downgrade).
    @Test func aSmallWAVRecordingStaysRIFF() throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let path = temporaryPath("small.wav")
        defer { unlink(path) }
        let recorder = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path)
        _ = try chain.render([noise(frames: 10_000, seed: 5)], slice: 256)
        try recorder.stop()
        let fd = open(path, O_RDONLY)
        var magic = [UInt8](repeating: 0, count: 12)
        #expect(read(fd, &magic, 12) == 12)
        close(fd)
        #expect(String(decoding: magic[0..<4], as: UTF8.self) == "RIFF" && String(decoding: magic[8..<12], as: UTF8.self) == "WAVE")
        #expect(readAudioFile(path)?.info.frames == 10_000)
    }

    static func freeBytes(_ path: String) -> UInt64 {
        var fs = statvfs()
        guard statvfs(path, &fs) == 0 else { return 0 }
        return UInt64(fs.f_bavail) * UInt64(fs.f_frsize)
    }
}

private func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

// Tests, Observers: recording through the offline renderer.
import CSndFile
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif


func temporaryPath(_ name: String) -> String {
    "/tmp/audiograph-test-\(getpid())-\(name)"
}

@Suite("Recording through the offline renderer")
struct RecorderTests {
    /// Float32 WAV keeps every sample; 16- and 24-bit keep every sample that is already on their grid.
    @Test(arguments: [(RecordingSettings.FileType.wav, RecordingSettings.SampleFormat.float32, 0),
                      (.wav, .int16, 16), (.wav, .int24, 24), (.flac, .int16, 16), (.flac, .int24, 24)])
    func recordingMatchesTheRenderedOutput(fileType: RecordingSettings.FileType, sampleFormat: RecordingSettings.SampleFormat, bits: Int) throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let path = temporaryPath("rec-\(sampleFormat).\(fileType)")
        defer { unlink(path) }
        // On the format's grid (bits 0: any float), within −1…1 − 1 LSB.
        func quantized(_ x: [Float]) -> [Float] {
            bits == 0 ? x : x.map { (($0 * 0.999) * Float(1 << (bits - 1))).rounded() / Float(1 << (bits - 1)) }
        }
        let input = [quantized(noise(frames: 30_000, seed: 11)), quantized(noise(frames: 30_000, seed: 12))]
        let recorder = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path,
                                    settings: RecordingSettings(fileType: fileType, sampleFormat: sampleFormat))
        let output = try chain.render(input, slice: 256)
        try recorder.stop()
        #expect(recorder.framesWritten == 30_000 && recorder.framesDropped == 0)
        let file = try #require(readAudioFile(path))
        #expect(file.info.samplerate == 48_000 && file.info.channels == 2 && file.info.frames == 30_000)
        #expect(file.channels == output, "every sample recorded exactly")
        try recorder.stop()  // twice: nothing happens
    }

    /// At another rate and channel count: the file holds the node's output run through one
    /// AudioConverter, as a 16-bit file stores it.
    @Test func recordingAt16kHzMonoInt16() throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let path = temporaryPath("rec-16k.wav")
        defer { unlink(path) }
        let recorder = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path,
                                    settings: RecordingSettings(fileType: .wav, sampleFormat: .int16, sampleRate: 16_000, channels: 1))
        #expect(recorder.settings.sampleRate == 16_000 && recorder.settings.channels == 1)
        let input = [sine(frequency: 300, frames: 48_000, amplitude: 0.5), sine(frequency: 700, frames: 48_000, amplitude: 0.3)]
        let output = try chain.render(input, slice: 256)
        try recorder.stop()
        let file = try #require(readAudioFile(path))
        #expect(file.info.samplerate == 16_000 && file.info.channels == 1)
        let converter = try AudioConverter(from: try .float32(sampleRate: 48_000, channels: 2),
                                           to: try .float32(sampleRate: 16_000, channels: 1, interleaved: true))
        let expected = try runConverter(converter, output, chunk: 4096)[0].map { (($0 * 32768).rounded()) / 32768 }
        #expect(file.channels[0] == expected)
        #expect(Int(recorder.framesWritten) == expected.count)
    }

    /// A frame limit: the file holds exactly that many frames — the start of what the node
    /// rendered, cut inside a 4096-frame block — and nothing after them counts as dropped.
    @Test(arguments: [RecordingSettings.SampleFormat.float32, .int16])
    func aFrameLimitRecordsExactlyThatManyFrames(sampleFormat: RecordingSettings.SampleFormat) throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let path = temporaryPath("rec-limit-\(sampleFormat).wav")
        defer { unlink(path) }
        let recorder = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path,
                                    settings: RecordingSettings(sampleFormat: sampleFormat, frameLimit: 10_000))
        let quantum: Float = sampleFormat == .int16 ? 32768 : 16_777_216
        let input = [noise(frames: 30_000, seed: 21), noise(frames: 30_000, seed: 22)].map { $0.map { ($0 * 0.999 * quantum).rounded() / quantum } }
        let output = try chain.render(input, slice: 256)
        try recorder.stop()
        #expect(recorder.isComplete)
        #expect(recorder.framesWritten == 10_000 && recorder.framesDropped == 0)
        let file = try #require(readAudioFile(path))
        #expect(file.info.frames == 10_000)
        let firstFrames = file.channels == output.map { Array($0[0..<10_000]) }
        #expect(firstFrames, "the file holds the first 10000 frames rendered, exactly")

        // A limit not reached yet: not complete, everything rendered is in the file.
        let longer = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path, settings: RecordingSettings(frameLimit: 48_000))
        _ = try chain.render(input, slice: 256)
        try longer.stop()
        #expect(!longer.isComplete && longer.framesWritten == 30_000)
        // Without a limit it never is.
        let unlimited = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path)
        _ = try chain.render(input, slice: 256)
        try unlimited.stop()
        #expect(!unlimited.isComplete && unlimited.framesWritten == 30_000)
    }

    @Test func badSettingsAndPathsThrowAtTheCall() throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let node = chain.nodes[0]
        func error(_ path: String, _ settings: RecordingSettings? = nil, node: AUNode? = nil) -> RecorderError? {
            do { _ = try Recorder(graph: chain.graph, node: node ?? chain.nodes[0], path: path, settings: settings); return nil }
            catch { return error }
        }
        #expect(error(temporaryPath("x.flac"), RecordingSettings(fileType: .flac, sampleFormat: .float32)).map {
            if case .unsupportedSettings = $0 { true } else { false } } == true, "FLAC holds integers only")
        #expect(error(temporaryPath("x.m4a")).map { if case .unsupportedSettings = $0 { true } else { false } } == true)
        #expect(error(temporaryPath("x.wav"), RecordingSettings(channels: 0)).map { if case .unsupportedSettings = $0 { true } else { false } } == true)
        #expect(error(temporaryPath("x.wav"), RecordingSettings(sampleRate: .nan)).map { if case .unsupportedSettings = $0 { true } else { false } } == true)
        #expect(error(temporaryPath("x.wav"), RecordingSettings(frameLimit: 0)).map { if case .unsupportedSettings = $0 { true } else { false } } == true,
                "a limit of 0 frames records nothing: refused")
        let missing = error("/nonexistent-dir/x.wav")
        #expect(missing.map { if case .cannotCreate(let path, _) = $0 { path == "/nonexistent-dir/x.wav" } else { false } } == true, "\(String(describing: missing))")
        #expect(error(temporaryPath("y.wav"), node: AUNode(rawValue: 77)) == .audioUnit(.nodeNotFound))
        #expect(access(temporaryPath("y.wav"), F_OK) != 0, "nothing left behind")
        // Nothing above disturbed the graph: it still renders its input exactly.
        let input = [noise(frames: 1000, seed: 1), noise(frames: 1000, seed: 2)]
        #expect(try chain.render(input) == input)
        _ = node
    }
}

@Suite("Recording to a full disk")
struct RecorderDiskFullTests {
    /// /dev/full answers every write with ENOSPC, as a full disk does: libsndfile fails writing
    /// the header, so the error comes at the call, with the system's reason, and the graph
    /// renders on untouched. (A disk that fills up later gives `writeFailed` at `stop()`.)
    @Test func diskFullIsATypedErrorAtTheCallAndAudioKeepsFlowing() throws {
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let input = [noise(frames: 20_000, seed: 31), noise(frames: 20_000, seed: 32)]
        do {
            _ = try Recorder(graph: chain.graph, node: chain.nodes[0], path: "/dev/full",
                             settings: RecordingSettings(fileType: .wav, sampleFormat: .float32))
            Issue.record("recording to /dev/full started")
        } catch {
            guard case .cannotCreate(let path, let reason) = error else { Issue.record("\(error)"); return }
            #expect(path == "/dev/full" && reason.contains("No space left on device"), "\(reason)")
        }
        #expect(try chain.render(input) == input, "the graph renders on, untouched")
    }
}

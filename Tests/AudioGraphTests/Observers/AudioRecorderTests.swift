// Tests, Observers: AudioRecorder (the AVAudioRecorder analogue) through the offline renderer — record, pause and resume, a duration, stop, delete, and metering.
import Foundation
import Synchronization
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("AudioRecorder: AVAudioRecorder's calls on a graph")
struct AudioRecorderTests {
    /// A mono ramp whose every frame is distinct: frame i holds i / 2^20.
    static func ramp(_ range: Range<Int>) -> [[Float]] { [range.map { Float($0) / Float(1 << 20) }] }

    @Test func pauseAndResumeLeaveOnlyTheRecordedFramesAndNoGap() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let path = temporaryPath("avrec-pause.wav")
        defer { unlink(path) }
        let recorder = try AudioRecorder(path: path, graph: chain.graph, node: chain.nodes[0], element: 0)
        let finished = Atomic<Int>(0)
        recorder.onFinish = { ok in finished.store(ok ? 1 : -1, ordering: .relaxed) }
        #expect(recorder.prepareToRecord() && !recorder.isRecording && FileManager.default.fileExists(atPath: path))
        _ = try chain.render(AudioRecorderTests.ramp(0..<4800))          // prepared, not recording: not in the file
        #expect(recorder.record() && recorder.isRecording)
        _ = try chain.render(AudioRecorderTests.ramp(4800..<9600))       // recorded
        recorder.pause()
        #expect(!recorder.isRecording)
        _ = try chain.render(AudioRecorderTests.ramp(9600..<14_400))     // paused: not in the file
        #expect(recorder.record())
        _ = try chain.render(AudioRecorderTests.ramp(14_400..<19_200))   // recorded again, right after the first part
        recorder.stop()
        #expect(finished.load(ordering: .relaxed) == 1 && !recorder.isRecording)
        let file = try #require(readAudioFile(path))
        let expected = AudioRecorderTests.ramp(4800..<9600)[0] + AudioRecorderTests.ramp(14_400..<19_200)[0]
        #expect(file.channels[0] == expected, "exactly the recorded frames, in order, no gap: \(file.channels[0].count) frames")
        #expect(recorder.currentTime == 0.2, "\(recorder.currentTime) s")
        // record() after stop() starts a new recording in the same file.
        #expect(recorder.record())
        _ = try chain.render(AudioRecorderTests.ramp(19_200..<24_000))
        recorder.stop()
        #expect(try #require(readAudioFile(path)).channels[0] == AudioRecorderTests.ramp(19_200..<24_000)[0], "the file replaced")
        #expect(recorder.deleteRecording() && !FileManager.default.fileExists(atPath: path))
    }

    @Test func recordForADurationStopsByItselfAfterExactlyThatManyFramesAndSaysSo() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let path = temporaryPath("avrec-duration.opus")
        defer { unlink(path) }
        var settings = RecordingSettings(fileType: .opus, sampleRate: 48_000, channels: 1)
        settings.bitRate = 64_000
        let recorder = try AudioRecorder(path: path, settings: settings, graph: chain.graph, node: chain.nodes[0], element: 0)
        let finished = Atomic<Int>(0)
        recorder.onFinish = { ok in finished.store(ok ? 1 : -1, ordering: .relaxed) }
        #expect(recorder.record(forDuration: 0.25))
        _ = try chain.render([sine(frequency: 440, frames: 48_000)])
        let deadline = Date().addingTimeInterval(5)
        while finished.load(ordering: .relaxed) == 0 && Date() < deadline { usleep(10_000) }
        #expect(finished.load(ordering: .relaxed) == 1, "onFinish after the duration, by itself")
        #expect(!recorder.isRecording)
        let file = try #require(readAudioFile(path), "the file was closed by itself and reads back")
        #expect(abs(Int(file.info.frames) - 12_000) <= 960, "0.25 s at 48 kHz within one Opus frame: \(file.info.frames)")
        #expect(!recorder.record() && recorder.lastError != nil, "a finished recording does not start again")
        recorder.stop()  // after the finish: nothing more, no second onFinish
        #expect(finished.load(ordering: .relaxed) == 1)
    }

    @Test func meteringReadsAsAVAudioRecorderDoes() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let path = temporaryPath("avrec-meter.wav")
        defer { unlink(path) }
        let recorder = try AudioRecorder(path: path, graph: chain.graph, node: chain.nodes[0], element: 0)
        recorder.updateMeters()
        #expect(recorder.averagePower(forChannel: 0) == -160 && recorder.peakPower(forChannel: 0) == -160, "metering off: −160")
        recorder.isMeteringEnabled = true
        _ = try chain.render([sine(frequency: 1000, frames: 96_000, amplitude: 1)])
        recorder.updateMeters()
        #expect(abs(recorder.averagePower(forChannel: 0) - -3.01) <= 0.05, "\(recorder.averagePower(forChannel: 0))")
        #expect(abs(recorder.peakPower(forChannel: 0)) <= 0.05, "\(recorder.peakPower(forChannel: 0))")
        #expect(recorder.averagePower(forChannel: 1) == -160, "a channel it lacks")
        recorder.isMeteringEnabled = false
        recorder.updateMeters()
        #expect(recorder.averagePower(forChannel: 0) == -160)
    }

    @Test func badPathsSettingsAndElementsAreTypedErrors() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        #expect(throws: RecorderError.self) { try AudioRecorder(path: temporaryPath("x.m4a"), graph: chain.graph, node: chain.nodes[0], element: 0) }
        #expect(throws: RecorderError.audioUnit(.invalidElement)) { try AudioRecorder(path: temporaryPath("x.wav"), graph: chain.graph, node: chain.nodes[0], element: 5) }
        let recorder = try AudioRecorder(path: "/nonexistent-dir/x.wav", graph: chain.graph, node: chain.nodes[0], element: 0)
        #expect(!recorder.record() && !recorder.isRecording)
        #expect(recorder.lastError.map { if case .cannotCreate = $0 { true } else { false } } == true, "\(String(describing: recorder.lastError))")
        let wav = try AudioRecorder(path: temporaryPath("y.wav"), graph: chain.graph, node: chain.nodes[0], element: 0)
        #expect(!wav.record(forDuration: 0) && !wav.isRecording)
        #expect(!wav.record(forDuration: .nan) && !wav.record(forDuration: -1))
        // A name of one type with settings of another: refused (a WAV named .opus would mislead).
        #expect(throws: RecorderError.self) {
            try AudioRecorder(path: temporaryPath("z.opus"), settings: RecordingSettings(fileType: .wav), graph: chain.graph, node: chain.nodes[0], element: 0)
        }
        // An Ogg name fits Opus; a name without a known extension takes the settings.
        _ = try AudioRecorder(path: temporaryPath("z.ogg"), settings: RecordingSettings(fileType: .opus, sampleRate: 48_000), graph: chain.graph, node: chain.nodes[0], element: 0)
        _ = try AudioRecorder(path: temporaryPath("z.take"), settings: RecordingSettings(fileType: .flac, sampleFormat: .int16), graph: chain.graph, node: chain.nodes[0], element: 0)
    }

    /// A duration paused and resumed records the whole duration (the paused time not counted)
    /// and finishes by itself once, calling the onFinish set after the call.
    @Test func aDurationPausedAndResumedRecordsItAllAndFinishesOnce() throws {
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let path = temporaryPath("avrec-duration-pause.wav")
        defer { unlink(path) }
        let recorder = try AudioRecorder(path: path, graph: chain.graph, node: chain.nodes[0], element: 0)
        #expect(recorder.record(forDuration: 0.1))                         // 4800 frames
        let finished = Atomic<Int>(0)
        recorder.onFinish = { ok in finished.add(ok ? 1 : 100, ordering: .relaxed) }  // set after the call: still called
        _ = try chain.render(AudioRecorderTests.ramp(0..<2048))            // 2048 recorded
        recorder.pause()
        _ = try chain.render(AudioRecorderTests.ramp(2048..<4096))         // paused
        #expect(!recorder.record(forDuration: 1), "a paused duration is resumed with record(), not a second duration")
        #expect(recorder.record() && recorder.isRecording)
        _ = try chain.render(AudioRecorderTests.ramp(4096..<12_288))       // 2752 more, then the end
        let deadline = Date().addingTimeInterval(5)
        while finished.load(ordering: .relaxed) == 0 && Date() < deadline { usleep(10_000) }
        #expect(finished.load(ordering: .relaxed) == 1, "onFinish(true) once, by itself")
        #expect(!recorder.isRecording)
        recorder.stop()
        #expect(finished.load(ordering: .relaxed) == 1, "stop() after the finish calls nothing more")
        let file = try #require(readAudioFile(path))
        let expected = AudioRecorderTests.ramp(0..<2048)[0] + AudioRecorderTests.ramp(4096..<6848)[0]
        #expect(file.channels[0] == expected ? true : false, "4800 frames: the first 2048 and 2752 after the pause, \(file.channels[0].count)")
    }

    /// A disk that fills up mid-recording (a 256 KiB tmpfs): onFinish(false) comes at once from
    /// the writer, isRecording turns false and lastError says why — not only at stop(); the
    /// file keeps what was written.
    @Test func aFullDiskFinishesTheRecordingAtOnceWithTheReason() throws {
        let disk = try TinyDisk(kibibytes: 256)
        defer { disk.remove() }
        let folder = disk.path
        let chain = try Chain([MuteGateUnit()], channels: 2)
        let recorder = try AudioRecorder(path: folder + "/take.wav", graph: chain.graph, node: chain.nodes[0], element: 0)
        let finished = Atomic<Int>(0)
        recorder.onFinish = { ok in finished.add(ok ? 1 : 100, ordering: .relaxed) }
        #expect(recorder.record())
        // 2 s of stereo float: 768 kB, three times what the file system holds.
        for _ in 0..<8 {
            _ = try chain.render([noise(frames: 12_000, seed: 7), noise(frames: 12_000, seed: 8)])
            if finished.load(ordering: .relaxed) != 0 { break }
            usleep(20_000)
        }
        let deadline = Date().addingTimeInterval(5)
        while finished.load(ordering: .relaxed) == 0 && Date() < deadline { usleep(10_000) }
        #expect(finished.load(ordering: .relaxed) == 100, "onFinish(false) from the writer, before stop()")
        #expect(!recorder.isRecording)
        guard case .writeFailed(_, let reason)? = recorder.lastError else { Issue.record("lastError: \(String(describing: recorder.lastError))"); return }
        #expect(reason.contains("No space left") || reason.contains("disk full"), "\(reason)")
        recorder.stop()
        #expect(finished.load(ordering: .relaxed) == 100, "stop() calls nothing more")
        let file = try #require(readAudioFile(folder + "/take.wav"), "the file keeps what was written")
        #expect(file.info.frames > 0 && UInt64(file.info.frames) == UInt64((recorder.currentTime * 48_000).rounded()), "\(file.info.frames) frames in the file, currentTime \(recorder.currentTime) s")
    }
}

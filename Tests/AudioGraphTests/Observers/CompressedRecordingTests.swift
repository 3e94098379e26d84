// Tests, Observers: recording real speech to Ogg Opus, Ogg Vorbis and MP3 through the offline renderer, read back with libsndfile and compared after the encoder's delay.
import CSndFile
import Foundation
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("Compressed recording (Opus, Vorbis, MP3)")
struct CompressedRecordingTests {
    /// The signal-to-noise ratio of `decoded` against `reference`, in dB, at the lag (0…`maxLag`
    /// frames, the encoder's delay) where it is best; and that lag.
    static func snr(_ reference: [Float], _ decoded: [Float], maxLag: Int = 4096) -> (db: Double, lag: Int) {
        var best = (db: -Double.infinity, lag: 0)
        let n = min(reference.count, decoded.count - maxLag) - 1
        guard n > 0 else { return best }
        let signal = reference[0..<n].reduce(0.0) { $0 + Double($1) * Double($1) }
        for lag in 0...maxLag {
            var noise = 0.0
            for i in 0..<n { let d = Double(decoded[i + lag]) - Double(reference[i]); noise += d * d }
            let db = 10 * log10(signal / max(noise, 1e-30))
            if db > best.db { best = (db, lag) }
        }
        return best
    }

    /// Real speech (alsa-utils' Front_Center.wav, 48 kHz) through a graph, recorded with
    /// `settings`; the recording read back and the speech at the file's rate.
    static func record(_ settings: RecordingSettings, name: String) throws -> (file: (channels: [[Float]], info: SF_INFO), reference: [Float], recorder: Recorder) {
        let speech = Speech.load().samples
        let chain = try Chain([MuteGateUnit()], channels: 1)
        let path = temporaryPath(name)
        defer { unlink(path) }
        let recorder = try Recorder(graph: chain.graph, node: chain.nodes[0], path: path, settings: settings)
        _ = try chain.render([speech], slice: 256)
        try recorder.stop()
        let file = try #require(readAudioFile(path), "libsndfile reads the \(settings.fileType) file back")
        let rate = recorder.settings.sampleRate!
        var reference = speech
        if rate != 48_000 {
            let converter = try AudioConverter(from: try .float32(sampleRate: 48_000, channels: 1),
                                               to: try .float32(sampleRate: rate, channels: 1, interleaved: true))
            reference = try runConverter(converter, [speech], chunk: 4096)[0]
        }
        return (file, reference, recorder)
    }

    @Test func opusAt12kHzMonoAndSixtyFourKbitKeepsSpeechAbove20dBSNR() throws {
        var settings = RecordingSettings(fileType: .opus, sampleRate: 12_000, channels: 1)
        settings.bitRate = 64_000
        let (file, reference, recorder) = try CompressedRecordingTests.record(settings, name: "speech.opus")
        #expect(file.info.samplerate == 12_000 && file.info.channels == 1)
        #expect(file.info.format & Int32(SF_FORMAT_TYPEMASK) == Int32(SF_FORMAT_OGG) && file.info.format & Int32(SF_FORMAT_SUBMASK) == Int32(SF_FORMAT_OPUS))
        // As long as what was recorded, within one 20 ms Opus frame.
        #expect(abs(Int(file.info.frames) - Int(recorder.framesWritten)) <= 240, "\(file.info.frames) frames read, \(recorder.framesWritten) written")
        let (db, lag) = CompressedRecordingTests.snr(reference, file.channels[0])
        #expect(db >= 20, "Opus 64 kbit/s at 12 kHz: SNR \(db) dB at lag \(lag)")
        print("compressed: Opus 12 kHz mono 64 kbit/s: SNR \(String(format: "%.1f", db)) dB after a delay of \(lag) frames; \(file.info.frames) frames")
    }

    @Test(arguments: [(RecordingSettings.FileType.vorbis, "speech.ogg", 48_000.0), (.mp3, "speech.mp3", 48_000.0)])
    func vorbisAndMP3KeepSpeechAtTheirRate(type: RecordingSettings.FileType, name: String, rate: Double) throws {
        let (file, reference, recorder) = try CompressedRecordingTests.record(RecordingSettings(fileType: type, quality: 0.8), name: name)
        #expect(Double(file.info.samplerate) == rate && file.info.channels == 1)
        // MP3's frames are 1152 samples; the decoder may add its delay to the length.
        #expect(abs(Int(file.info.frames) - Int(recorder.framesWritten)) <= 2 * 1152, "\(file.info.frames) frames read, \(recorder.framesWritten) written")
        let (db, lag) = CompressedRecordingTests.snr(reference, file.channels[0])
        #expect(db >= 15, "\(type): SNR \(db) dB at lag \(lag)")
        print("compressed: \(type) 48 kHz mono, quality 0.8: SNR \(String(format: "%.1f", db)) dB after a delay of \(lag) frames")
    }

    @Test func opusAtARateItCannotTakeRecordsAtTheNextAndSaysSo() throws {
        let (file, _, recorder) = try CompressedRecordingTests.record(RecordingSettings(fileType: .opus, sampleRate: 44_100, channels: 1), name: "rate.opus")
        #expect(file.info.samplerate == 48_000 && recorder.settings.sampleRate == 48_000)
        #expect(recorder.rateNote == "Opus takes 8000, 12000, 16000, 24000 or 48000 Hz: recording at 48000 Hz (asked 44100 Hz)")
    }

    @Test func compressedSettingsAreCheckedAtTheCall() throws {
        #expect(try RecordingSettings.forPath("a.opus").fileType == .opus)
        #expect(try RecordingSettings.forPath("a.OGG").fileType == .vorbis)
        #expect(try RecordingSettings.forPath("a.mp3").fileType == .mp3)
        #expect(throws: RecorderError.self) { try RecordingSettings.forPath("a.opus", sampleFormat: .int16) }
        #expect(throws: RecorderError.unsupportedSettings("cannot tell the file type from \"a.m4a\": use .wav, .flac, .opus, .ogg or .mp3 (AAC/.m4a is not available: libsndfile has no AAC encoder; Opus is its equivalent)")) {
            try RecordingSettings.forPath("a.m4a")
        }
        #expect(throws: RecorderError.self) { try RecordingSettings(fileType: .opus, quality: 1.5).check(sampleRate: 48_000, channels: 1) }
        var tooFast = RecordingSettings(fileType: .opus, channels: 1)
        tooFast.bitRate = 500_000
        #expect(throws: RecorderError.self) { try tooFast.check(sampleRate: 48_000, channels: 1) }
        #expect(RecordingSettings(fileType: .mp3).fileRate(for: 96_000) == (48_000, "MP3 takes 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100 or 48000 Hz: recording at 48000 Hz (asked 96000 Hz)"))
        #expect(RecordingSettings(fileType: .vorbis).fileRate(for: 96_000).note == nil)
    }
}

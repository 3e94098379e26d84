// Tests, Formats: stream formats.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport

@Suite("Stream formats")
struct StreamFormatTests {
    @Test func convenienceFormatsAreValidAndShaped() throws {
        let f = try StreamFormat.float32(sampleRate: 48_000, channels: 2)
        #expect(f.bytesPerFrame == 4 && f.bytesPerPacket == 4 && f.bitsPerChannel == 32)
        #expect(f.isNonInterleaved && f.isFloat && f.isCanonical)
        let i = try StreamFormat.int16(sampleRate: 44_100, channels: 2)
        #expect(i.bytesPerFrame == 4 && i.bitsPerChannel == 16 && !i.isNonInterleaved && !i.isFloat)
        let mono = try StreamFormat.int16(sampleRate: 8_000, channels: 1)
        #expect(mono.bytesPerFrame == 2)
        let fi = try StreamFormat.float32(sampleRate: 48_000, channels: 2, interleaved: true)
        #expect(fi.bytesPerFrame == 8 && !fi.isCanonical)
        #expect(f.description == "48000 Hz, 2 ch, Float32, non-interleaved")
    }

    static let good = try! StreamFormat.int16(sampleRate: 48_000, channels: 2)

    static func broken(_ change: (inout StreamFormat) -> Void) -> StreamFormat {
        var f = good
        change(&f)
        return f
    }

    static let invalid: [(String, StreamFormat)] = [
        ("0 Hz", broken { $0.sampleRate = 0 }),
        ("negative rate", broken { $0.sampleRate = -48_000 }),
        ("NaN rate", broken { $0.sampleRate = .nan }),
        ("infinite rate", broken { $0.sampleRate = .infinity }),
        ("above 768 kHz", broken { $0.sampleRate = 1_000_000 }),
        ("0 channels", broken { $0.channelsPerFrame = 0 }),
        ("65 channels", broken { $0.channelsPerFrame = 65; $0.bytesPerFrame = 130; $0.bytesPerPacket = 130 }),
        ("bytesPerFrame mismatch", broken { $0.bytesPerFrame = 3 }),
        ("bytesPerPacket mismatch", broken { $0.bytesPerPacket = 8 }),
        ("2 frames per packet", broken { $0.framesPerPacket = 2 }),
        ("24-bit", broken { $0.bitsPerChannel = 24; $0.bytesPerFrame = 6; $0.bytesPerPacket = 6 }),
        ("8-bit", broken { $0.bitsPerChannel = 8; $0.bytesPerFrame = 2; $0.bytesPerPacket = 2 }),
        ("16-bit float", broken { $0.formatFlags = [.isFloat, .isPacked] }),
        ("float and integer", broken { $0.formatFlags = [.isFloat, .isSignedInteger, .isPacked] }),
        ("neither float nor integer", broken { $0.formatFlags = [.isPacked] }),
        ("big endian", broken { $0.formatFlags.insert(.isBigEndian) }),
        ("not packed", broken { $0.formatFlags.remove(.isPacked) }),
        ("not linear PCM", broken { $0.formatID = 0x61_61_63_20 }),
    ]

    @Test(arguments: invalid)
    func rejectsInconsistentFormats(_ name: String, _ format: StreamFormat) {
        #expect(throws: AudioUnitError.formatNotSupported, "\(name)") { try format.validate() }
    }

    @Test func constructorsRejectBadRatesAndCounts() {
        #expect(throws: AudioUnitError.formatNotSupported) { try StreamFormat.float32(sampleRate: 0, channels: 2) }
        #expect(throws: AudioUnitError.formatNotSupported) { try StreamFormat.float32(sampleRate: 48_000, channels: 0) }
        #expect(throws: AudioUnitError.formatNotSupported) { try StreamFormat.int16(sampleRate: .nan, channels: 1) }
    }

    @Test func errorCodesAreApples() {
        #expect(AudioUnitError.invalidProperty.rawValue == -10879)
        #expect(AudioUnitError.invalidParameter.rawValue == -10878)
        #expect(AudioUnitError.invalidElement.rawValue == -10877)
        #expect(AudioUnitError.noConnection.rawValue == -10876)
        #expect(AudioUnitError.formatNotSupported.rawValue == -10868)
        #expect(AudioUnitError.uninitialized.rawValue == -10867)
        #expect(AudioUnitError.invalidScope.rawValue == -10866)
        #expect(AudioUnitError.propertyNotWritable.rawValue == -10865)
        #expect(AudioUnitError.cannotDoInCurrentContext.rawValue == -10863)
        #expect(AudioUnitError.invalidPropertyValue.rawValue == -10851)
        #expect(AudioUnitError.initialized.rawValue == -10849)
        #expect(AudioUnitError.nodeNotFound.rawValue == -10860)
        #expect(AudioUnitError.invalidConnection.rawValue == -10861)
        #expect(AudioUnitError.outputNodeErr.rawValue == -10862)
        #expect(AudioUnitError.invalidAudioUnit.rawValue == -10864)
    }
}

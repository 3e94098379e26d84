// Tests, Formats: AudioConverter, stream conversion outside a graph.
import AudioGraph
import AudioGraphTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct AudioConverterTests {
    @Test func int16RoundTripThroughFloatIsExact() throws {
        let int16 = try StreamFormat.int16(sampleRate: 48_000, channels: 2, interleaved: true)
        let float = try StreamFormat.float32(sampleRate: 48_000, channels: 2)
        // Every Int16 value, as floats.
        let all = (0..<65_536).map { Float($0 - 32_768) / 32_768 }
        let input = [all, all.reversed()]
        let toFloat = try runConverter(AudioConverter(from: int16, to: float), input, chunk: 1000)
        #expect(toFloat == input)
        let back = try runConverter(AudioConverter(from: float, to: int16), toFloat, chunk: 777)
        #expect(back == input)
    }

    @Test func int32AndInterleavedFloatLayouts() throws {
        let source = try StreamFormat.float32(sampleRate: 44_100, channels: 3, interleaved: true)
        var int32 = try StreamFormat.int16(sampleRate: 44_100, channels: 3, interleaved: false)
        int32.bitsPerChannel = 32; int32.bytesPerFrame = 4; int32.bytesPerPacket = 4
        try int32.validate()
        let input = (0..<3).map { noise(frames: 2000, seed: UInt64($0 + 1)).map { $0 * 0.9 } }
        let out = try runConverter(AudioConverter(from: source, to: int32), input, chunk: 500)
        var worst: Float = 0
        for c in 0..<3 { for i in 0..<2000 { worst = max(worst, abs(out[c][i] - input[c][i])) } }
        // Float32 carries 24 significant bits: the Int32 result is within one Int32 step.
        #expect(worst <= 1 / 2_147_483_648)
    }

    @Test func integerEncodingClipsAndRounds() throws {
        let float = try StreamFormat.float32(sampleRate: 8_000, channels: 1)
        let int16 = try StreamFormat.int16(sampleRate: 8_000, channels: 1)
        let input: [[Float]] = [[2, -2, .nan, 0.5 / 32_768, 1.5 / 32_768, -1, 32_767.4 / 32_768]]
        let out = try runConverter(AudioConverter(from: float, to: int16), input)
        #expect(out[0].map { Int($0 * 32_768) } == [32_767, -32_768, 0, 0, 2, -32_768, 32_767])
    }

    @Test func channelRules() throws {
        let mono = try StreamFormat.float32(sampleRate: 48_000, channels: 1)
        let stereo = try StreamFormat.float32(sampleRate: 48_000, channels: 2)
        let quad = try StreamFormat.float32(sampleRate: 48_000, channels: 4)
        let a = noise(frames: 300, seed: 7), b = noise(frames: 300, seed: 8)
        #expect(try runConverter(AudioConverter(from: mono, to: stereo), [a]) == [a, a])
        let averaged = try runConverter(AudioConverter(from: stereo, to: mono), [a, b])
        #expect(averaged[0] == zip(a, b).map { ($0 + $1) * 0.5 })
        let silentExtra = try runConverter(AudioConverter(from: stereo, to: quad), [a, b])
        #expect(silentExtra == [a, b, [Float](repeating: 0, count: 300), [Float](repeating: 0, count: 300)])
        #expect(try runConverter(AudioConverter(from: quad, to: stereo), [a, b, a, b]) == [a, b])
    }

    /// Gain of a resampled sine, in dB, measured after the converter's delay has passed.
    func resampledGain(from inRate: Double, to outRate: Double, frequency: Double) throws -> Double {
        let converter = try AudioConverter(from: .float32(sampleRate: inRate, channels: 1),
                                           to: .float32(sampleRate: outRate, channels: 1))
        let frames = Int(inRate)  // one second
        let out = try runConverter(converter, [sine(frequency: frequency, sampleRate: inRate, frames: frames)], chunk: 333)
        let skip = converter.latencyFrames + Int(outRate / 10)
        let expected = rms(sine(frequency: frequency, sampleRate: inRate, frames: frames)[...])
        return decibels(rms(out[0][skip..<(out[0].count - skip)]) / expected)
    }

    @Test func resamplerPassbandAndStopband() throws {
        // 16 kHz → 48 kHz: flat in the passband.
        for f in [100.0, 1000, 5000, 6000] {
            let gain = try resampledGain(from: 16_000, to: 48_000, frequency: f)
            #expect(abs(gain) < 0.05, "16k→48k at \(f) Hz: \(gain) dB")
        }
        // 48 kHz → 16 kHz: passband flat, content above the new Nyquist frequency removed.
        for f in [1000.0, 6000] {
            let gain = try resampledGain(from: 48_000, to: 16_000, frequency: f)
            #expect(abs(gain) < 0.05, "48k→16k at \(f) Hz: \(gain) dB")
        }
        let aliased = try resampledGain(from: 48_000, to: 16_000, frequency: 12_000)
        #expect(aliased < -80, "12 kHz into 16 kHz: \(aliased) dB")
        // 44.1 → 48 kHz, a ratio that is not an integer.
        #expect(abs(try resampledGain(from: 44_100, to: 48_000, frequency: 10_000)) < 0.05)
    }

    @Test func resamplerKeepsEveryFrameAndReportsItsDelay() throws {
        let converter = try AudioConverter(from: .int16(sampleRate: 16_000, channels: 1), to: .float32(sampleRate: 48_000, channels: 2))
        // libsamplerate's output is time-aligned with its input: it holds frames back until it
        // has seen enough input (or a flush) but does not delay the signal.
        #expect(converter.latencyFrames == 0)
        var impulse = [Float](repeating: 0, count: 16_000)
        impulse[1000] = 0.5
        let out = try runConverter(converter, [impulse], chunk: 160)
        // All frames come out once the tail is flushed: 3 × input, give or take a frame.
        #expect(abs(out[0].count - 48_000) <= 2, "\(out[0].count) frames")
        #expect(out[0] == out[1])
        let peak = out[0].indices.max { abs(out[0][$0]) < abs(out[0][$1]) }!
        #expect(peak == 3000 + converter.latencyFrames, "peak at \(peak), latency \(converter.latencyFrames)")
    }

    @Test func badArgumentsThrowTheirCodes() throws {
        let ok = try StreamFormat.float32(sampleRate: 48_000, channels: 2)
        var zeroRate = ok; zeroRate.sampleRate = 0
        var zeroChannels = ok; zeroChannels.channelsPerFrame = 0
        var mismatched = ok; mismatched.bytesPerFrame = 8
        var int24 = try StreamFormat.int16(sampleRate: 48_000, channels: 1); int24.bitsPerChannel = 24
        for bad in [zeroRate, zeroChannels, mismatched, int24] {
            #expect(throws: AudioUnitError.formatNotSupported) { try AudioConverter(from: bad, to: ok) }
            #expect(throws: AudioUnitError.formatNotSupported) { try AudioConverter(from: ok, to: bad) }
        }
        // A ratio libsamplerate cannot do (1 Hz → 768 kHz).
        #expect(throws: AudioUnitError.formatNotSupported) {
            try AudioConverter(from: .float32(sampleRate: 1, channels: 1), to: .float32(sampleRate: 768_000, channels: 1))
        }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try AudioConverter(from: ok, to: ok, maximumInputFrames: 0) }
        let converter = try AudioConverter(from: .float32(sampleRate: 16_000, channels: 1), to: .float32(sampleRate: 48_000, channels: 1))
        var input = [Float](repeating: 0, count: 100), output = [Float](repeating: 0, count: 100)
        let error = input.withUnsafeMutableBytes { i in
            output.withUnsafeMutableBytes { o in
                var ip = i.baseAddress!, op = o.baseAddress!
                return #expect(throws: AudioUnitError.tooManyFramesToProcess) {
                    try converter.convert(&ip, frameCount: 100, into: &op, capacity: 100)
                }
            }
        }
        _ = error
    }
}

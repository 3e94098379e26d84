// Tests, JACK target (where the allocation/lock counter lives): whether WebRTC's audio processing allocates or locks once warmed up — the measurement that decides where the vpio unit runs it.
import AudioGraph
import AudioGraphTestSupport
import CAllocCounter
import Foundation
import Testing

/// The microphone and far end of the simulated room's speech, for a processor on a counted thread.
/// SAFETY (`@unchecked Sendable`): written in `init`, then used by the one counted thread.
final class VoiceLoad: @unchecked Sendable {
    let processor: VoiceProcessor
    var mic: [Float]
    var far: [Float]
    /// One slice of each stream, allocated here so the counted loop allocates nothing of its own.
    var scratch = [Float](repeating: 0, count: 256), farScratch = [Float](repeating: 0, count: 256)
    init(_ configuration: VoiceProcessor.Configuration) throws {
        processor = try VoiceProcessor(sampleRate: 48_000, maximumFramesPerSlice: 256, configuration: configuration)
        try processor.setEchoPathDelay(seconds: 0.04)
        let speech = Speech.load().samples
        far = speech
        mic = [Float](repeating: 0, count: speech.count)
        for i in 1920..<speech.count { mic[i] = 0.5 * speech[i - 1920] }
        let left = Speech.load("/usr/share/sounds/alsa/Front_Left.wav").samples
        for i in 0..<min(left.count, mic.count) { mic[i] += 0.3 * left[i] }
    }

    /// Runs `seconds` of audio in 256-frame slices (the JACK period of scripts/test); returns the slices.
    func run(seconds: Double) -> Int {
        let slices = Int(seconds * 48_000) / 256
        var position = 0
        scratch.withUnsafeMutableBufferPointer { s in farScratch.withUnsafeMutableBufferPointer { f in
            var sp = s.baseAddress!, fp = f.baseAddress!
            for _ in 0..<slices {
                if position + 256 > mic.count { position = 0 }
                for i in 0..<256 { s[i] = mic[position + i]; f[i] = far[position + i] }
                position += 256
                try? withUnsafePointer(to: &sp) { (m) throws(AudioUnitError) in
                    try withUnsafePointer(to: &fp) { (fq) throws(AudioUnitError) in
                        try processor.process(microphone: m, farEnd: fq, frameCount: 256)
                    }
                }
            }
        } }
        return slices
    }
}

@Suite("VoiceProcessor on a counted thread (allocations and locks)")
struct VoiceProcessorRealTimeTests {
    /// Every component on, warmed up for 3 s on the counted thread itself, then 10 s counted.
    /// Prints the figures; expects no allocation, and the three uncontended locks per 10 ms frame
    /// 0.3 takes (its ProcessReverseStream, set_stream_delay_ms and ProcessStream each take a
    /// mutex), so a library that changes this is noticed and the docs follow.
    @Test func processingAfterWarmUpAllocatesNothing() throws {
        try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds")
        for (name, configuration) in [
            ("echo cancellation", VoiceProcessor.Configuration()),
            ("everything", VoiceProcessor.Configuration(echoCancellation: .high, noiseSuppression: .high,
                                                        gainControl: .init(), voiceDetection: true, highPassFilter: true)),
        ] {
            let load = try VoiceLoad(configuration)
            let counts = countedOnOwnThread {
                _ = load.run(seconds: 3)
                let a0 = alloccounter_allocations(), l0 = alloccounter_locks()
                _ = load.run(seconds: 10)
                // Report only the counted part: subtract what the warm-up did.
                return Int(alloccounter_allocations() - a0) << 32 | Int(alloccounter_locks() - l0)
            }
            let allocations = counts.calls >> 32, locks = counts.calls & 0xFFFF_FFFF
            let chunks = 1000, slices = Int(10 * 48_000) / 256
            print("VoiceProcessor (\(name)): after 3 s warm-up, 10 s in 256-frame slices (\(slices) slices, \(chunks) 10 ms frames): "
                  + "\(allocations) allocations, \(locks) pthread_mutex_lock calls "
                  + "(warm-up included: \(counts.allocations) allocations, \(counts.locks) locks)")
            #expect(allocations == 0, "\(name): \(allocations) allocations after warm-up")
            #expect(locks == 3 * chunks, "\(name): \(locks) locks in \(chunks) frames")
        }
    }
}

// Tests, Units: the voice-processing IO unit's worker thread (the live design) against its inline offline mode — the same samples when the worker keeps up, and late frames counted when it does not.
@testable import AudioGraph
import AudioGraphTestSupport
import Foundation
import Testing

extension VoiceProcessingSuites {
    @Suite("Voice-processing IO unit: the worker thread")
    struct VoiceIOWorkerTests {
        /// The simulated room through a rig whose unit runs its worker as on a live driver (the
        /// offline renderer's inline mode switched off), each slice rendered once the worker has
        /// processed every complete 10 ms frame: element 1 is bit for bit what the inline mode gives.
        /// (Also run under ThreadSanitizer by scripts/test: the slots between render thread and worker.)
        @Test func theWorkerGivesTheInlineSamplesWhenItKeepsUp() throws {
            let room = SimulatedRoom()
            let mic = Array(room.microphone[0..<(3 * SimulatedRoom.rate)])
            let inline = try VoiceRig(farEnd: room.farEnd) { unit in
                unit.enablesAGC = false
                unit.extraEchoPathDelay = SimulatedRoom.echoDelay
            }
            let expected = try inline.render(mic)
            let worker = try VoiceRig(farEnd: room.farEnd) { unit in
                unit.enablesAGC = false
                unit.extraEchoPathDelay = SimulatedRoom.echoDelay
                unit.rendersOffline = false
            }
            #expect(worker.unit.engine?.inline == false)
            var got: [Float] = []
            var rendered = 0
            for start in stride(from: 0, to: mic.count, by: 256) {
                got += try worker.render(Array(mic[start..<min(start + 256, mic.count)]), slice: 256)
                rendered += min(256, mic.count - start)
                let deadline = Date().addingTimeInterval(5)
                while worker.unit.statistics.frames < UInt64(rendered / 480) && Date() < deadline { usleep(200) }
            }
            #expect(worker.unit.statistics.lateFrames == 0)
            #expect(got == expected, "worker and inline differ at \(zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
        }

        /// A worker that has not processed the frames the render thread needs: bypassed, those frames
        /// go out as the microphone (never stale audio); processing, as silence (the raw microphone
        /// would carry the far end's echo); counted either way.
        @Test func framesTheWorkerHasNotFinishedGoOutUnprocessedAndCounted() throws {
            let mic = (0..<48_000).map { Float(sin(Double($0) * 0.05)) * 0.3 }
            let rig = try VoiceRig(farEnd: []) { unit in
                unit.bypassesVoiceProcessing = true
                unit.rendersOffline = false
            }
            // Rendered as fast as the test can: the worker falls behind now and then.
            let out = try rig.render(mic, slice: 256)
            let latency = rig.latency
            let late = rig.unit.statistics.lateFrames
            print("VoiceIOWorker: \(late) of \(mic.count) frames late when rendering without waiting")
            // Bypassed, processed and unprocessed frames agree except the processed ones are
            // `processingDelay` later: every output sample is the microphone at one of two lags.
            let delay = latency - rig.unit.engine!.outputLag
            for i in latency..<out.count {
                let a = mic[i - latency], b = mic[i - latency + delay]
                #expect(out[i] == a || out[i] == b, "frame \(i)")
                if out[i] != a && out[i] != b { break }
            }

            let processing = try VoiceRig(farEnd: []) { unit in
                unit.enablesAGC = false
                unit.rendersOffline = false
            }
            let processed = try processing.render(mic, slice: 256)
            let lateProcessing = processing.unit.statistics.lateFrames
            let silent = processed[processing.latency...].filter { $0 == 0 }.count
            print("VoiceIOWorker: processing, \(lateProcessing) frames late, \(silent) exact zeros after the latency")
            #expect(lateProcessing > 0 && silent >= Int(lateProcessing) - processing.latency, "late frames are silence")
        }
    }

    @Suite("Voice-processing IO unit: the resampling bridge")
    struct VoiceRateBridgeTests {
        /// 22 050 and 11 025 Hz through the bridge for 5 s of noise: never short of output, and how
        /// much of the prefill was never needed (printed, for its sizing).
        @Test(arguments: [22_050, 11_025])
        func theBridgeIsNeverShortOfOutput(rate: Int) throws {
            let bridge = try VoiceRateBridge(rate: rate, microphoneChannels: 1, farEndChannels: 1)
            let processor = try VoiceProcessor(sampleRate: bridge.processingRate, configuration: .init(echoCancellation: nil))
            var random = SplitMix64(seed: 3)
            let mic = UnsafeMutablePointer<Float>.allocate(capacity: bridge.deviceChunk)
            let far = UnsafeMutablePointer<Float>.allocate(capacity: bridge.deviceChunk)
            defer { mic.deallocate(); far.deallocate() }
            var micTable = mic, farTable = far
            for _ in 0..<(5 * rate / bridge.deviceChunk) {
                for i in 0..<bridge.deviceChunk {
                    mic[i] = Float(Double(random.next() >> 11) / Double(1 << 53) - 0.5)
                    far[i] = 0
                }
                withUnsafePointer(to: &micTable) { m in withUnsafePointer(to: &farTable) { f in bridge.process(microphone: m, farEnd: f, with: processor) } }
            }
            print("VoiceRateBridge at \(rate) Hz → \(bridge.processingRate) Hz: prefill \(bridge.prefill) frames, lowest level \(bridge.lowestOutputLevel), shortfall \(bridge.underflowFrames)")
            #expect(bridge.underflowFrames == 0)
        }
    }
}

// Tests, JACK: the convolution reverb and the analyser's render side on the JACK process thread — no allocation, no lock, under live edits.
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

extension JACKIntegration {
    @Suite("Convolution and analyser on the JACK process thread")
    struct ConvolutionRealTimeTests {
        /// Optimized builds only (scripts/test runs it with -c release): a convolver (two
        /// responses of 1 s and 0.4 s, swapped every few tens of milliseconds, each swap a
        /// crossfade on the process thread; KissFFT's kiss_fftr and kiss_fftri every 256 frames)
        /// with an analyser on its output, pulled by JACK while this thread changes DryWetMix and
        /// Gain (set and scheduled), reads the analyser and installs and removes a second one:
        /// zero allocations, frees and locks on the process thread.
        @Test(.enabled(if: isOptimizedBuild, "run with -c release (scripts/test does)"))
        func convolverAndAnalyserNeitherAllocateNorLockOnTheProcessThread() throws {
            let graph = AudioGraph()
            let io = IOUnit(), reverb = ConvolutionReverbUnit()
            let ioNode = try graph.addNode(io), reverbNode = try graph.addNode(reverb)
            // The convolver's input: a 440 Hz tone from a render callback, which arms the counter
            // for the thread it runs on (the JACK process thread).
            let phase = RenderState(0)
            try graph.setNodeInputCallback(reverbNode, inputElement: 0) { _, _, buffers in
                alloccounter_arm_this_thread()
                for f in 0..<buffers.frameCount {
                    let x = 0.25 * Float(sin(Double(phase.value + f) * 2 * Double.pi * 440 / 48_000))
                    for c in 0..<buffers.channelCount { buffers[c][f] = x }
                }
                phase.value += buffers.frameCount
                return 0
            }
            try graph.connectNodeInput(reverbNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
            func decaying(_ frames: Int, seed: UInt64) -> [Float] {
                let n = noise(frames: frames, seed: seed)
                return (0..<frames).map { n[$0] * Float(exp(-5 * Double($0) / Double(frames))) * 0.05 }
            }
            let long = [decaying(48_000, seed: 1), decaying(48_000, seed: 2)]
            let short = [decaying(19_200, seed: 3)]
            try reverb.setImpulseResponse(long, sampleRate: 48_000)

            var analyser: Analyser!
            let counted = try CountedProcessThread(graph: graph, clientName: "ag-conv-rt",
                                                   afterStart: { _ in analyser = try graph.installAnalyser(on: reverbNode, fftSize: 4096) })
            let swapsBefore = reverb.swapCount, seenBefore = analyser.framesSeen
            let deadline = Date().addingTimeInterval(2)
            var rounds = 0, peakBin = 0
            while Date() < deadline {
                try reverb.setImpulseResponse(rounds % 2 == 0 ? short : long, sampleRate: 48_000)
                try reverb.setParameter(ConvolutionReverbUnit.Parameter.dryWetMix, Float(rounds % 11) * 10, scope: .global)
                try reverb.setParameter(ConvolutionReverbUnit.Parameter.gain, Float(rounds % 5) - 2, scope: .global,
                                        element: 0, bufferOffset: rounds % 200)
                let extra = try graph.installAnalyser(on: ioNode, element: IOUnit.outputElement, fftSize: 256)
                usleep(20_000)
                let spectrum = analyser.floatFrequencyData()
                peakBin = spectrum.indices.max { spectrum[$0] < spectrum[$1] }!
                _ = extra.byteFrequencyData()
                try graph.removeAnalyser(extra)
                rounds += 1
            }
            counted.expectNeitherAllocationNorLock("\(rounds) rounds")
            let swaps = reverb.swapCount - swapsBefore
            #expect(rounds > 20, "\(rounds) rounds")
            #expect(swaps > 20, "\(swaps) responses swapped in on the process thread")
            #expect(analyser.framesSeen - seenBefore > 48_000, "the analyser saw the output")
            #expect(abs(analyser.frequency(ofBin: peakBin) - 440) < 2 * 48_000.0 / 4096, "the tone's peak: bin \(peakBin)")
        }
    }
}

// Tests, Units: the dynamics and generator units rendered on one thread while another sets, schedules and reads their parameters (for ThreadSanitizer).
import AudioGraph
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Dynamics and generators: parameters from another thread while rendering")
struct DynamicsConcurrencyTests {
    /// IO → dynamics → limiter → mixer 0, oscillator → mixer 1, noise → mixer 2, constant →
    /// mixer 3 → IO, rendered on this thread while a second thread changes every parameter and
    /// reads the meters. The output stays finite and within what its sources can reach; under
    /// ThreadSanitizer (scripts/test) any data race fails the run.
    @Test func editsAndMeterReadsRaceNothing() throws {
        let dynamics = DynamicsProcessorUnit(), limiter = PeakLimiterUnit(), mixer = MultichannelMixerUnit(inputs: 4)
        let oscillator = OscillatorUnit(), noiseSource = NoiseUnit(), constant = ConstantSourceUnit()
        let chain = try Chain([dynamics, limiter, mixer], initialize: false)
        let graph = chain.graph
        for (i, unit) in [oscillator, noiseSource, constant].enumerated() {
            let node = try graph.addNode(unit as AudioUnit)
            try graph.connectNodeInput(node, sourceOutputElement: 0, chain.nodes[2], destinationInputElement: AudioUnitElement(i + 1))
            try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0.1, scope: .input, element: AudioUnitElement(i + 1))
        }
        try graph.initialize()
        try graph.start()
        let done = Atomic<Bool>(false)
        let meterSum = Mutex<Float>(0)
        let finished = Atomic<Bool>(false)
        let editor = Thread {
            var i = 0
            var sum: Float = 0
            while !done.load(ordering: .relaxed) {
                i += 1
                let x = Float(i % 100) / 100
                try? dynamics.setParameter(DynamicsProcessorUnit.Parameter.threshold, -40 + 60 * x, scope: .global)
                try? dynamics.setParameter(DynamicsProcessorUnit.Parameter.attackTime, 0.0001 + 0.1 * x, scope: .global)
                sum += (try? dynamics.parameter(DynamicsProcessorUnit.Parameter.compressionAmount, scope: .global)) ?? 0
                sum += (try? dynamics.parameter(DynamicsProcessorUnit.Parameter.outputAmplitude, scope: .global)) ?? 0
                try? limiter.setParameter(PeakLimiterUnit.Parameter.attackTime, 0.001 + 0.029 * x, scope: .global)
                try? limiter.scheduleParameter(AudioUnitParameterEvent(id: PeakLimiterUnit.Parameter.preGain, scope: .global,
                                                                       bufferOffset: i % 300, .linearRamp(to: 40 * x, durationFrames: 1 + i % 500)))
                try? oscillator.setParameter(OscillatorUnit.Parameter.waveform, Float(i % 4), scope: .global)
                try? oscillator.scheduleParameter(AudioUnitParameterEvent(id: OscillatorUnit.Parameter.frequency, scope: .global,
                                                                          .target(20 + 10_000 * x, timeConstant: 0.005)))
                try? noiseSource.setParameter(NoiseUnit.Parameter.seed, Float(i % 7), scope: .global)
                try? noiseSource.setParameter(NoiseUnit.Parameter.color, Float(i % 2), scope: .global)
                try? constant.setParameter(ConstantSourceUnit.Parameter.offset, x, scope: .global, bufferOffset: i % 256)
                usleep(200)
            }
            meterSum.withLock { $0 = sum }
            finished.store(true, ordering: .releasing)
        }
        editor.start()
        let loud = noise(frames: 2048, seed: 11).map { $0 * 3 }
        var worst: Float = 0
        var finite = true
        for _ in 0..<200 {
            let out = try chain.render([loud, loud], slice: 256)
            for channel in out {
                for v in channel { finite = finite && v.isFinite; worst = max(worst, abs(v)) }
            }
        }
        done.store(true, ordering: .relaxed)
        while !finished.load(ordering: .acquiring) { usleep(1000) }
        #expect(finite, "every sample finite")
        #expect(meterSum.withLock { $0 }.isFinite, "meters read while rendering")
        // The limiter's output (≤ 1) plus three generators at 0.1 each: the oscillator ≤ 1.09,
        // the constant ≤ 1, noise ≤ 1 white and, pink, a few times its RMS of 0.58.
        #expect(worst <= 1 + 0.109 + 0.1 + 0.1 * 4, "largest sample \(worst)")
    }
}

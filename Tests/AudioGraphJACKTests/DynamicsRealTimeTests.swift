// Tests, JACK: the dynamics processor, peak limiter and generators under a real jackd — edited live, with no allocation or lock on the process thread.
import AudioGraph
import AudioGraphJACK
import AudioGraphTestSupport
import CAllocCounter
import Foundation
import Testing

extension JACKIntegration {
    /// The dynamics and generator units pulled by the JACK driver while the test thread changes,
    /// schedules and reads their parameters and adds and removes them with updates: the
    /// process thread must neither allocate nor lock (Tests/CAllocCounter counts).
    @Suite("Dynamics and generators on the JACK process thread")
    struct DynamicsRealTimeTests {
        @Test func noAllocationOrLockUnderLiveEdits() throws {
            let graph = AudioGraph()
            let io = IOUnit()
            let dynamics = DynamicsProcessorUnit(), limiter = PeakLimiterUnit(), mixer = MultichannelMixerUnit(inputs: 6)
            let oscillator = OscillatorUnit(), noise = NoiseUnit(), constant = ConstantSourceUnit()
            let ioNode = try graph.addNode(io)
            let dynamicsNode = try graph.addNode(dynamics), limiterNode = try graph.addNode(limiter)
            let mixerNode = try graph.addNode(mixer)
            let oscillatorNode = try graph.addNode(oscillator), noiseNode = try graph.addNode(noise)
            let constantNode = try graph.addNode(constant)
            try io.setInputEnabled(true)
            // Device input → dynamics → limiter → mixer 0; the generators → mixer 1, 2, 3.
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, dynamicsNode, destinationInputElement: 0)
            try graph.connectNodeInput(dynamicsNode, sourceOutputElement: 0, limiterNode, destinationInputElement: 0)
            try graph.connectNodeInput(limiterNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
            try graph.connectNodeInput(oscillatorNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 1)
            try graph.connectNodeInput(noiseNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 2)
            try graph.connectNodeInput(constantNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 3)
            for element in 1...3 { try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, 0.05, scope: .input, element: UInt32(element)) }
            try limiter.setParameter(PeakLimiterUnit.Parameter.preGain, 30, scope: .global)  // the limiter works all the time
            // Mixer input 5: a callback that arms the counter for the thread it runs on (the JACK
            // process thread) and writes a loud square wave.
            try graph.setNodeInputCallback(mixerNode, inputElement: 5) { _, _, buffers in
                alloccounter_arm_this_thread()
                for c in 0..<buffers.channelCount {
                    let out = buffers.floatSamples(c)
                    for f in 0..<out.count { out[f] = f % 64 < 32 ? 0.5 : -0.5 }
                }
                return 0
            }
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)

            let counted = try CountedProcessThread(graph: graph, clientName: "ag-dynamics-rt") { driver in
                try mixer.setStreamFormat(.float32(sampleRate: Double(driver.sampleRate), channels: 2), scope: .output, element: 0)
            }

            var random = SplitMix64(seed: 0xD1A_2024)
            func unit(_ n: Int) -> Float { Float(random(n + 1)) / Float(n) }  // 0…1 in n steps
            var extra: AUNode?, inserted: AUNode?
            var edits = 0, meterReads: Float = 0, refused = 0
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline {
                edits += 1
                switch random(12) {
                case 0:
                    try dynamics.setParameter(DynamicsProcessorUnit.Parameter.threshold, -40 + 60 * unit(100), scope: .global)
                    try dynamics.setParameter(DynamicsProcessorUnit.Parameter.headRoom, 0.1 + 39.9 * unit(100), scope: .global)
                case 1:
                    try dynamics.scheduleParameter(AudioUnitParameterEvent(
                        id: DynamicsProcessorUnit.Parameter.overallGain, scope: .global, bufferOffset: random(1000),
                        .linearRamp(to: -20 + 40 * unit(40), durationFrames: 1 + random(4000))))
                    try dynamics.setParameter(DynamicsProcessorUnit.Parameter.attackTime, 0.0001 + 0.1 * unit(50), scope: .global)
                case 2:
                    meterReads += try dynamics.parameter(DynamicsProcessorUnit.Parameter.compressionAmount, scope: .global)
                    meterReads += try dynamics.parameter(DynamicsProcessorUnit.Parameter.inputAmplitude, scope: .global)
                    do throws(AudioUnitError) {
                        try dynamics.setParameter(DynamicsProcessorUnit.Parameter.outputAmplitude, 0, scope: .global)
                    } catch { refused += 1 }
                case 3:  // the attack changes the limiter's window, rebuilt on the render thread
                    try limiter.setParameter(PeakLimiterUnit.Parameter.attackTime, 0.001 + 0.029 * unit(29), scope: .global)
                    try limiter.setParameter(PeakLimiterUnit.Parameter.decayTime, 0.001 + 0.059 * unit(59), scope: .global)
                case 4:
                    try limiter.scheduleParameter(AudioUnitParameterEvent(
                        id: PeakLimiterUnit.Parameter.ceiling, scope: .global, bufferOffset: random(500),
                        .target(-30 * unit(30), timeConstant: 0.001 + Double(random(20)) / 1000)))
                case 5:
                    try oscillator.setParameter(OscillatorUnit.Parameter.waveform, Float(random(4)), scope: .global)
                    try oscillator.scheduleParameter(AudioUnitParameterEvent(
                        id: OscillatorUnit.Parameter.frequency, scope: .global, bufferOffset: random(1000),
                        .linearRamp(to: 20 + 15_000 * unit(1000), durationFrames: 1 + random(8000))))
                case 6:
                    try oscillator.setParameter(OscillatorUnit.Parameter.detune, -2400 + 4800 * unit(48), scope: .global, bufferOffset: random(256))
                case 7:
                    try noise.setParameter(NoiseUnit.Parameter.color, Float(random(2)), scope: .global)
                    try noise.setParameter(NoiseUnit.Parameter.seed, Float(random(1000)), scope: .global)
                case 8:
                    try constant.scheduleParameter(AudioUnitParameterEvent(
                        id: ConstantSourceUnit.Parameter.offset, scope: .global, bufferOffset: random(300),
                        .linearRamp(to: unit(10) * 2 - 1, durationFrames: 1 + random(2000))))
                case 9:  // a generator on mixer input 4, added or removed (fresh kernel state)
                    if let node = extra { try graph.removeNode(node); extra = nil } else {
                        let units: [AudioUnit] = [OscillatorUnit(), NoiseUnit(), ConstantSourceUnit()]
                        let node = try graph.addNode(units[random(3)])
                        try graph.connectNodeInput(node, sourceOutputElement: 0, mixerNode, destinationInputElement: 4)
                        extra = node
                    }
                    try graph.update()
                case 10:  // a second limiter between dynamics and limiter, or taken out
                    try graph.disconnectNodeInput(limiterNode, inputElement: 0)
                    if let node = inserted {
                        try graph.removeNode(node)
                        try graph.connectNodeInput(dynamicsNode, sourceOutputElement: 0, limiterNode, destinationInputElement: 0)
                        inserted = nil
                    } else {
                        let node = try graph.addNode(random(2) == 0 ? PeakLimiterUnit() : DynamicsProcessorUnit())
                        try graph.connectNodeInput(dynamicsNode, sourceOutputElement: 0, node, destinationInputElement: 0)
                        try graph.connectNodeInput(node, sourceOutputElement: 0, limiterNode, destinationInputElement: 0)
                        inserted = node
                    }
                    try graph.update()
                default:
                    try dynamics.setParameter(DynamicsProcessorUnit.Parameter.expansionThreshold, -120 + 120 * unit(120), scope: .global)
                    try dynamics.setParameter(DynamicsProcessorUnit.Parameter.expansionRatio, 1 + 49 * unit(49), scope: .global)
                    try noise.setParameter(NoiseUnit.Parameter.amplitude, unit(10), scope: .global)
                }
                usleep(500)
            }
            counted.expectNeitherAllocationNorLock("the edits")
            #expect(edits >= 1000, "\(edits) random edits in 2 s")
            #expect(refused > 0 && meterReads.isFinite, "meters read (\(meterReads)), a set refused \(refused) times")
        }
    }
}

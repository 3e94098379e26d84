// Tests, Formats: format conversion on connections.
import AudioGraph
import AudioGraphTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Int16 samples served to a render callback from a fixed array, one slice after another.
// SAFETY (@unchecked Sendable): immutable samples and an atomic position.
final class Int16Source: @unchecked Sendable {
    let samples: [Int16]          // interleaved
    let channels: Int
    private let position = Atomic<Int>(0)
    init(_ samples: [Int16], channels: Int) { self.samples = samples; self.channels = channels }

    var callback: RenderCallback {
        { [self] _, _, list in
            let out = list.int16Samples(0)
            let start = position.load(ordering: .relaxed)
            for i in 0..<out.count { out[i] = start + i < samples.count ? samples[start + i] : 0 }
            position.store(start + out.count, ordering: .relaxed)
            return 0
        }
    }
}

func int16(_ x: [Float]) -> [Int16] { x.map { Int16(max(-32_768, min(32_767, ($0 * 32_768).rounded()))) } }

@Suite("Format conversion on connections") struct FormatConversionTests {
    /// IO ← mixer (48 kHz stereo) ← render callback on input 0 in `format`.
    func mixerFedBy(_ format: StreamFormat, _ source: @escaping RenderCallback, outputChannels: Int = 2) throws -> (AudioGraph, OfflineRenderer, AUNode) {
        let graph = AudioGraph()
        let ioNode = try graph.addNode(IOUnit())
        let mixer = MultichannelMixerUnit(inputs: 2)
        try mixer.setStreamFormat(.float32(sampleRate: 48_000, channels: UInt32(outputChannels)), scope: .output, element: 0)
        try mixer.setStreamFormat(format, scope: .input, element: 0)
        let mixerNode = try graph.addNode(mixer)
        try graph.setNodeInputCallback(mixerNode, inputElement: 0, source)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: outputChannels)
        try graph.initialize()
        try graph.start()
        return (graph, renderer, mixerNode)
    }

    /// What `AudioConverter` makes of the same samples (the reference: same libsamplerate stages).
    func reference(_ samples: [Int16], from format: StreamFormat, channels: UInt32) throws -> [[Float]] {
        let converter = try AudioConverter(from: format, to: .float32(sampleRate: 48_000, channels: channels))
        let floats = samples.map { Float($0) / 32_768 }
        return try runConverter(converter, [floats], chunk: 160)
    }

    @Test(arguments: [64, 256, 1000])
    func int16At16kHzMonoIntoA48kHzFloatStereoMixer(slice: Int) throws {
        let format = try StreamFormat.int16(sampleRate: 16_000, channels: 1)
        let speechLike = int16((0..<16_000).map { i in
            0.4 * Float(sin(2 * Double.pi * 440 * Double(i) / 16_000)) + 0.2 * Float(sin(2 * Double.pi * 3_100 * Double(i) / 16_000))
        })
        let (graph, renderer, mixerNode) = try mixerFedBy(format, Int16Source(speechLike, channels: 1).callback)
        let out = try renderer.render(input: [[], []], frameCount: 48_000, sliceFrames: slice)
        let latency = Int((graph.renderLatency * 48_000).rounded())
        #expect(latency > 0 && latency < 200, "\(latency) frames")
        #expect(graph.renderContext.latencyFrames == latency)
        let unit = try graph.nodeInfo(mixerNode)
        guard case .float64(let unitLatency) = try unit.getProperty(.latency, scope: .global, element: 0) else {
            Issue.record("Latency is not a float64"); return
        }
        #expect(unitLatency == graph.renderLatency, "the mixer reports the latency its input conversion adds")
        // The graph's output is the converter's, delayed by the reported latency.
        let expected = try reference(speechLike, from: format, channels: 2)
        #expect(out[0].prefix(latency).allSatisfy { $0 == 0 })
        var worst: Float = 0
        for c in 0..<2 {
            for i in latency..<(48_000 - 200) { worst = max(worst, abs(out[c][i] - expected[c][i - latency])) }
        }
        #expect(worst < 1e-5, "largest difference \(worst) at slice \(slice)")
        #expect(out[0] == out[1], "mono goes to both sides")
    }

    @Test func interleavedStereoCallbackDownmixedToAMonoMixerIsTheAverage() throws {
        let format = try StreamFormat.int16(sampleRate: 48_000, channels: 2, interleaved: true)
        let left = noise(frames: 1024, seed: 3).map { $0 * 0.5 }, right = noise(frames: 1024, seed: 4).map { $0 * 0.5 }
        var interleaved: [Int16] = []
        for (l, r) in zip(int16(left), int16(right)) { interleaved += [l, r] }
        let (graph, renderer, _) = try mixerFedBy(format, Int16Source(interleaved, channels: 2).callback, outputChannels: 1)
        let out = try renderer.render(input: [[], []], frameCount: 1024, sliceFrames: 256)
        #expect(graph.renderLatency == 0, "no resampling, no latency")
        let expected = zip(int16(left), int16(right)).map { (Float($0) / 32_768 + Float($1) / 32_768) * 0.5 }
        #expect(out[0] == expected)
    }

    @Test func deviceInputAsInt16At16kHzMono() throws {
        // A speech recognizer's view of the microphone: IO element 1's application side at
        // 16 kHz Int16 mono, played back through a 48 kHz mixer.
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        let recognizerFormat = try StreamFormat.int16(sampleRate: 16_000, channels: 1)
        try io.setStreamFormat(recognizerFormat, scope: .output, element: IOUnit.inputElement)
        let captured = Mutex<[Int16]>([])
        try io.setProperty(.setInputCallback, scope: .global, element: 0, .inputCallback({ _, list in
            let samples = list.int16Samples(0)
            captured.withLock { $0 += samples }
        }))
        let mixer = MultichannelMixerUnit(inputs: 1)
        let mixerNode = try graph.addNode(mixer)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        #expect(try graph.nodeInfo(mixerNode).streamFormat(scope: .input, element: 0) == recognizerFormat)
        #expect(try io.streamFormat(scope: .output, element: IOUnit.inputElement) == recognizerFormat)

        let frames = 48_000
        let voice = sine(frequency: 1000, frames: frames, amplitude: 0.5)
        let whistle = sine(frequency: 12_000, frames: frames, amplitude: 0.5)
        let out = try renderer.render(input: [voice, voice], frameCount: frames, sliceFrames: 256)
        let latency = Int((graph.renderLatency * 48_000).rounded())
        // The README's figure for this setup: the two conversions add about 6 ms.
        #expect(abs(graph.renderLatency - 0.006) < 0.0015, "\(graph.renderLatency * 1000) ms")
        let gain = decibels(rms(out[0][(latency + 4800)..<(frames - 4800)]) / rms(voice[4800..<(frames - 4800)]))
        #expect(abs(gain) < 0.05, "1 kHz through 16 kHz: \(gain) dB")
        let samples = captured.withLock { $0 }
        #expect(abs(samples.count - frames / 3) <= 1, "the input callback saw \(samples.count) frames at 16 kHz")
        // Every captured value is an Int16 the device signal rounds to (quantized, in range).
        #expect(samples.contains { $0 > 16_000 } && samples.contains { $0 < -16_000 })

        let removed = try renderer.render(input: [whistle, whistle], frameCount: frames, sliceFrames: 256)
        let attenuation = decibels(rms(removed[0][4800...]) / rms(whistle[4800...]))
        #expect(attenuation < -60, "12 kHz cannot pass a 16 kHz stream: \(attenuation) dB")
    }

    @Test func reportedLatencyIsTheMeasuredDelay() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        // The filter runs at 22.05 kHz: 48 k → 22.05 k on its input, back to 48 k at the device.
        let filter = LowPassFilterUnit()
        try filter.setStreamFormat(.float32(sampleRate: 22_050, channels: 2), scope: .output, element: 0)
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 11_000, scope: .global)
        let filterNode = try graph.addNode(filter)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, filterNode, destinationInputElement: 0)
        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        // A band-limited click (a 1 kHz Hann-windowed burst) at frame 4800.
        var click = [Float](repeating: 0, count: 24_000)
        for i in 0..<96 { click[4800 + i] = Float(sin(2 * Double.pi * 1000 * Double(i) / 48_000) * (0.5 - 0.5 * cos(2 * Double.pi * Double(i) / 96))) }
        let out = try renderer.render(input: [click, click], frameCount: click.count, sliceFrames: 128)
        // Cross-correlate to find the delay.
        func correlation(_ lag: Int) -> Double {
            (4700..<5000).reduce(0.0) { $0 + Double(click[$1]) * Double(out[0][$1 + lag]) }
        }
        let measured = (0..<600).max { correlation($0) < correlation($1) }!
        let reported = graph.renderLatency * 48_000
        // The biquad's own group delay at 1 kHz with an 11 kHz cutoff is well under a frame.
        #expect(abs(Double(measured) - reported) <= 2, "measured \(measured) frames, reported \(reported)")
        #expect(reported > 0)
    }

    @Test func untouchedResampledPathKeepsPlayingThroughLiveEdits() throws {
        // The same 16 kHz source rendered twice: once alone, once with unrelated edits applied
        // between slices. A converter that restarted would leave a gap or a step.
        let format = try StreamFormat.int16(sampleRate: 16_000, channels: 1)
        let tone = int16(sine(frequency: 500, sampleRate: 16_000, frames: 16_000, amplitude: 0.5))
        let (_, quietRenderer, _) = try mixerFedBy(format, Int16Source(tone, channels: 1).callback)
        let reference = try quietRenderer.render(input: [[], []], frameCount: 48_000, sliceFrames: 256)

        let (graph, renderer, mixerNode) = try mixerFedBy(format, Int16Source(tone, channels: 1).callback)
        var out: [[Float]] = [[], []]
        var added: [AUNode] = []
        for block in 0..<12 {
            let part = try renderer.render(input: [[], []], frameCount: 4000, sliceFrames: 256)
            out[0] += part[0]; out[1] += part[1]
            if block % 2 == 0 {
                let gate = MuteGateUnit()
                let node = try graph.addNode(gate)
                try graph.connectNodeInput(node, sourceOutputElement: 0, mixerNode, destinationInputElement: 1)
                added.append(node)
            } else if let node = added.popLast() {
                try graph.removeNode(node)
            }
            try graph.update()
        }
        #expect(out == reference)
    }
}

@Suite("The graph dump") struct GraphDumpTests {
    @Test func showsFormatsConversionsCallbacksAndLatency() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        let mixer = MultichannelMixerUnit(inputs: 2)
        try mixer.setStreamFormat(.int16(sampleRate: 16_000, channels: 1), scope: .input, element: 1)
        let mixerNode = try graph.addNode(mixer)
        try graph.setNodeInputCallback(mixerNode, inputElement: 1) { _, _, _ in 0 }
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        _ = try OfflineRenderer(graph: graph)
        try graph.initialize()
        let dump = graph.description
        #expect(dump.contains("AudioGraph: 2 node(s), initialized, stopped, latency "))
        #expect(dump.contains("in 1: 16000 Hz, 1 ch, Int16, interleaved ← render callback, converted to 48000 Hz 2 ch"), "\(dump)")
        #expect(dump.contains("in 0: 48000 Hz, 2 ch, Float32, non-interleaved (unconnected)"), "\(dump)")
        #expect(dump.contains("multichannelMixer (input conversion adds "), "\(dump)")
    }
}

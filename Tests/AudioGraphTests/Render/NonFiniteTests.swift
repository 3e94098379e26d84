// Tests, Render: NaN and ±Inf never pass — bursts from render callbacks, the device input and inside filters; counted; filters recover within a slice; recordings stay finite.
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Non-finite samples")
struct NonFiniteTests {
    static let slice = 256
    /// The burst: frames 1000..<1100 of every channel (inside the 4th slice, ending mid-slice).
    static let burst = 1000..<1100

    /// Stereo speech (the same channel twice, the right one at half level), 4800 frames.
    static let speech: [[Float]] = {
        let s = Array(Speech.load().samples.prefix(20_000).suffix(4800))
        return [s, s.map { $0 * 0.5 }]
    }()

    enum Bad: String, CaseIterable { case nan, plusInf, minusInf, mixed
        func value(_ f: Int) -> Float {
            switch self {
            case .nan: return .nan
            case .plusInf: return .infinity
            case .minusInf: return -.infinity
            case .mixed: return [Float.nan, .infinity, -.infinity, .signalingNaN][f % 4]
            }
        }
    }

    /// Each recursive unit, set up so it changes the signal.
    static func makeUnit(_ name: String) throws -> AudioUnit {
        switch name {
        case "lowpass":
            let u = LowPassFilterUnit()
            try u.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 1000, scope: .global)
            return u
        case "highpass": return HighPassFilterUnit()
        case "nbandeq":
            let u = NBandEQUnit(bands: 2)
            for b: AudioUnitParameterID in 0..<2 {
                try u.setParameter(NBandEQUnit.Parameter.bypassBand + b, 0, scope: .global)
                try u.setParameter(NBandEQUnit.Parameter.gain + b, b == 0 ? 9 : -6, scope: .global)
                try u.setParameter(NBandEQUnit.Parameter.frequency + b, b == 0 ? 300 : 3000, scope: .global)
            }
            return u
        case "delay":
            let u = DelayUnit()
            try u.setParameter(DelayUnit.Parameter.delayTime, 0.003, scope: .global)
            try u.setParameter(DelayUnit.Parameter.feedback, 80, scope: .global)
            return u
        case "dynamics":
            let u = DynamicsProcessorUnit()
            try u.setParameter(DynamicsProcessorUnit.Parameter.threshold, -30, scope: .global)
            return u
        case "limiter":
            let u = PeakLimiterUnit()
            try u.setParameter(PeakLimiterUnit.Parameter.preGain, 20, scope: .global)
            return u
        case "convolver":
            let u = ConvolutionReverbUnit()
            let response = (0..<3000).map { f in Float(Glibc.exp(-Double(f) / 600)) * noise(frames: 3000, seed: 7)[f] }
            try u.setImpulseResponse([response], sampleRate: 48_000)
            return u
        default: preconditionFailure(name)
        }
    }

    static let units = ["lowpass", "highpass", "nbandeq", "delay", "dynamics", "limiter", "convolver"]

    /// A render callback → `unit` → IO graph, rendered offline over `input` (`[channel][frame]`);
    /// returns the output and the graph's non-finite count.
    static func render(_ unit: AudioUnit, _ input: [[Float]]) throws -> (out: [[Float]], count: UInt64) {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        let node = try graph.addNode(unit)
        let source = SourceBox(input)
        try graph.setNodeInputCallback(node, inputElement: 0) { time, _, buffers in
            let start = Int(time.sampleTime)
            for c in 0..<buffers.channelCount {
                for f in 0..<buffers.frameCount {
                    buffers[c][f] = start + f < source.samples[c].count ? source.samples[c][start + f] : 0
                }
            }
            return 0
        }
        try graph.connectNodeInput(node, sourceOutputElement: 0, io, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph)
        try graph.initialize()
        try graph.start()
        let out = try renderer.render(input: [], frameCount: input[0].count, sliceFrames: slice)
        return (out, graph.nonFiniteSampleCount)
    }

    /// The callback's samples, immutable (read on the render thread).
    final class SourceBox: Sendable {
        let samples: [[Float]]
        init(_ samples: [[Float]]) { self.samples = samples }
    }

    @Test(arguments: units, Bad.allCases)
    func aBurstFromARenderCallbackNeverPassesAndTheFilterRecovers(unit name: String, bad: Bad) throws {
        var dirty = Self.speech
        var zeroed = Self.speech
        for c in 0..<2 { for f in Self.burst { dirty[c][f] = bad.value(f); zeroed[c][f] = 0 } }
        let (out, count) = try Self.render(try Self.makeUnit(name), dirty)
        let (reference, referenceCount) = try Self.render(try Self.makeUnit(name), zeroed)
        #expect(referenceCount == 0)
        #expect(count == UInt64(2 * Self.burst.count), "every replaced sample counted")
        for c in 0..<2 {
            #expect(out[c].allSatisfy { $0.isFinite }, "\(name): no NaN or Inf out on channel \(c)")
            // Within one slice after the burst the output is the clean reference's: the one
            // fed silence where the burst was (what the engine replaces it with).
            let recovered = ((Self.burst.upperBound + Self.slice - 1) / Self.slice + 1) * Self.slice
            #expect(Array(out[c][recovered...]) == Array(reference[c][recovered...]), "\(name) channel \(c)")
            #expect(rms(out[c][recovered...]) > 1e-4, "\(name) still passes the speech after the burst")
        }
    }

    @Test(arguments: Bad.allCases)
    func aBurstAtTheDeviceInputNeverPassesAndIsCounted(bad: Bad) throws {
        var dirty = Self.speech
        for c in 0..<2 { for f in Self.burst { dirty[c][f] = bad.value(f) } }
        let chain = try Chain([try Self.makeUnit("lowpass")])
        let input = dirty  // the renderer's input buffer: must stay as it was (never written)
        let out = try chain.render(input, slice: Self.slice)
        #expect(out.allSatisfy { $0.allSatisfy { $0.isFinite } })
        #expect(chain.graph.nonFiniteSampleCount == UInt64(2 * Self.burst.count))
        var zeroed = Self.speech
        for c in 0..<2 { for f in Self.burst { zeroed[c][f] = 0 } }
        let reference = try Chain([try Self.makeUnit("lowpass")]).render(zeroed, slice: Self.slice)
        #expect(out == reference, "the burst is heard as silence, nothing else changes")
    }

    @Test func aRecordingOfTheOutputHoldsNoNonFiniteSample() throws {
        var dirty = Self.speech
        for c in 0..<2 { for f in Self.burst { dirty[c][f] = Bad.mixed.value(f) } }
        let chain = try Chain([try Self.makeUnit("delay")])
        let path = "/tmp/nonfinite-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wav"
        defer { unlink(path) }
        let recorder = try Recorder(graph: chain.graph, node: chain.ioNode, element: IOUnit.outputElement, path: path)
        _ = try chain.render(dirty, slice: Self.slice)
        try recorder.stop()
        guard let file = readAudioFile(path) else { Issue.record("cannot read \(path)"); return }
        #expect(file.channels[0].count == dirty[0].count)
        #expect(file.channels.allSatisfy { $0.allSatisfy { $0.isFinite } })
        #expect(recorder.nonFiniteSampleCount == 0, "the graph replaced them before the recorder saw them")
        #expect(chain.graph.nonFiniteSampleCount == UInt64(2 * Self.burst.count))
    }

    /// Speech with the burst's frames set to `value` on both channels.
    static func speech(burst value: (Int) -> Float) -> [[Float]] {
        var x = Self.speech
        for c in 0..<2 { for f in Self.burst { x[c][f] = value(f) } }
        return x
    }

    /// A custom unit (a ``RenderCallbackUnit``, as a hosted plugin is) that passes its input on
    /// and turns the value 4 (never in the speech, which stays within ±1) into `bad`.
    static func marking(_ bad: Bad?) throws -> RenderCallbackUnit {
        try RenderCallbackUnit(inputs: 1) { context in
            guard let input = context.input(0) else { return 0 }
            for c in 0..<context.output.channelCount {
                let out = context.output[c], x = input[c]
                for f in 0..<out.count { out[f] = x[f] == 4 ? (bad?.value(f) ?? 0) : x[f] }
            }
            return 0
        }
    }

    @Test(arguments: Bad.allCases)
    func aBurstFromACustomUnitNeverReachesTheLowPassAndIsCounted(bad: Bad) throws {
        let marked = Self.speech { _ in 4 }
        let chain = try Chain([try Self.marking(bad), try Self.makeUnit("lowpass")])
        let out = try chain.render(marked, slice: Self.slice)
        let reference = try Chain([try Self.marking(nil), try Self.makeUnit("lowpass")]).render(marked, slice: Self.slice)
        #expect(out.allSatisfy { $0.allSatisfy { $0.isFinite } })
        #expect(chain.graph.nonFiniteSampleCount == UInt64(2 * Self.burst.count))
        #expect(out == reference, "the burst is heard as silence, the low-pass keeps nothing of it")
        #expect(rms(out[0][2000...]) > 1e-4)
    }

    @Test(arguments: [Bad.nan, .mixed])
    func aBurstInAFileNeverReachesTheLowPassAndIsCounted(bad: Bad) throws {
        let dirtyPath = "/tmp/nonfinite-file-\(getpid())-\(bad.rawValue).wav"
        let cleanPath = "/tmp/nonfinite-file-\(getpid())-\(bad.rawValue)-clean.wav"
        defer { unlink(dirtyPath); unlink(cleanPath) }
        writeWAV(dirtyPath, Self.speech(burst: bad.value), sampleRate: 48_000)
        writeWAV(cleanPath, Self.speech { _ in 0 }, sampleRate: 48_000)
        func play(_ path: String) throws -> (out: [[Float]], count: UInt64) {
            let graph = AudioGraph()
            let io = try graph.addNode(IOUnit())
            let player = AudioFilePlayerUnit()
            let playerNode = try graph.addNode(player)
            let filterNode = try graph.addNode(try Self.makeUnit("lowpass"))
            try graph.connectNodeInput(playerNode, sourceOutputElement: 0, filterNode, destinationInputElement: 0)
            try graph.connectNodeInput(filterNode, sourceOutputElement: 0, io, destinationInputElement: IOUnit.outputElement)
            let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2, sampleRate: 48_000)
            try graph.initialize()
            try graph.start()
            try player.open(path)
            try player.play()
            // The whole file (4,800 frames) is in the ring before the first slice renders.
            var waited = 0
            while !player.core.endWritten.load(ordering: .acquiring) && waited < 5_000 { usleep(1000); waited += 1 }
            let out = try renderer.render(input: [], frameCount: Self.speech[0].count, sliceFrames: Self.slice)
            #expect(player.underrunCount == 0)
            return (out, graph.nonFiniteSampleCount)
        }
        let (out, count) = try play(dirtyPath)
        let (reference, referenceCount) = try play(cleanPath)
        #expect(referenceCount == 0 && count == UInt64(2 * Self.burst.count))
        #expect(out.allSatisfy { $0.allSatisfy { $0.isFinite } })
        #expect(out == reference)
        #expect(rms(out[0][2000...]) > 1e-4)
    }

    @Test func aPostRenderNotificationWritingNaNNeverReachesTheDevice() throws {
        let chain = try Chain([try Self.makeUnit("lowpass")], initialize: false)
        _ = try chain.graph.addRenderNotification { phase, _, buffers in
            guard phase == .postRender else { return }
            buffers[0][3] = .nan
            buffers[1][7] = -.infinity
        }
        try chain.graph.initialize()
        try chain.graph.start()
        let out = try chain.render(Self.speech, slice: Self.slice)
        let slices = (Self.speech[0].count + Self.slice - 1) / Self.slice
        #expect(out.allSatisfy { $0.allSatisfy { $0.isFinite } })
        #expect(chain.graph.nonFiniteSampleCount == UInt64(2 * slices), "two per slice")
        #expect(out[0][3] == 0 && out[1][Self.slice + 7] == 0 && out[0][4] != 0)
    }

    // MARK: - Inside the kernels: what reaches a filter anyway is cleared from its memory

    @Test(arguments: Bad.allCases)
    func aBiquadsMemoryIsClearedOfNonFiniteValuesAtTheEndOfARun(bad: Bad) {
        let c = BiquadCoefficients.lowPass(cutoff: 1000, q: 0.7071, sampleRate: 48_000)
        var memory = BiquadMemory()
        var x = Array(Self.speech[0].prefix(512))
        for f in 200..<220 { x[f] = bad.value(f) }
        var y = [Float](repeating: 0, count: 512)
        Biquad.process(c, &memory, input: x, output: &y, frames: 256)
        #expect(!y[200..<256].allSatisfy { $0.isFinite }, "the burst's own slice is not finite (the render loop cleans it)")
        #expect([memory.x1, memory.x2, memory.y1, memory.y2].allSatisfy { $0.isFinite })
        var next = [Float](repeating: 0, count: 256)
        Biquad.process(c, &memory, input: Array(x[256...]), output: &next, frames: 256)
        #expect(next.allSatisfy { $0.isFinite }, "the next slice is finite again")
        #expect(rms(next[...]) > 1e-4)
        // The Float64 form (the filter units' and the N-band EQ's).
        let c64 = BiquadCoefficients64.design(.lowPass, frequency: 1000, bandwidth: .q(0.7071), gain: 0, sampleRate: 48_000)
        var m64 = BiquadMemory64()
        Biquad.process64(c64, &m64, input: x, output: &y, frames: 256)
        #expect([m64.x1, m64.x2, m64.y1, m64.y2].allSatisfy { $0.isFinite })
        Biquad.process64(c64, &m64, input: Array(x[256...]), output: &next, frames: 256)
        #expect(next.allSatisfy { $0.isFinite })
    }

    @Test(arguments: Bad.allCases)
    func theDelaysLineAndLoopFilterNeverHoldNonFiniteValues(bad: Bad) {
        let capacity = 1024
        var line = [Float](repeating: 0, count: capacity)
        var memory = BiquadMemory64()
        let lowPass = BiquadCoefficients64.design(.lowPass, frequency: 8000, bandwidth: .q(0.7071), gain: 0, sampleRate: 48_000)
        let run = FeedbackDelayRun(delay0: 100, delay1: 100, feedback0: 0.9, feedback1: 0.9, dry0: 0.5, dry1: 0.5, wet0: 0.5, wet1: 0.5)
        var x = Array(Self.speech[0].prefix(1024))
        for f in 50..<60 { x[f] = bad.value(f) }
        var y = [Float](repeating: 0, count: 256)
        var write = 0
        for start in stride(from: 0, to: 1024, by: 256) {
            let input = Array(x[start..<(start + 256)])
            line.withUnsafeMutableBufferPointer { l in
                DelayLine.feedback(line: l.baseAddress!, mask: capacity - 1, write: write, input: input, output: &y,
                                   frames: 256, run: run, lowPass: lowPass, memory: &memory)
            }
            write = (write + 256) & (capacity - 1)
            #expect(line.allSatisfy { $0.isFinite }, "slice at \(start)")
            #expect([memory.x1, memory.x2, memory.y1, memory.y2].allSatisfy { $0.isFinite })
            if start > 0 { #expect(y.allSatisfy { $0.isFinite }, "the echoes of the burst are silence, not NaN") }
        }
    }

    @Test func theFlushKeepsWhatTheDenormalTestKeptAndDropsNaNAndInf() {
        for x: Float in [0.5, -0.5, 1e-30, -1e-30, 1.0000001e-30, 2e-30, 3e38, -.greatestFiniteMagnitude, 1, -1e-3] {
            #expect(NonFinite.flush(x) == (abs(x) < 1e-30 ? 0 : x), "\(x)")
        }
        for x: Float in [9.99e-31, -9.99e-31, .leastNonzeroMagnitude, .leastNormalMagnitude, 0, -0.0, .nan, -.nan, .signalingNaN, .infinity, -.infinity] {
            #expect(NonFinite.flush(x) == 0, "\(x)")
        }
        for x: Double in [0.5, -1e-30, 1e-30, 1e300, -.greatestFiniteMagnitude] { #expect(NonFinite.flush(x) == x, "\(x)") }
        for x: Double in [9.99e-31, .leastNonzeroMagnitude, 1e-300, .nan, .infinity, -.infinity] { #expect(NonFinite.flush(x) == 0, "\(x)") }
        // The copy that checks as it goes: the same answer as allFinite, and an exact copy.
        for frames in [1, 31, 32, 33, 64, 257] {
            var x = (0..<frames).map { Float($0) * 0.01 - 0.3 }
            var y = [Float](repeating: 7, count: frames)
            #expect(NonFinite.copyCheckingFinite(x, to: &y, frames: frames) && y == x)
            x[frames - 1] = .nan
            #expect(!NonFinite.copyCheckingFinite(x, to: &y, frames: frames) && y[frames - 1].isNaN)
        }
    }

    @Test func theFiniteCheckFindsEveryKindAtEveryPosition() {
        for frames in [1, 7, 31, 32, 33, 64, 100, 256] {
            var x = (0..<frames).map { Float($0) * 0.001 - 0.05 }
            #expect(NonFinite.allFinite(x, frames: frames))
            x[0] = .greatestFiniteMagnitude; x[frames - 1] = -.greatestFiniteMagnitude
            #expect(NonFinite.allFinite(x, frames: frames), "the largest finite values are finite")
            #expect(NonFinite.scrub(&x, frames: frames) == 0)
            for position in Set([0, frames / 2, frames - 1]) {
                for bad in [Float.nan, .infinity, -.infinity, .signalingNaN, -.nan] {
                    var y = x
                    y[position] = bad
                    #expect(!NonFinite.allFinite(y, frames: frames), "\(bad) at \(position) of \(frames)")
                    #expect(NonFinite.scrub(&y, frames: frames) == 1)
                    #expect(y[position] == 0 && y.allSatisfy { $0.isFinite })
                }
            }
        }
    }
}

// Tests, Units: varispeed and time-pitch — frequency and duration of tones pulled through them, their latency, bad parameters, speech.
@testable import AudioGraph
import AudioGraphTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Pulls a whole signal through the units' DSP (``TimeStretchState``) as the kernel does, with
/// all the input available up front (the way a file pulled faster than real time is): slices of
/// 256 frames are rendered until the input runs out. Returns `[channel][frame]`.
func pullThrough(_ input: [[Float]], soundTouch: Bool, tempo: Double, ratio: Double, sampleRate: Double = 48_000) -> [[Float]] {
    let channels = input.count, frames = input[0].count
    let backlog = frames + 1
    let bytes = TimeStretchState.byteCount(channels: channels, backlogFrames: backlog)
    let memory = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
    memory.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
    let counters = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: 2)
    counters.initialize(to: Atomic(0))
    (counters + 1).initialize(to: Atomic(0))
    defer {
        TimeStretchState.release(memory)
        memory.deallocate()
        counters.deinitialize(count: 2)
        counters.deallocate()
    }
    #expect(TimeStretchState.prepare(memory, channels: channels, sampleRate: sampleRate, backlogFrames: backlog, counters: counters,
                                     overlapMilliseconds: 8, tempoRange: soundTouch ? TimePitchUnit.tempoRange : nil))
    let state = memory.assumingMemoryBound(to: TimeStretchState.self)
    var planar = input.map { column -> UnsafeMutablePointer<Float> in
        let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        p.initialize(from: column, count: frames)
        return p
    }
    _ = planar.withUnsafeMutableBufferPointer { state.pointee.fifo.write($0.baseAddress, channelCount: channels, offset: 0, frames: frames) }
    state.pointee.taken = frames
    planar.forEach { $0.deallocate() }
    let slice = 256
    var out = [[Float]](repeating: [], count: channels)
    var buffers = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: slice) }
    defer { buffers.forEach { $0.deallocate() } }
    var guardSlices = 100_000
    while counters[0].load(ordering: .relaxed) == 0 && guardSlices > 0 {
        buffers.withUnsafeMutableBufferPointer {
            TimeStretchState.render(state, output: $0.baseAddress!, outputChannels: channels, offset: 0, frames: slice,
                                    tempo: tempo, ratio: ratio)
        }
        let missing = Int(counters[0].load(ordering: .relaxed))
        for c in 0..<channels { out[c] += Array(UnsafeBufferPointer(start: buffers[c], count: slice - missing)) }
        guardSlices -= 1
    }
    return out
}

/// Frequency from rising zero crossings (interpolated) over `x[range]`, in Hz.
func zeroCrossingFrequency(_ x: [Float], _ range: Range<Int>, sampleRate: Double = 48_000) -> Double {
    var crossings: [Double] = []
    for i in range.dropFirst() where x[i - 1] < 0 && x[i] >= 0 {
        let t = Double(i - 1) + Double(-x[i - 1] / (x[i] - x[i - 1]))
        crossings.append(t)
    }
    guard crossings.count > 2 else { return 0 }
    return Double(crossings.count - 1) / (crossings.last! - crossings.first!) * sampleRate
}

/// The frames from the first to the last sample whose magnitude exceeds `threshold` (half
/// the tones' amplitude: the middle of any fade at their ends).
func toneExtent(_ x: [Float], threshold: Float = 0.25) -> Range<Int> {
    guard let first = x.firstIndex(where: { abs($0) > threshold }), let last = x.lastIndex(where: { abs($0) > threshold }) else { return 0..<0 }
    return first..<(last + 1)
}

@Suite("Varispeed and time-pitch: frequency, duration, latency, bad input")
struct TimePitchTests {
    typealias V = VarispeedUnit.Parameter
    typealias T = TimePitchUnit.Parameter

    /// A 3 s tone of 1 kHz at 0.5 then 1 s of silence (so every frame of the tone comes out:
    /// with all the input given at once libsamplerate takes input ahead into its own buffer,
    /// which the silence pushes out). 3 s because WSOLA places the tone's ends to within a seek
    /// window (15–20 ms): over 3 s that is well inside the 1 % the duration is checked to.
    static let toneFrames = 144_000
    let tone = sine(frequency: 1000, frames: toneFrames, amplitude: 0.5) + [Float](repeating: 0, count: 48_000)

    @Test func timePitchRate1_5KeepsPitchAndShortensByRate() {
        let out = pullThrough([tone], soundTouch: true, tempo: 1.5, ratio: 1)[0]
        let extent = toneExtent(out)
        let middle = (extent.lowerBound + 2_000)..<(extent.upperBound - 2_000)
        let f = zeroCrossingFrequency(out, middle)
        let shortening = Double(Self.toneFrames) / Double(extent.count)
        print("time-pitch rate 1.5: \(f) Hz, tone \(extent.count) frames (÷\(shortening))")
        #expect(abs(f - 1000) <= 10, "frequency \(f) Hz")  // ± 1 %
        #expect(abs(shortening - 1.5) <= 0.015, "shortened by \(shortening)")  // ± 1 %
        #expect(out.allSatisfy { $0.isFinite })
    }

    @Test func timePitchPlus1200CentsDoublesPitchAtTheSameDuration() {
        let p = 2.0
        let out = pullThrough([tone], soundTouch: true, tempo: 1 / p, ratio: 1 / p)[0]
        let extent = toneExtent(out)
        let middle = (extent.lowerBound + 2_000)..<(extent.upperBound - 2_000)
        let f = zeroCrossingFrequency(out, middle)
        let ratio = Double(extent.count) / Double(Self.toneFrames)
        print("time-pitch +1200 cents: \(f) Hz, tone \(extent.count) frames (×\(ratio))")
        #expect(abs(f - 2000) <= 20, "frequency \(f) Hz")
        #expect(abs(ratio - 1) <= 0.01, "duration ×\(ratio)")
    }

    @Test func varispeedRate2DoublesFrequencyAndHalvesDuration() {
        let out = pullThrough([tone], soundTouch: false, tempo: 1, ratio: 0.5)[0]
        let extent = toneExtent(out)
        let middle = (extent.lowerBound + 1_000)..<(extent.upperBound - 1_000)
        let f = zeroCrossingFrequency(out, middle)
        let shortening = Double(Self.toneFrames) / Double(extent.count)
        print("varispeed rate 2: \(f) Hz, tone \(extent.count) frames (÷\(shortening))")
        #expect(abs(f - 2000) <= 20, "frequency \(f) Hz")
        #expect(abs(shortening - 2) <= 0.02, "shortened by \(shortening)")
    }

    @Test func varispeedCents1200IsRate2() throws {
        let a = VarispeedUnit(), b = VarispeedUnit()
        try a.setParameter(V.playbackRate, 2, scope: .global)
        try b.setParameter(V.playbackCents, 1200, scope: .global)
        #expect(try a.parameter(V.playbackCents, scope: .global) == 1200)
        #expect(try b.parameter(V.playbackRate, scope: .global) == 2)
        let input = [sine(frequency: 440, frames: 9_600), sine(frequency: 660, frames: 9_600)]
        let outA = try Chain([a]).render(input), outB = try Chain([b]).render(input)
        #expect(outA == outB)
        #expect(a.underrunFrames > 0, "live input at rate 2 runs short: counted, not a crash")
    }

    /// In a graph fed live (one slice of input per slice), rate 0.5 builds a backlog: a 0.5 s
    /// tone comes out for 1 s at half the frequency.
    @Test func varispeedRateHalfInAGraph() throws {
        let unit = VarispeedUnit()
        try unit.setParameter(V.playbackRate, 0.5, scope: .global)
        let input = sine(frequency: 1000, frames: 24_000, amplitude: 0.5) + [Float](repeating: 0, count: 72_000)
        let out = try Chain([unit], channels: 1).render([input], slice: 128)[0]
        let extent = toneExtent(out)
        let f = zeroCrossingFrequency(out, (extent.lowerBound + 1_000)..<(extent.upperBound - 1_000))
        print("varispeed rate 0.5 in a graph: \(f) Hz, tone \(extent.count) frames")
        #expect(abs(f - 500) <= 5)
        #expect(abs(Double(extent.count) / 48_000 - 1) <= 0.01)
        #expect(unit.droppedFrames == 0)
    }

    @Test func timePitchRateHalfInAGraphKeepsPitch() throws {
        let unit = TimePitchUnit()
        try unit.setParameter(T.rate, 0.5, scope: .global)
        let input = sine(frequency: 1000, frames: 24_000, amplitude: 0.5) + [Float](repeating: 0, count: 72_000)
        let out = try Chain([unit], channels: 1).render([input], slice: 128)[0]
        let extent = toneExtent(out)
        let f = zeroCrossingFrequency(out, (extent.lowerBound + 2_000)..<(extent.upperBound - 2_000))
        print("time-pitch rate 0.5 in a graph: \(f) Hz, tone \(extent.count) frames")
        #expect(abs(f - 1000) <= 10)
        #expect(abs(Double(extent.count) / 48_000 - 1) <= 0.02)
    }

    /// The delay of a noise burst at rate 1 (the lag of the cross-correlation's peak, searched
    /// ±600 frames around the report), against what the Latency property reports, at two slice
    /// sizes and two WSOLA overlaps: equal to within 2 frames.
    @Test(arguments: [(false, 256, 8), (true, 256, 8), (true, 100, 8), (true, 256, 16)])
    func reportedLatencyMatchesTheMeasuredDelay(timePitch: Bool, slice: Int, overlap: Int) throws {
        let unit: AudioUnit = timePitch ? TimePitchUnit() : VarispeedUnit()
        if timePitch { try unit.setParameter(T.overlap, Float(overlap), scope: .global) }
        let burst = [Float](repeating: 0, count: 4_800) + noise(frames: 24_000, seed: 3).map { $0 * 0.5 }
            + [Float](repeating: 0, count: 24_000)
        let out = try Chain([unit], channels: 1).render([burst], slice: slice)[0]
        guard case .float64(let reported) = try unit.getProperty(.latency, scope: .global, element: 0) else {
            Issue.record("Latency is a Float64"); return
        }
        let around = Int((reported * 48_000).rounded())
        // The lag of the cross-correlation's peak.
        var best = (lag: 0, value: -Double.infinity)
        for lag in max(0, around - 600)..<(around + 600) {
            var sum = 0.0
            var i = 4_800
            while i < 28_800 - 1, i + lag < out.count { sum += Double(burst[i]) * Double(out[i + lag]); i += 4 }
            if sum > best.value { best = (lag, sum) }
        }
        let latency = reported
        print("\(timePitch ? "time-pitch" : "varispeed") latency (slice \(slice), overlap \(overlap)): measured \(best.lag) frames, reported \(latency * 48_000)")
        #expect(best.lag > max(0, around - 600) && best.lag < around + 599, "the peak lies inside the searched window")
        #expect(abs(Double(best.lag) - latency * 48_000) <= 2, "measured \(best.lag) frames, reported \(latency * 48_000)")
    }

    @Test func outOfRangeParametersThrowAndChangeNothing() throws {
        let v = VarispeedUnit(), t = TimePitchUnit()
        for (id, bad) in [(V.playbackRate, Float(0.2)), (V.playbackRate, 4.5), (V.playbackCents, -2401), (V.playbackCents, 3000),
                          (V.playbackRate, .nan)] {
            #expect(throws: AudioUnitError.invalidParameter) { try v.setParameter(id, bad, scope: .global) }
        }
        #expect(try v.parameter(V.playbackRate, scope: .global) == 1)
        #expect(try v.parameter(V.playbackCents, scope: .global) == 0)
        for (id, bad) in [(T.rate, Float(0.2)), (T.rate, 4.01), (T.rate, .nan), (T.pitch, 1201), (T.pitch, -1201), (T.overlap, 2),
                          (T.overlap, 33), (T.pitch, .infinity)] {
            #expect(throws: AudioUnitError.invalidParameter) { try t.setParameter(id, bad, scope: .global) }
        }
        #expect(throws: AudioUnitError.invalidParameter) { try t.setParameter(2, 1, scope: .global) }  // no parameter 2
        #expect(throws: AudioUnitError.invalidScope) { try t.setParameter(T.rate, 2, scope: .input) }
        #expect(throws: AudioUnitError.invalidElement) { try t.setParameter(T.rate, 2, scope: .global, element: 1) }
        #expect(throws: AudioUnitError.invalidScope) { try v.setParameter(V.playbackRate, 2, scope: .output) }
        #expect(throws: AudioUnitError.invalidParameter) {
            try t.scheduleParameter(AudioUnitParameterEvent(id: T.rate, scope: .global, element: 0, bufferOffset: 0, .immediate(value: 5)))
        }
        #expect(try t.parameter(T.rate, scope: .global) == 1)
        #expect(try t.parameter(T.pitch, scope: .global) == 0)
        #expect(try t.parameter(T.overlap, scope: .global) == 8)
        #expect(try t.parameter(T.enablePeakLocking, scope: .global) == 1)
    }

    /// Real speech through both units, offline, with edits between renders: finite output of
    /// the input's length.
    @Test func speechThroughBothUnitsOffline() throws {
        let (speech, rate) = Speech.load()
        let v = VarispeedUnit(), t = TimePitchUnit()
        let chain = try Chain([v, t], channels: 1, sampleRate: Double(rate))
        var total = 0
        for (vr, tr, pitch) in [(Float(1), Float(1), Float(0)), (0.8, 1.3, 300), (1.25, 0.7, -700)] {
            try v.setParameter(V.playbackRate, vr, scope: .global)
            try t.setParameter(T.rate, tr, scope: .global)
            try t.setParameter(T.pitch, pitch, scope: .global)
            let out = try chain.render([speech], slice: 300)[0]
            #expect(out.count == speech.count)
            #expect(out.allSatisfy { $0.isFinite })
            #expect(out.map(abs).max()! < 4)
            total += out.count
        }
        #expect(total == 3 * speech.count)
    }
}

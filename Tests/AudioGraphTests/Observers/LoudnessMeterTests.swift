// Tests, Observers: LoudnessMeter against EBU Tech 3341's test signals, made with sox and rendered through a graph offline.
import AudioGraph
import AudioGraphTestSupport
import Foundation
import Testing

@Suite("Loudness (EBU R128) against EBU Tech 3341's signals")
struct LoudnessMeterTests {
    /// A 1 kHz sine made by sox at `level` dBFS (peak), `channels` channels, 48 kHz float, `seconds`
    /// long, faded in over 0.5 s (an abrupt start rings in the true-peak meter's 4× interpolator:
    /// 1.3 dB over the sine's peak, measured).
    static func sine(level: Double, channels: Int, seconds: Int = 20) throws -> [[Float]] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("loudness-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sox = Process()
        sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        sox.arguments = ["-n", "-r", "48000", "-c", String(channels), "-b", "32", "-e", "floating-point", path,
                         "synth", String(seconds), "sine", "1000", "vol", "\(level)dB", "fade", "h", "0.5"]
        try sox.run()
        sox.waitUntilExit()
        #expect(sox.terminationStatus == 0, "sox made the signal")
        return try #require(readAudioFile(path)).channels
    }

    /// `signal` through IO input → IO output offline, measured at the device input.
    static func measure(_ signal: [[Float]]) throws -> LoudnessMeter {
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, ioNode, destinationInputElement: IOUnit.outputElement)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: signal.count, outputChannels: signal.count)
        try graph.initialize()
        try graph.start()
        // Offline, the render runs far faster than real time: the ring holds all of it.
        let meter = try LoudnessMeter(graph: graph, node: ioNode, element: IOUnit.inputElement, bufferDuration: 30)
        _ = try renderer.render(input: signal, frameCount: signal[0].count)
        try meter.stop()
        #expect(meter.framesDropped == 0)
        return meter
    }

    @Test(arguments: [-23.0, -33.0])
    func stereoSineAt1kHzReadsItsLevelInLUFS(level: Double) throws {
        // EBU Tech 3341 tests 1 and 2: stereo 1 kHz sine at −23 / −33 dBFS, 20 s: M, S, I = −23.0 / −33.0 ± 0.1 LUFS.
        let meter = try LoudnessMeterTests.measure(try LoudnessMeterTests.sine(level: level, channels: 2))
        let momentary = try #require(meter.momentaryLoudness), shortTerm = try #require(meter.shortTermLoudness)
        let integrated = try #require(meter.integratedLoudness), peak = try #require(meter.truePeak)
        #expect(abs(momentary - level) <= 0.1, "momentary \(momentary) LUFS")
        #expect(abs(shortTerm - level) <= 0.1, "short-term \(shortTerm) LUFS")
        #expect(abs(integrated - level) <= 0.1, "integrated \(integrated) LUFS")
        #expect(abs(peak - level) <= 0.1, "true peak \(peak) dBTP")
        // A steady tone has no loudness range.
        #expect(try #require(meter.loudnessRange) < 0.1)
        print("loudness: stereo 1 kHz at \(level) dBFS: momentary \(momentary), short-term \(shortTerm), integrated \(integrated) LUFS, true peak \(peak) dBTP")
    }

    @Test func monoCountsItsOneChannelOnceAndSilenceReadsNothing() throws {
        // BS.1770: channels are summed; one channel at −23 dBFS is 3 LU below two.
        let mono = try LoudnessMeterTests.measure(try LoudnessMeterTests.sine(level: -23, channels: 1, seconds: 5))
        let momentary = try #require(mono.momentaryLoudness)
        #expect(abs(momentary - -26.0) <= 0.1, "mono momentary \(momentary) LUFS")
        let silent = try LoudnessMeterTests.measure([[Float](repeating: 0, count: 48_000), [Float](repeating: 0, count: 48_000)])
        #expect(silent.integratedLoudness == nil && silent.momentaryLoudness == nil && silent.truePeak == nil && silent.loudnessRange == nil)
        // reset() forgets: after it, nothing is measured.
        #expect(mono.integratedLoudness != nil)
        mono.reset()
        #expect(mono.integratedLoudness == nil && mono.truePeak == nil)
    }

    @Test func badNodesAndElementsAreTypedErrors() throws {
        let graph = AudioGraph()
        let io = try graph.addNode(IOUnit())
        #expect(throws: AudioUnitError.invalidElement) { try LoudnessMeter(graph: graph, node: io, element: 7) }
        #expect(throws: AudioUnitError.nodeNotFound) { try LoudnessMeter(graph: graph, node: AUNode(rawValue: 999), element: 0) }
        #expect(throws: AudioUnitError.invalidPropertyValue) { try LoudnessMeter(graph: graph, node: io, element: 1, bufferDuration: 0) }
    }
}

// Tests, Playback: AudioPlayer (the AVAudioPlayer analogue) through the offline renderer — seeking, loops, rates, scheduled starts, the end, volume and pan, metering, refusals.
import Foundation
import Synchronization
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A graph with an IO unit (its element 0, the speaker, is what the player feeds), rendered
/// offline at 48 kHz.
struct PlayerRig {
    let graph = AudioGraph()
    let renderer: OfflineRenderer

    init(channels: Int = 2) throws {
        _ = try graph.addNode(IOUnit())
        renderer = try OfflineRenderer(graph: graph, inputChannels: channels, outputChannels: channels, sampleRate: 48_000)
        try graph.initialize()
        try graph.start()
    }

    func render(_ frames: Int, _ player: AudioPlayer) throws -> [[Float]] { try renderBuffered(renderer, player.unit, frames: frames) }
}

/// Whether two runs of samples are equal (a Bool, so a failure does not print them).
func same(_ a: [Float], _ b: [Float]) -> Bool { a == b }

/// Waits (5 s at most) for `condition`.
func eventually(_ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(5)
    while !condition() { if Date() > deadline { return false }; usleep(1000) }
    return true
}

/// The frequency of a sine in `x` at `rate`, from its first and last rising zero crossings
/// (linearly interpolated): whole cycles over the time between them.
func measuredFrequency(_ x: ArraySlice<Float>, rate: Double) -> Double {
    var crossings: [Double] = []
    var i = x.startIndex
    while i + 1 < x.endIndex {
        if x[i] < 0, x[i + 1] >= 0 { crossings.append(Double(i) + Double(-x[i] / (x[i + 1] - x[i]))) }
        i += 1
    }
    guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
    return Double(crossings.count - 1) / ((last - first) / rate)
}

@Suite("AudioPlayer: AVAudioPlayer's calls on a graph")
struct AudioPlayerTests {
    @Test func durationIsExactAndCurrentTimeFollowsASeekWithinOnePeriod() throws {
        let path = temporaryPath("avplay-seek.wav")
        defer { unlink(path) }
        let file = [noise(frames: 48_000, seed: 41), noise(frames: 48_000, seed: 42)]
        writeWAV(path, file, sampleRate: 48_000)
        let rig = try PlayerRig()
        let player = try AudioPlayer(contentsOf: path, graph: rig.graph)
        #expect(player.duration == 1.0 && player.numberOfChannels == 2 && player.fileSampleRate == 48_000)
        #expect(player.currentTime == 0 && !player.isPlaying)
        #expect(player.play() && player.isPlaying)
        let first = try rig.render(4800, player)
        #expect(same(first[0], Array(file[0][0..<4800])), "the file from its start, exactly")
        #expect(abs(player.currentTime - 0.1) < 1e-9, "\(player.currentTime) s after 4800 frames")
        player.currentTime = 0.5
        #expect(player.currentTime == 0.5, "read back at once")
        let after = try rig.render(2048, player)
        #expect(player.currentTime >= 0.5 && player.currentTime <= 0.5 + 2048.0 / 48_000, "\(player.currentTime) s")
        let start = try #require(after[0].firstIndex { $0 != 0 })
        #expect(start <= 256, "one slice flushes the ring: \(start)")
        #expect(same(Array(after[0][start...]), Array(file[0][24_000..<(24_000 + 2048 - start)])), "playing from 0.5 s")
        let elapsed = Double(2048 - start) / 48_000
        #expect(abs(player.currentTime - (0.5 + elapsed)) < 1e-9, "\(player.currentTime) s")
        // Bad times change nothing.
        player.currentTime = -1
        #expect(player.lastError == .invalidPropertyValue)
        player.currentTime = .nan
        player.currentTime = 2
        #expect(abs(player.currentTime - (0.5 + elapsed)) < 1e-9)
        player.pause()
        #expect(!player.isPlaying)
        let paused = try rig.render(1024, player)
        #expect(paused[0].allSatisfy { $0 == 0 } && abs(player.currentTime - (0.5 + elapsed)) < 1e-9, "paused: silence, time kept")
        #expect(player.play())
        let resumed = try rig.render(256, player)
        let at = 24_000 + 2048 - start
        #expect(same(resumed[0], Array(file[0][at..<(at + 256)])), "resumed where it paused, no gap")
    }

    @Test func twoLoopsPlayThreeTimesWithoutAGapThenItFinishesAndPlaysAgainFromTheStart() throws {
        let path = temporaryPath("avplay-loops.wav")
        defer { unlink(path) }
        let file = [noise(frames: 3000, seed: 43), noise(frames: 3000, seed: 44)]
        writeWAV(path, file, sampleRate: 48_000)
        let rig = try PlayerRig()
        let player = try AudioPlayer(contentsOf: path, graph: rig.graph)
        let finished = Atomic<Int>(0)
        player.onFinish = { ok in finished.add(ok ? 1 : 100, ordering: .relaxed) }
        player.numberOfLoops = 2
        #expect(player.play())
        let out = try rig.render(12_000, player)
        #expect(same(Array(out[0][0..<9000]), (0..<9000).map { file[0][$0 % 3000] }), "three times, seamless at each wrap")
        #expect(out[0][9000...].allSatisfy { $0 == 0 }, "then silence")
        #expect(eventually { finished.load(ordering: .relaxed) == 1 }, "onFinish(true), once")
        #expect(!player.isPlaying)
        _ = try rig.render(512, player)  // the rewind's flush
        #expect(player.currentTime == 0, "back at the start: \(player.currentTime)")
        // Played again: from the start, the loops counted again.
        #expect(player.play())
        let again = try rig.render(10_000, player)
        #expect(same(Array(again[0][0..<9000]), (0..<9000).map { file[0][$0 % 3000] }))
        #expect(eventually { finished.load(ordering: .relaxed) == 2 })
        _ = try rig.render(512, player)  // the rewind's flush
        // For ever: still playing after ten lengths.
        player.numberOfLoops = -1
        #expect(player.play())
        let endless = try rig.render(30_000, player)
        #expect(same(endless[1], (0..<30_000).map { file[1][$0 % 3000] }) && player.isPlaying)
        player.stop()
        #expect(finished.load(ordering: .relaxed) == 2, "stop() does not call onFinish")
    }

    @Test(arguments: [22_050, 44_100])
    func aFileAtAnotherRatePlaysAtTheRightPitchAndKeepsItsLastTenMilliseconds(rate: Int) throws {
        let path = temporaryPath("avplay-\(rate).wav")
        defer { unlink(path) }
        writeWAV(path, [sine(frequency: 1000, sampleRate: Double(rate), frames: rate, amplitude: 0.5)], sampleRate: rate)
        let rig = try PlayerRig()
        let player = try AudioPlayer(contentsOf: path, graph: rig.graph)
        #expect(player.duration == 1.0 && player.fileSampleRate == Double(rate))
        #expect(player.play())
        let out = try rig.render(60_000, player)[0]
        let first = try #require(out.firstIndex { abs($0) > 1e-3 })
        let last = try #require(out.lastIndex { abs($0) > 1e-3 })
        let frequency = measuredFrequency(out[(first + 2400)..<(last - 2400)], rate: 48_000)
        #expect(abs(frequency - 1000) <= 1, "\(frequency) Hz from a \(rate) Hz file")
        #expect(abs(last - first + 1 - 48_000) <= 24, "1 s of sound: \(last - first + 1) frames")
        let tail = rms(out[(last - 480)...last])
        #expect(abs(decibels(tail / (0.5 / 2.0.squareRoot()))) < 0.5, "the last 10 ms at full level: \(decibels(tail / (0.5 / 2.0.squareRoot()))) dB")
        #expect(player.underrunFrames == 0)
    }

    @Test func playAtTimeStartsOnThatFrame() throws {
        let path = temporaryPath("avplay-at.wav")
        defer { unlink(path) }
        let file = [noise(frames: 4800, seed: 45), noise(frames: 4800, seed: 46)]
        writeWAV(path, file, sampleRate: 48_000)
        let rig = try PlayerRig()
        let player = try AudioPlayer(contentsOf: path, graph: rig.graph)
        #expect(player.prepareToPlay())
        _ = try rig.render(1000, player)
        #expect(player.deviceCurrentTime == 1000.0 / 48_000)
        #expect(player.play(atTime: player.deviceCurrentTime + 300.0 / 48_000) && player.isPlaying)
        let out = try rig.render(3000, player)
        #expect(out[0][0..<300].allSatisfy { $0 == 0 }, "silence before the time")
        #expect(same(Array(out[0][300..<3000]), Array(file[0][0..<2700])), "the file from frame 1300 of the graph's time, mid-slice")
        #expect(!player.play(atTime: -1) && player.lastError == .invalidPropertyValue)
        #expect(!player.play(atTime: .infinity))
    }

    @Test func volumePanAndRateAreTheMixersAndTheTimePitchsAndBadValuesChangeNothing() throws {
        let path = temporaryPath("avplay-gain.wav")
        defer { unlink(path) }
        let tone = sine(frequency: 500, frames: 96_000, amplitude: 0.5)
        writeWAV(path, [tone], sampleRate: 48_000)
        let rig = try PlayerRig()
        let player = try AudioPlayer(contentsOf: path, graph: rig.graph)
        player.volume = 0.5
        player.pan = -1
        #expect(player.play())
        _ = try rig.render(1024, player)  // past the ramps
        let out = try rig.render(4800, player)
        #expect(out[1].allSatisfy { $0 == 0 }, "panned hard left: nothing on the right")
        #expect(abs(rms(out[0][...]) - 0.5 * 0.5 / 2.0.squareRoot()) < 1e-3, "half volume on the left: \(rms(out[0][...]))")
        player.volume = 2
        #expect(player.lastError == .invalidParameter && player.volume == 0.5)
        player.volume = 0.5
        #expect(player.lastError == nil, "cleared by a setter that succeeds")
        player.pan = .nan
        #expect(player.pan == -1)
        player.rate = 2
        #expect(player.rate == 1 && player.lastError == .uninitialized, "rate needs enableRate before prepareToPlay")
        player.enableRate = true
        #expect(!player.enableRate && player.lastError == .initialized, "too late: the player is prepared")
        // Another player, in a graph of its own, with the rate enabled: twice as fast, the pitch kept.
        let other = try PlayerRig()
        let fast = try AudioPlayer(contentsOf: path, graph: other.graph)
        fast.enableRate = true
        fast.rate = 2
        #expect(fast.rate == 2)
        fast.rate = 5
        #expect(fast.rate == 2 && fast.lastError == .invalidParameter)
        player.stop()
        #expect(fast.play())
        let half = try other.render(24_000, fast)[0]
        #expect(abs(fast.currentTime - 1.0) < 0.05, "0.5 s at rate 2 is 1 s into the file: \(fast.currentTime) s")
        let sped = half + (try other.render(72_000, fast)[0])
        let first = try #require(sped.firstIndex { abs($0) > 1e-3 })
        let last = try #require(sped.lastIndex { abs($0) > 1e-3 })
        #expect(abs(Double(last - first) - 48_000) < 2400, "2 s of file in about 1 s: \(last - first) frames")
        let pitch = measuredFrequency(sped[(first + 4800)..<(last - 4800)], rate: 48_000)
        #expect(abs(pitch - 500) < 5, "the pitch kept: \(pitch) Hz")
    }

    @Test func meteringReadsTheOutputAsAVAudioPlayerDoes() throws {
        let path = temporaryPath("avplay-meter.wav")
        defer { unlink(path) }
        writeWAV(path, [sine(frequency: 1000, frames: 96_000, amplitude: 1)], sampleRate: 48_000)
        let rig = try PlayerRig()
        let player = try AudioPlayer(contentsOf: path, graph: rig.graph)
        player.updateMeters()
        #expect(player.averagePower(forChannel: 0) == -160, "metering off")
        player.isMeteringEnabled = true
        #expect(player.isMeteringEnabled && player.play())
        _ = try rig.render(96_000, player)
        player.updateMeters()
        #expect(abs(player.averagePower(forChannel: 0) - -3.01) <= 0.05, "\(player.averagePower(forChannel: 0))")
        #expect(abs(player.peakPower(forChannel: 1)) <= 0.05, "mono copied to both: \(player.peakPower(forChannel: 1))")
        #expect(player.averagePower(forChannel: 2) == -160)
    }

    @Test func badFilesNodesAndElementsAreTypedErrorsAndTheGraphIsUnchanged() throws {
        let rig = try PlayerRig()
        let before = rig.graph.nodeCount
        func reason(_ path: String, graph: AudioGraph? = nil) -> String? {
            do { _ = try AudioPlayer(contentsOf: path, graph: graph ?? rig.graph); return nil } catch {
                guard case .cannotOpen(_, let reason) = error else { return "\(error)" }
                return reason
            }
        }
        #expect(reason("/nonexistent.wav")?.contains("No such file") == true, "\(String(describing: reason("/nonexistent.wav")))")
        #expect(reason("/tmp") == "it is a directory")
        let text = temporaryPath("avplay-text.wav")
        defer { unlink(text) }
        try "not audio".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(reason(text) == "Format not recognised.", "\(String(describing: reason(text)))")
        let empty = temporaryPath("avplay-empty.wav")
        defer { unlink(empty) }
        writeWAV(empty, [[]], sampleRate: 48_000)
        #expect(reason(empty) == "it holds no audio frames")
        let path = temporaryPath("avplay-ok.wav")
        defer { unlink(path) }
        writeWAV(path, [[0.25, 0.5]], sampleRate: 48_000)
        #expect(throws: AudioPlayerError.audioUnit(.nodeNotFound)) { try AudioPlayer(contentsOf: path, graph: rig.graph, destination: AUNode(rawValue: 99)) }
        #expect(throws: AudioPlayerError.audioUnit(.invalidElement)) { try AudioPlayer(contentsOf: path, graph: rig.graph, element: 1) }
        #expect(throws: AudioPlayerError.audioUnit(.nodeNotFound)) { try AudioPlayer(contentsOf: path, graph: AudioGraph()) }
        let first = try AudioPlayer(contentsOf: path, graph: rig.graph)
        #expect(first.prepareToPlay())
        #expect(throws: AudioPlayerError.audioUnit(.invalidConnection)) { try AudioPlayer(contentsOf: path, graph: rig.graph) }
        first.removeFromGraph()
        #expect(rig.graph.nodeCount == before, "its nodes gone")
        // Not initialized: prepareToPlay refuses and adds nothing.
        let idle = AudioGraph()
        _ = try idle.addNode(IOUnit())
        let early = try AudioPlayer(contentsOf: path, graph: idle)
        #expect(!early.prepareToPlay() && early.lastError == .uninitialized && idle.nodeCount == 1)
        #expect(rig.graph.nodeCount == before)
    }
}

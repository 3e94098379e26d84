// Tests, Units: file player through the offline renderer.
import CSndFile
import Testing
@testable import AudioGraph
import AudioGraphTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Writes `[channel][frame]` floats to a Float32 WAV file with libsndfile.
func writeWAV(_ path: String, _ channels: [[Float]], sampleRate: Int) {
    var info = SF_INFO()
    info.samplerate = Int32(sampleRate)
    info.channels = Int32(channels.count)
    info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
    let file = sf_open(path, Int32(SFM_WRITE), &info)!
    let frames = channels[0].count
    var interleaved = [Float](repeating: 0, count: frames * channels.count)
    for f in 0..<frames { for c in 0..<channels.count { interleaved[f * channels.count + c] = channels[c][f] } }
    sf_writef_float(file, interleaved, sf_count_t(frames))
    sf_close(file)
}

/// A player feeding IO element 0, rendered offline.
struct PlayerGraph {
    let graph = AudioGraph()
    let player = AudioFilePlayerUnit()
    let renderer: OfflineRenderer

    init() throws {
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        let playerNode = try graph.addNode(player)
        try graph.connectNodeInput(playerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
        renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2, sampleRate: 48_000)
        try graph.initialize()
        try graph.start()
    }

    func render(_ frames: Int) throws -> [[Float]] { try renderBuffered(renderer, player, frames: frames) }
}

/// Renders `frames` in slices of 256 through the offline renderer, which waits before each
/// slice for `player`'s disk thread to have read it (``OfflineRenderer/waitsForFilePlayers``):
/// the comparisons are about the data, not the disk's speed.
func renderBuffered(_ renderer: OfflineRenderer, _ player: AudioFilePlayerUnit, frames: Int) throws -> [[Float]] {
    try renderer.render(input: [], frameCount: frames, sliceFrames: 256)
}

@Suite("File player through the offline renderer")
struct AudioFilePlayerTests {
    /// play() returns with the start of the file read: the very next slice, rendered at once,
    /// is the file's first frames, not an underrun (as AVAudioPlayer's prepareToPlay).
    @Test func theFirstSliceAfterPlayIsTheFilesStartNotAnUnderrun() throws {
        let path = temporaryPath("player-start.wav")
        defer { unlink(path) }
        let file = [noise(frames: 48_000, seed: 31), noise(frames: 48_000, seed: 32)]
        writeWAV(path, file, sampleRate: 48_000)
        let p = try PlayerGraph()
        try p.player.open(path)
        try p.player.play()
        let slice = try p.renderer.render(input: [], frameCount: 256)
        #expect(p.player.underrunCount == 0)
        #expect(slice[0] == Array(file[0][0..<256]) && slice[1] == Array(file[1][0..<256]))
    }

    /// Same rate and channels: the file comes out exactly, then silence; no underrun.
    @Test func streamsAFileExactly() throws {
        let path = temporaryPath("player.wav")
        defer { unlink(path) }
        let file = [noise(frames: 20_000, seed: 21), noise(frames: 20_000, seed: 22)]
        writeWAV(path, file, sampleRate: 48_000)
        let p = try PlayerGraph()
        try p.player.open(path)
        #expect(p.player.fileFormat?.frames == 20_000 && p.player.fileFormat?.channels == 2)
        try p.player.play()
        let out = try p.render(30_000)
        #expect(Array(out[0][0..<20_000]) == file[0] && Array(out[1][0..<20_000]) == file[1])
        #expect(out[0][20_000...].allSatisfy { $0 == 0 })
        #expect(p.player.underrunCount == 0 && p.player.framesPlayed == 20_000 && p.player.isAtEnd)
    }

    /// Looping is seamless; a seek continues from the new position.
    @Test func loopsAndSeeks() throws {
        let path = temporaryPath("loop.wav")
        defer { unlink(path) }
        let file = [noise(frames: 3000, seed: 23), noise(frames: 3000, seed: 24)]
        writeWAV(path, file, sampleRate: 48_000)
        let p = try PlayerGraph()
        try p.player.open(path)
        p.player.isLooping = true
        try p.player.play()
        let looped = try p.render(10_000)
        #expect(looped[0] == (0..<10_000).map { file[0][$0 % 3000] }, "three and a third loops, seamless")
        try p.player.seek(toFrame: 1000)
        p.player.isLooping = false
        let after = try p.render(6000)[1]
        let start = try #require(after.firstIndex { $0 != 0 }, "playback resumed after the seek")
        try #require(start + 2000 <= after.count, "resumed \(start) frames after the seek")
        #expect(start <= 512, "one silent slice flushes the ring, then the new position plays: \(start)")
        #expect(Array(after[start..<start + 2000]) == Array(file[1][1000..<3000]))
        #expect(p.player.underrunCount == 0)
    }

    /// Another rate and channel count: the output is the file run through one AudioConverter.
    @Test func convertsRateAndChannels() throws {
        let path = temporaryPath("mono441.wav")
        defer { unlink(path) }
        let file = [sine(frequency: 440, sampleRate: 44_100, frames: 22_050, amplitude: 0.5)]
        writeWAV(path, file, sampleRate: 44_100)
        let p = try PlayerGraph()
        try p.player.open(path)
        try p.player.play()
        let out = try p.render(30_000)
        let converter = try AudioConverter(from: try .float32(sampleRate: 44_100, channels: 1, interleaved: true),
                                           to: try .float32(sampleRate: 48_000, channels: 2, interleaved: true), maximumInputFrames: 1024)
        let expected = try runConverter(converter, file, chunk: 1024)
        #expect(abs(expected[0].count - 24_000) <= 2)
        #expect(Array(out[0][0..<expected[0].count]) == expected[0] && Array(out[1][0..<expected[1].count]) == expected[1])
        #expect(p.player.isAtEnd && p.player.underrunCount == 0)
    }

    /// Rendering faster than the disk thread fills: missing frames are silence and counted,
    /// never waited for; what does play is the file, in order.
    @Test func underrunsRenderSilenceAndAreCounted() throws {
        let path = temporaryPath("long.wav")
        defer { unlink(path) }
        let file = [noise(frames: 480_000, seed: 25), noise(frames: 480_000, seed: 26)]
        writeWAV(path, file, sampleRate: 48_000)
        let p = try PlayerGraph()
        try p.player.open(path)
        try p.player.play()
        p.renderer.waitsForFilePlayers = false  // as a live device: no waiting for the disk
        let out = try p.renderer.render(input: [], frameCount: 240_000, sliceFrames: 256)
        #expect(p.player.framesPlayed + p.player.underrunFrames == 240_000)
        let played = out[0].filter { $0 != 0 }
        #expect(played == Array(file[0][0..<played.count]), "the frames that played are the file's, in order")
        #expect(UInt64(played.count) == p.player.framesPlayed)
    }

    @Test func errorsLeaveThePlayerAsItWas() throws {
        let p = try PlayerGraph()
        #expect(throws: AudioUnitError.invalidFile) { try p.player.play() }
        #expect(throws: AudioUnitError.invalidFile) { try p.player.open("/nonexistent/file.wav") }
        #expect(throws: AudioUnitError.invalidFile) { try p.player.seek(toFrame: 0) }
        let path = temporaryPath("short.wav")
        defer { unlink(path) }
        writeWAV(path, [[0.5, 0.25]], sampleRate: 48_000)
        try p.player.open(path)
        #expect(throws: AudioUnitError.invalidPropertyValue) { try p.player.seek(toFrame: 3) }
        #expect(throws: AudioUnitError.invalidFile) { try p.player.open("/etc/hostname") }
        #expect(p.player.fileFormat?.frames == 2, "a failed open keeps the open file")
    }
}

// voice-memo: AVAudioRecorder and AVAudioPlayer code ported — record 12 kHz mono speech to Opus with a level bar, read its loudness in LUFS, then play it back with a seek and loops — on JACK.
//
//   swift run voice-memo [--server NAME] [--name CLIENT] [--input PORT|REGEX] [--seconds S]
//                        [--seek T] [--loops N] [--no-playback] FILE.opus
//
// Exit status: 0 when done; 1 when JACK, a write or the playback fails; 2 for bad options or a
// file that cannot be created (refused before joining JACK).
//
// The Apple original records and plays a voice memo like this:
//
//     let settings: [String: Any] = [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 12000,
//                                    AVNumberOfChannelsKey: 1, AVEncoderAudioQualityKey: AVAudioQuality.high.rawValue]
//     recorder = try AVAudioRecorder(url: url, settings: settings)
//     recorder.isMeteringEnabled = true
//     recorder.record(forDuration: 5)
//     // a timer: recorder.updateMeters(); bar.level = recorder.averagePower(forChannel: 0)
//     // audioRecorderDidFinishRecording(_:successfully:) →
//     player = try AVAudioPlayer(contentsOf: url)
//     player.numberOfLoops = 1; player.currentTime = 1.0; player.play()
//     // audioPlayerDidFinishPlaying(_:successfully:)
//
// Here: the same calls on AudioRecorder and AudioPlayer in one graph on JACK (the microphone is
// the IO unit's element 1, fed by the JACK input port; the player plays into element 0, the
// output port). AAC is not in libsndfile: Ogg Opus at 64 kbit/s stands for it. The delegate
// callbacks are the onFinish closures; the timer is the main loop.
import AudioGraph
import AudioGraphJACK
import Foundation
import Synchronization

/// The file voice-memo made to check the path, until a recording starts in it: removed when the
/// run fails before that, so a failed run leaves no empty file behind.
/// SAFETY (`nonisolated(unsafe)`): set and read on the main thread only.
nonisolated(unsafe) var madeButEmpty: String?

/// Prints `voice-memo: message` on stderr, removes a file it made that holds nothing, and exits.
func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("voice-memo: \(message)\n".utf8))
    if let path = madeButEmpty { unlink(path) }
    exit(status)
}

/// A level bar of 30 cells over −60…0 dBFS: `[##########--------------------] -40.1 dBFS`.
func bar(_ dBFS: Float) -> String {
    let cells = Int(((max(-60, min(0, dBFS)) + 60) / 2).rounded())
    return "[" + String(repeating: "#", count: cells) + String(repeating: "-", count: 30 - cells) + "] "
        + String(format: "%.1f dBFS", dBFS)
}

// 1. Options, checked before anything is made.
var options = JACKDriver.Options()
options.clientName = "voice-memo"
options.inputChannels = 1
options.outputChannels = 1
var input: String?
var seconds = 5.0, seek = 0.0, loops = 0
var playback = true
var path: String?
var arguments = CommandLine.arguments.dropFirst()
@MainActor func value(_ option: String) -> String {
    guard let value = arguments.popFirst() else { fail("\(option) needs a value", status: 2) }
    return value
}
@MainActor func number(_ option: String, _ range: ClosedRange<Double>) -> Double {
    let text = value(option)
    guard let n = Double(text), n.isFinite, range.contains(n) else {
        fail("\(option) takes a number \(range.lowerBound)…\(range.upperBound), not '\(text)'", status: 2)
    }
    return n
}
while let argument = arguments.popFirst() {
    switch argument {
    case "--server": options.serverName = value(argument)
    case "--name": options.clientName = value(argument)
    case "--input": input = value(argument)
    case "--seconds": seconds = number(argument, 0.1...3600)
    case "--seek": seek = number(argument, 0...3600)
    case "--loops":
        // A count of plays: 1.5 is not one (it was taken as 1).
        let n = number(argument, -1...100)
        guard n == n.rounded() else { fail("--loops takes a whole number -1…100, not '\(n)'", status: 2) }
        loops = Int(n)
    case "--no-playback": playback = false
    case "--help":
        print("usage: voice-memo [--server NAME] [--name CLIENT] [--input PORT] [--seconds S] [--seek T] [--loops N] [--no-playback] FILE.opus")
        print("records S seconds (default 5) of the input as 12 kHz mono Ogg Opus at 64 kbit/s with a level bar, prints its loudness, then plays it")
        print("to the output from T seconds in, N more times (-1: until interrupted); exit status 0, 1 when JACK, a write or the playback fails,")
        print("2 for bad options or a file that cannot be created")
        exit(0)
    default:
        guard path == nil, !argument.hasPrefix("-") else { fail("unknown option '\(argument)' (try --help)", status: 2) }
        path = argument
    }
}
guard let path, path.hasSuffix(".opus") else { fail("name a .opus file to record to", status: 2) }
guard seek < seconds else { fail("--seek \(seek) is past the recording's \(seconds) s", status: 2) }
// A file that cannot be made is refused before anything joins JACK (the recorder makes it anew).
// One made here is removed again if the run fails before recording into it.
let existed = access(path, F_OK) == 0
let probeDescriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
guard probeDescriptor >= 0 else { fail("cannot create \(path): \(String(cString: strerror(errno)))", status: 2) }
close(probeDescriptor)
if !existed { madeButEmpty = path }

// 2. The graph: the IO unit, its microphone recorded and its loudness measured.
let graph = AudioGraph()
let ioNode: AUNode
let recorder: AudioRecorder
do {
    ioNode = try graph.addNode(IOUnit())
    try graph.ioUnit?.setInputEnabled(true)
} catch {
    fail("\(error)")
}
let driver: JACKDriver
do {
    driver = try JACKDriver(graph: graph, options: options)
} catch {
    fail("\(error)")
}
// The recorder: AVAudioRecorder's settings dictionary as RecordingSettings; the file is made
// now, so a bad path fails before anything runs.
do {
    var settings = RecordingSettings(fileType: .opus, sampleRate: 12_000, channels: 1)
    settings.bitRate = 64_000
    recorder = try AudioRecorder(path: path, settings: settings, graph: graph, node: ioNode)
    guard recorder.prepareToRecord() else { fail("\(recorder.lastError.map { "\($0)" } ?? "cannot create \(path)")", status: 2) }
} catch {
    fail("\(error)", status: 2)
}
recorder.isMeteringEnabled = true
let finished = Atomic<Int>(0)
recorder.onFinish = { ok in finished.store(ok ? 1 : -1, ordering: .releasing) }

// 3. Start, connect, record for the duration with a level bar four times a second.
let loudness: LoudnessMeter
do {
    try driver.start()
    loudness = try LoudnessMeter(graph: graph, node: ioNode, element: IOUnit.inputElement)
    // --input: an exact port name or an extended regular expression (the first port it matches).
    if let source = try input.map({ try driver.ports(matching: $0, sources: true, timeout: 2)[0] }) ?? driver.physicalPorts(capture: true).first {
        try driver.connect(source, to: driver.inputPortNames[0])
    }
    if playback, let sink = driver.physicalPorts(capture: false).first { try driver.connect(driver.outputPortNames[0], to: sink) }
} catch {
    fail("\(error)")
}
guard recorder.record(forDuration: seconds) else { fail("\(recorder.lastError.map { "\($0)" } ?? "cannot record")") }
madeButEmpty = nil   // recording: the file is the user's now, whatever happens next
print("recording \(driver.inputPortNames[0]) to \(path) (Ogg Opus, 12000 Hz, mono, 64 kbit/s) for \(seconds) s")
while finished.load(ordering: .acquiring) == 0 {
    usleep(250_000)
    recorder.updateMeters()
    print("level \(bar(recorder.averagePower(forChannel: 0))), peak \(String(format: "%.1f", recorder.peakPower(forChannel: 0))); \(String(format: "%.2f", recorder.currentTime)) s")
    fflush(nil)
}
recorder.stop()
guard finished.load(ordering: .acquiring) == 1 else { fail("the recording failed: \(recorder.lastError.map { "\($0)" } ?? "?")") }
let integrated = loudness.integratedLoudness.map { String(format: "%.1f LUFS", $0) } ?? "below the gate"
let peak = loudness.truePeak.map { String(format: "%.1f dBTP", $0) } ?? "-inf dBTP"
try? loudness.stop()
print("recorded \(String(format: "%.2f", recorder.currentTime)) s; integrated loudness \(integrated), true peak \(peak)")
guard playback else { driver.close(); exit(0) }

// 4. Play it back: AVAudioPlayer's calls, from --seek, --loops more times.
let player: AudioPlayer
do {
    player = try AudioPlayer(contentsOf: path, graph: graph)
} catch {
    fail("\(error)")
}
let played = Atomic<Int>(0)
player.onFinish = { ok in played.store(ok ? 1 : -1, ordering: .releasing) }
player.numberOfLoops = loops
player.isMeteringEnabled = true
guard player.prepareToPlay() else { fail("cannot play \(path): \(player.lastError.map { "\($0)" } ?? "?")") }
player.currentTime = seek
guard player.play() else { fail("cannot play \(path): \(player.lastError.map { "\($0)" } ?? "?")") }
print("playing \(path) (\(String(format: "%.2f", player.duration)) s, \(Int(player.fileSampleRate)) Hz) to \(driver.outputPortNames[0]) from \(seek) s, \(loops < 0 ? "looping" : "\(loops + 1) time(s)")")
while played.load(ordering: .acquiring) == 0 {
    usleep(250_000)
    player.updateMeters()
    print("playing \(bar(player.averagePower(forChannel: 0))); \(String(format: "%.2f", player.currentTime)) s")
    fflush(nil)
}
print("played; back at \(String(format: "%.2f", player.currentTime)) s")
player.removeFromGraph()
driver.close()

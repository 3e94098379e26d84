// speech-recorder: a RemoteIO speech recorder ported — the microphone as 16 kHz 16-bit mono, a level from the input callback, and a WAV file — on JACK.
//
//   swift run speech-recorder [--server NAME] [--name CLIENT] [--input PORT] [--seconds S] FILE.wav
//
// Exit status: 0 when done; 1 when JACK or a write fails; 2 for bad options or a file that
// cannot be created (refused before joining JACK).
//
// Records until `quit` (or end of input) on stdin, or exactly S seconds; prints the level twice a
// second. Without --input it records the server's first physical capture port.
//
// The Apple original (RemoteIO, iOS) set the microphone's format and pulled it in an input
// callback:
//
//     AudioStreamBasicDescription fmt = { .mSampleRate = 16000, .mFormatID = kAudioFormatLinearPCM,
//         .mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
//         .mBitsPerChannel = 16, .mChannelsPerFrame = 1, .mBytesPerFrame = 2, … };
//     AudioUnitSetProperty(rio, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 1, &fmt, sizeof fmt);
//     // input callback: AudioUnitRender(rio, …, 1, frames, &bufferList); level = peak of the samples;
//     //                 ExtAudioFileWriteAsync(file, frames, &bufferList);
//
// Here: the same format on the IO unit's element 1 (output scope); the input callback receives
// the converted samples (no AudioUnitRender needed) and keeps the peak in an Atomic for the
// main thread; a Recorder writes the element to the file on its own thread (the
// ExtAudioFileWriteAsync part). Nothing downstream uses the microphone, so changing element 1's
// format costs nothing here; to record while monitoring at the device's rate, leave the format
// alone and give the Recorder `RecordingSettings(sampleRate: 16_000, channels: 1)` instead.
import AudioGraph
import AudioGraphJACK
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The input callback's level, read and reset by the main thread: the largest |sample| since
/// the last read, as Int16 magnitude (an Atomic in a Sendable class; RealTimeRules, "Sharing
/// state with a callback").
final class PeakLevel: Sendable {
    let peak = Atomic<Int>(0)
}

/// Prints `speech-recorder: message` on stderr and exits. (Not `fputs(…, stderr)`: Swift 6 refuses
/// Glibc's mutable `stderr` global; write(2) on descriptor 2 needs none.)
func fail(_ message: String, status: Int32 = 1) -> Never {
    let line = "speech-recorder: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(status)
}

var options = JACKDriver.Options()
options.clientName = "speech-recorder"
options.inputChannels = 1
options.outputChannels = 1
var input: String?
var seconds: Double?
var path: String?
var arguments = CommandLine.arguments.dropFirst()
@MainActor func value(_ option: String) -> String {  // reads top-level state: main-actor code
    guard let value = arguments.popFirst() else { fail("\(option) needs a value", status: 2) }
    return value
}
while let argument = arguments.popFirst() {
    switch argument {
    case "--server": options.serverName = value(argument)
    case "--name": options.clientName = value(argument)
    case "--input": input = value(argument)
    case "--seconds":
        guard let s = Double(value(argument)), s > 0, s.isFinite else { fail("--seconds takes a positive number", status: 2) }
        seconds = s
    case "--help":
        print("usage: speech-recorder [--server NAME] [--name CLIENT] [--input PORT] [--seconds S] FILE.wav")
        print("records 16 kHz 16-bit mono until `quit` on stdin (or its end), or exactly S seconds; exit status 0, 1 when JACK or a write fails, 2 for bad options or a file that cannot be created")
        exit(0)
    default:
        guard path == nil, !argument.hasPrefix("-") else { fail("unknown option '\(argument)' (try --help)", status: 2) }
        path = argument
    }
}
guard let path, path.hasSuffix(".wav") else { fail("name a .wav file to record to", status: 2) }

let graph = AudioGraph()
let io = IOUnit()
let level = PeakLevel()
let ioNode: AUNode
do {
    ioNode = try graph.addNode(io)
    try io.setInputEnabled(true)
    // The seed's kAudioUnitProperty_StreamFormat on element 1, output scope: 16 kHz Int16 mono.
    try io.setStreamFormat(.int16(sampleRate: 16_000, channels: 1), scope: .output, element: IOUnit.inputElement)
    try io.setProperty(.setInputCallback, scope: .global, element: 0, .inputCallback({ _, buffers in
        var peak = 0
        for sample in buffers.int16Samples(0) { peak = max(peak, abs(Int(sample))) }
        if peak > level.peak.load(ordering: .relaxed) { level.peak.store(peak, ordering: .relaxed) }
    }))
} catch {
    fail("\(error)")
}

// The file: created before joining JACK, so a bad path fails early and changes nothing.
let recorder: Recorder
do {
    recorder = try Recorder(graph: graph, node: ioNode, element: IOUnit.inputElement, path: path,
                            settings: RecordingSettings(fileType: .wav, sampleFormat: .int16,
                                                        // --seconds: exactly that many frames at 16 kHz
                                                        frameLimit: seconds.map { UInt64(($0 * 16_000).rounded()) }))
} catch {
    fail("\(error)", status: 2)
}
let driver: JACKDriver
do {
    driver = try JACKDriver(graph: graph, options: options)
    try driver.start()
    let source = input ?? driver.physicalPorts(capture: true).first
    if let source { try driver.connect(source, to: driver.inputPortNames[0]) }
} catch {
    fail("\(error)")
}
print("recording \(driver.inputPortNames[0]) to \(path) (wav, int16, 16000 Hz, mono)")
fflush(nil)

// Twice a second: the level; stop on `quit`, or end of input without --seconds, or when the
// recorder has its --seconds of frames (it stops writing at exactly that many; looked at every 20 ms).
var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
var inputOpen = true
var running = true
var sinceLevel = 0
while running {
    if poll(&descriptor, inputOpen ? 1 : 0, seconds == nil ? 500 : 20) > 0 {
        if let line = readLine() { if line == "quit" { running = false } }
        else if seconds == nil { running = false } else { inputOpen = false }
    }
    if recorder.isComplete { running = false }
    sinceLevel += seconds == nil ? 500 : 20
    guard sinceLevel >= 500 || !running else { continue }
    sinceLevel = 0
    let peak = level.peak.exchange(0, ordering: .relaxed)
    let dBFS = peak > 0 ? 20 * log10(Double(peak) / 32_768) : -160
    print("level: \(Int(dBFS.rounded())) dBFS peak; \(recorder.framesWritten) frames written")
    fflush(nil)
}
do { try recorder.stop() } catch { fail("\(error)") }
driver.close()
print("recorded \(recorder.framesWritten) frames to \(path) (\(recorder.framesDropped) dropped)")

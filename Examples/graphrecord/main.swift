// graphrecord: records JACK input to a WAV or FLAC file until SIGINT/SIGTERM, showing the input level (the example of the TapsMetersRecording article, Sources/AudioGraph/AudioGraph.docc).
//
//   swift run graphrecord [--server NAME] [--name CLIENT] [--channels N] [--input PORT]...
//                         [--format int16|int24|float32] [--rate HZ] FILE.wav|FILE.flac
//
// The chain is IO input → IO output (a monitor); a Recorder and a LevelMeter watch IO element 1
// (the device input). Every write updates the file's header, so even `kill -9` leaves a
// readable file; SIGINT/SIGTERM stop the recorder, which writes the rest and closes the file.
import AudioGraph
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

let tool = Tool(name: "graphrecord")
let usage = "usage: graphrecord [--server NAME] [--name CLIENT] [--channels N] [--input PORT]... [--format int16|int24|float32] [--rate HZ] FILE"

/// One decimal place.
func tenths(_ x: Float) -> String { String(Float(Int((x * 10).rounded())) / 10) }

// Options: the client's (no autoconnect: only the --input ports are recorded), the file's.
Tool.parkClosedStandardStreams()
var client = ClientOptions()
client.routing.autoconnect = false
var sampleFormat: RecordingSettings.SampleFormat?
var rate: Double?
var path: String?
var arguments = Arguments(tool: tool)
while let argument = arguments.next() {
    if client.parse(argument, from: &arguments, accepted: [.name, .server, .channels, .inputs]) { continue }
    switch argument {
    case "--format": sampleFormat = arguments.sampleFormat(for: argument)
    case "--rate":
        guard let r = Double(arguments.value(for: argument)) else { tool.fail("--rate takes a number of Hz", status: ExitStatus.usage) }
        rate = r
    case "--help": tool.help(usage)
    default:
        guard path == nil, !argument.hasPrefix("--") else { arguments.unknown(argument) }
        path = argument
    }
}
guard let path else { tool.fail("say which file to record to", status: ExitStatus.usage) }
var settings: RecordingSettings
do { settings = try RecordingSettings.forPath(path, sampleFormat: sampleFormat) } catch { tool.fail("\(error)") }
settings.sampleRate = rate

// Signals only wake the main loop; it stops the recorder (never the handler). A second signal
// does not cut the recording short: the recorder finishes writing.
QuitSignals.install([SIGINT, SIGTERM], secondSignalExits: false)

// The graph: the device input straight to the device output.
let graph = AudioGraph()
let io = IOUnit()
let ioNode: AUNode
do {
    ioNode = try graph.addNode(io)
    try io.setInputEnabled(true)
    try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, ioNode, destinationInputElement: IOUnit.outputElement)
} catch {
    tool.fail("\(error)")
}

// The client (registers in_1…, out_1…), started (initializes the graph), then connected.
let driver = tool.openDriver(graph: graph, options: client.driverOptions(defaultName: "graphrecord"))
let meter: LevelMeter, recorder: Recorder
do {
    try driver.start()
    _ = try client.routing.connect(driver)   // unconnected channels record silence, as asked
    meter = try graph.installLevelMeter(on: ioNode, element: IOUnit.inputElement)
    recorder = try Recorder(graph: graph, node: ioNode, element: IOUnit.inputElement, path: path, settings: settings)
} catch {
    driver.close()
    tool.fail("\(error)")
}
tool.say("recording \(driver.clientName):in_1… to \(path) (\(settings.fileType.rawValue), \(settings.sampleFormat.rawValue), \(Int(recorder.settings.sampleRate!)) Hz)")

// Until a signal: the level once a second.
let loop = MainLoop(tool: tool, driver: driver)
var wakes = 0
loop.onWake = {
    if wakes > 0 {
        let average = (try? meter.averagePower(channel: 0)) ?? LevelMeter.silence
        let peak = (try? meter.peakPower(channel: 0)) ?? LevelMeter.silence
        tool.say("level: \(tenths(average)) dBFS RMS, \(tenths(peak)) dBFS peak; \(recorder.framesWritten) frames written")
    }
    wakes += 1
    return 1000
}
var status = loop.run()

// The recorder writes the rest and closes the file; then the client closes.
do throws(RecorderError) {
    try recorder.stop()
    tool.say("recorded \(recorder.framesWritten) frames to \(path) (\(recorder.framesDropped) dropped)")
} catch {
    tool.complain("\(error)")
    status = ExitStatus.failure
}
QuitSignals.withDeadline(seconds: 2, exitStatus: status) { driver.close() }
exit(status)

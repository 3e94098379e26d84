// graphrecord: records JACK input to a WAV or FLAC file until SIGINT/SIGTERM, while showing
// the input level. The example of Docs/TapsMetersRecording.md:
//
//   swift run graphrecord [--server NAME] [--name CLIENT] [--channels N] [--input PORT]...
//                         [--format int16|int24|float32] [--rate HZ] FILE.wav|FILE.flac
//
// The chain is IO input → IO output (a monitor); a Recorder and a LevelMeter watch IO element 1
// (the device input). Every write updates the file's header, so even `kill -9` leaves a
// readable file; SIGINT/SIGTERM stop the recorder, which writes the rest and closes the file.
import AudioGraph
import AudioGraphJACK
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Writes a line straight to a file descriptor: unbuffered, so it reaches a pipe at once.
func say(_ text: String, to fd: Int32 = STDOUT_FILENO) {
    let bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
        offset += n
    }
}

func fail(_ message: String, status: Int32) -> Never {
    say("graphrecord: \(message)", to: STDERR_FILENO)
    exit(status)
}

/// One decimal place.
func tenths(_ x: Float) -> String { String(Float(Int((x * 10).rounded())) / 10) }

var options = JACKDriver.Options()
options.clientName = "graphrecord"
var inputs: [String] = []
var sampleFormat: RecordingSettings.SampleFormat?
var rate: Double?
var path: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    func value() -> String {
        guard let v = arguments.popFirst() else { fail("\(argument) needs a value", status: 2) }
        return v
    }
    switch argument {
    case "--server": options.serverName = value()
    case "--name": options.clientName = value()
    case "--channels":
        guard let n = Int(value()), n >= 1, n <= 64 else { fail("--channels takes 1…64", status: 2) }
        options.inputChannels = n; options.outputChannels = n
    case "--input": inputs.append(value())
    case "--format":
        guard let f = RecordingSettings.SampleFormat(rawValue: value()) else { fail("--format takes int16, int24 or float32", status: 2) }
        sampleFormat = f
    case "--rate":
        guard let r = Double(value()) else { fail("--rate takes a number of Hz", status: 2) }
        rate = r
    case "--help":
        say("usage: graphrecord [--server NAME] [--name CLIENT] [--channels N] [--input PORT]... [--format int16|int24|float32] [--rate HZ] FILE")
        exit(0)
    default:
        guard path == nil, !argument.hasPrefix("--") else { fail("unknown option \(argument)", status: 2) }
        path = argument
    }
}
guard let path else { fail("say which file to record to", status: 2) }

// Signals only set a flag; the main loop stops the recorder (never from the handler).
nonisolated(unsafe) var quit: sig_atomic_t = 0
// A parent may have started us with these signals blocked (threads of a test runner do).
var quitSignals = sigset_t()
sigemptyset(&quitSignals)
for sig in [SIGINT, SIGTERM] {
    sigaddset(&quitSignals, sig)
    signal(sig) { _ in quit = 1 }
}
pthread_sigmask(SIG_UNBLOCK, &quitSignals, nil)

do {
    var settings = try RecordingSettings.forPath(path, sampleFormat: sampleFormat)
    settings.sampleRate = rate

    let graph = AudioGraph()
    let io = IOUnit()
    let ioNode = try graph.addNode(io)
    try io.setInputEnabled(true)
    try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, ioNode, destinationInputElement: IOUnit.outputElement)
    let driver = try JACKDriver(graph: graph, options: options)   // registers in_1…, out_1…
    defer { driver.close() }
    try driver.start()                                             // initializes and starts the graph
    for (k, port) in inputs.enumerated() where k < driver.inputPortNames.count {
        try driver.connect(port, to: driver.inputPortNames[k], timeout: 2)
    }

    let meter = try graph.installLevelMeter(on: ioNode, element: IOUnit.inputElement)
    let recorder = try Recorder(graph: graph, node: ioNode, element: IOUnit.inputElement, path: path, settings: settings)
    say("recording \(driver.clientName):in_1… to \(path) (\(settings.fileType.rawValue), \(settings.sampleFormat.rawValue), \(Int(recorder.settings.sampleRate!)) Hz)")

    var ticks = 0
    while quit == 0 && !driver.isShutDown {
        usleep(50_000)
        ticks += 1
        if ticks % 20 == 0 {  // once a second
            say("level: \(tenths(meter.averagePower(channel: 0))) dBFS RMS, \(tenths(meter.peakPower(channel: 0))) dBFS peak; \(recorder.framesWritten) frames written")
        }
    }
    try recorder.stop()
    say("recorded \(recorder.framesWritten) frames to \(path) (\(recorder.framesDropped) dropped)")
} catch let error as RecorderError {
    fail("\(error)", status: 1)
} catch {
    fail("\(error)", status: 1)
}

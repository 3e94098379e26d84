// graphthru: live monitoring, microphone → speakers through an AudioGraph pulled by JACK.
//
//   IO element 1 (in_1…in_N) → [low-pass] → mute gate → mixer input 0 → IO element 0 (out_1…out_N)
//
// With the mute off and no filter, every sample passes bit for bit.
import AudioGraph
import AudioGraphJACK
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

let usage = """
usage: graphthru [options]

Monitors JACK input through an AudioGraph to JACK output, with a click-free mute.
  IO in → [low-pass] → mute gate → mixer → IO out

options:
  --name NAME         JACK client name (default: graphthru)
  --server NAME       JACK server to join (default: $JACK_DEFAULT_SERVER or "default")
  --channels N        input and output channels, 1…64 (default: 2)
  --no-autoconnect    do not connect to the physical capture/playback ports
  --input PORT        connect PORT to the next in_k instead of physical capture (repeatable)
  --output PORT       connect the next out_k to PORT instead of physical playback (repeatable)
  --muted             start muted
  --lowpass HZ        insert a low-pass filter at HZ (10…sampleRate/2)
  --record FILE       record what goes to the outputs to FILE (.wav or .flac)
  --record-format F   int16, int24 or float32 (default: float32 for WAV, int24 for FLAC)
  --help              show this help

control:
  terminal:           m = toggle mute, q = quit
  otherwise (lines):  mute | unmute | toggle | quit   (end of input keeps running)
  SIGINT / SIGTERM / SIGHUP / SIGQUIT quit cleanly with status 0.

exit status: 0 after quit or a signal; 1 when JACK fails (no server, server gone, port errors);
2 for bad options (including a name JACK cannot take, a --lowpass outside 10…rate/2, or a
--record file that cannot be created in that format).
"""

struct Options {
    var name = "graphthru"
    var server: String?
    var channels = 2
    var autoconnect = true
    var inputs: [String] = []
    var outputs: [String] = []
    var muted = false
    var lowpass: Float?
    var record: String?
    var recordFormat: RecordingSettings.SampleFormat?
}

/// Writes straight to a file descriptor: unbuffered, so lines reach a pipe as they happen.
func write(_ text: String, to fd: Int32) {
    var bytes = Array(text.utf8)
    bytes.append(UInt8(ascii: "\n"))
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
        offset += n
    }
}
func say(_ text: String) { write(text, to: STDOUT_FILENO) }
func complain(_ text: String) { write("graphthru: " + text, to: STDERR_FILENO) }

func fail(_ message: String, status: Int32 = 1) -> Never {
    complain(message)
    exit(status)
}

func parseOptions(_ args: [String]) -> Options {
    var o = Options()
    var i = 0
    func value(_ flag: String) -> String {
        i += 1
        guard i < args.count else { fail("\(flag) needs a value (see --help)", status: 2) }
        return args[i]
    }
    while i < args.count {
        let arg = args[i]
        switch arg {
        case "--help", "-h": say(usage); exit(0)
        case "--name":
            o.name = value(arg)
            if let problem = JACKDriver.problem(withClientName: o.name) { fail("--name '\(o.name)': \(problem)", status: 2) }
        case "--server":
            let v = value(arg)
            guard !v.isEmpty else { fail("--server needs a name (omit it for $JACK_DEFAULT_SERVER or \"default\")", status: 2) }
            o.server = v
        case "--channels":
            let v = value(arg)
            guard let n = Int(v), (1...64).contains(n) else { fail("--channels must be a whole number 1…64, not '\(v)'", status: 2) }
            o.channels = n
        case "--no-autoconnect": o.autoconnect = false
        case "--input": o.inputs.append(value(arg))
        case "--output": o.outputs.append(value(arg))
        case "--muted": o.muted = true
        case "--lowpass":
            let v = value(arg)
            guard let hz = Float(v), hz.isFinite, hz > 0 else { fail("--lowpass needs a frequency in Hz, not '\(v)'", status: 2) }
            o.lowpass = hz
        case "--record": o.record = value(arg)
        case "--record-format":
            let v = value(arg)
            guard let format = RecordingSettings.SampleFormat(rawValue: v) else { fail("--record-format takes int16, int24 or float32, not '\(v)'", status: 2) }
            o.recordFormat = format
        default: fail("unknown option '\(arg)' (see --help)", status: 2)
        }
        i += 1
    }
    func channels(_ n: Int) -> String { n == 1 ? "1 channel" : "\(n) channels" }
    if o.inputs.count > o.channels { fail("\(o.inputs.count) --input ports but only \(channels(o.channels)) (raise --channels)", status: 2) }
    if o.outputs.count > o.channels { fail("\(o.outputs.count) --output ports but only \(channels(o.channels)) (raise --channels)", status: 2) }
    return o
}

// Signals only set a flag; the main loop acts on it. A second signal while quitting (say, a
// close that hangs on a wedged server) ends the process at once.
let quitSignal = Atomic<Int32>(0)
let exitStatusOnAlarm = Atomic<Int32>(0)

// With fd 0, 1 or 2 closed, the next file opened (libjack opens several) would take its number
// and be read as commands or written to. Park them on /dev/null first.
for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) == -1 {
    let null = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)
    if null >= 0 && null != fd { dup2(null, fd); close(null) }
}

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))
// SIGINT, SIGTERM, SIGHUP (terminal closed) and SIGQUIT (Ctrl-\\) all quit cleanly. A parent may
// have left them blocked (the mask survives exec); a monitor must hear them.
var quitSignals = sigset_t()
sigemptyset(&quitSignals)
for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
    sigaddset(&quitSignals, sig)
    signal(sig) { sig in
        if quitSignal.exchange(sig, ordering: .relaxed) != 0 { _exit(128 + sig) }
    }
}
pthread_sigmask(SIG_UNBLOCK, &quitSignals, nil)
signal(SIGALRM) { _ in _exit(exitStatusOnAlarm.load(ordering: .relaxed)) }
signal(SIGPIPE, SIG_IGN)
// Started in the background of a shell: touching the terminal must not stop the process (a
// stopped JACK client stalls the whole server). Such calls fail instead, and keys stay off.
signal(SIGTTOU, SIG_IGN)
signal(SIGTTIN, SIG_IGN)

// The graph.
let graph = AudioGraph()
let io = IOUnit()
let gate = MuteGateUnit()
let mixer = MultichannelMixerUnit(inputs: 1)
do {
    let ioNode = try graph.addNode(io)
    let gateNode = try graph.addNode(gate)
    let mixerNode = try graph.addNode(mixer)
    try io.setInputEnabled(true)
    gate.isMuted = options.muted
    var head = ioNode
    if options.lowpass != nil {
        let filterNode = try graph.addNode(LowPassFilterUnit())
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, filterNode, destinationInputElement: 0)
        head = filterNode
    }
    try graph.connectNodeInput(head, sourceOutputElement: head == ioNode ? IOUnit.inputElement : 0, gateNode, destinationInputElement: 0)
    try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
    try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
} catch {
    fail("could not build the graph: \(error)")
}

/// Connects one side of the client: the ports named with --input/--output if any (waiting up
/// to 2 s for them: their client may still be starting), else the physical ones when
/// autoconnecting; says which of our ports stay unconnected.
@MainActor func connectSide(given: [String], physical: @autoclosure () -> [String], ours: [String],
                            label: String, physicalLabel: String, outgoing: Bool) throws(JACKDriverError) {
    guard !given.isEmpty || options.autoconnect else { return }
    let theirs = given.isEmpty ? physical() : given
    let timeout: Double = given.isEmpty ? 0 : 2
    for (their, our) in zip(theirs, ours) {
        if outgoing { try driver.connect(our, to: their, timeout: timeout) }
        else { try driver.connect(their, to: our, timeout: timeout) }
    }
    if theirs.count < ours.count {
        say("graphthru: note: \(theirs.count) \(given.isEmpty ? physicalLabel : label) port(s) for \(ours.count) channels; \(ours[theirs.count])… stay unconnected")
    }
}

// The JACK client.
var driverOptions = JACKDriver.Options()
driverOptions.clientName = options.name
driverOptions.serverName = options.server
driverOptions.inputChannels = options.channels
driverOptions.outputChannels = options.channels
let driver: JACKDriver
do {
    driver = try JACKDriver(graph: graph, options: driverOptions)
} catch {
    if case .invalidClientName = error { fail("\(error)", status: 2) }
    fail("\(error)")
}
do {
    // The mixer's output carries the channel count; its rate is the server's.
    let format = try StreamFormat.float32(sampleRate: Double(driver.sampleRate), channels: UInt32(options.channels))
    try mixer.setStreamFormat(format, scope: .output, element: 0)
} catch {
    driver.close()
    fail("could not set the mixer format: \(error)")
}
if let hz = options.lowpass, let filter = graph.nodes.lazy.compactMap({ try? graph.nodeInfo($0) as? LowPassFilterUnit }).first {
    let nyquist = Float(driver.sampleRate) / 2
    guard hz >= 10, hz <= nyquist else {
        driver.close()
        fail("--lowpass \(hz) Hz is outside 10…\(nyquist) Hz at the server's \(driver.sampleRate) Hz", status: 2)
    }
    do { try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, hz, scope: .global) } catch { driver.close(); fail("\(error)") }
}
do {
    try driver.start()
    try connectSide(given: options.inputs, physical: driver.physicalPorts(capture: true),
                    ours: driver.inputPortNames, label: "--input", physicalLabel: "physical capture", outgoing: false)
    try connectSide(given: options.outputs, physical: driver.physicalPorts(capture: false),
                    ours: driver.outputPortNames, label: "--output", physicalLabel: "physical playback", outgoing: true)
} catch {
    driver.close()
    fail("\(error)")
}

say("graphthru: client '\(driver.clientName)' on JACK server '\(driver.serverName)', \(driver.sampleRate) Hz, period \(driver.bufferSize) frames, \(options.channels) channel(s)\(options.lowpass.map { ", low-pass \($0) Hz" } ?? "")")
say("graphthru: ports \(driver.inputPortNames.joined(separator: " ")) → \(driver.outputPortNames.joined(separator: " "))")

// --record: what IO element 0 sends to the outputs, written by the recorder's own thread.
var recorder: Recorder?
if let path = options.record {
    do throws(RecorderError) {
        let ioNode = graph.nodes.first { (try? graph.nodeInfo($0)) is IOUnit }!
        recorder = try Recorder(graph: graph, node: ioNode, element: IOUnit.outputElement, path: path,
                                settings: try RecordingSettings.forPath(path, sampleFormat: options.recordFormat))
    } catch {
        driver.close()
        fail("--record: \(error)", status: 2)
    }
}

// Control: keys in a terminal, lines otherwise. Keys need the terminal in the foreground: a
// graphthru started with `&` leaves the terminal alone (control it with signals) until `fg`.
let interactive = isatty(STDIN_FILENO) == 1
var savedTerminal = termios()
var keyMode = false
func inForeground() -> Bool { tcgetpgrp(STDIN_FILENO) == getpgrp() }
@MainActor func enterKeyModeIfForeground() {
    guard interactive, !keyMode, inForeground(), tcgetattr(STDIN_FILENO, &savedTerminal) == 0 else { return }
    var raw = savedTerminal
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
    guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return }
    keyMode = true
    say("graphthru: keys: m = toggle mute, q = quit")
}
@MainActor func leaveKeyMode() {
    if keyMode { tcsetattr(STDIN_FILENO, TCSANOW, &savedTerminal); keyMode = false }
}
enterKeyModeIfForeground()

func report() { say("mute: \(gate.isMuted ? "on" : "off")") }
func setMuted(_ muted: Bool) {
    if gate.isMuted != muted { gate.isMuted = muted }
    report()
}
report()

var stdinOpen = true
var line: [UInt8] = []
var exitStatus: Int32 = 0
var running = true
var buffer = [UInt8](repeating: 0, count: 256)

/// Acts on one command line; returns false for quit.
func handleLine(_ text: String) -> Bool {
    switch text.trimmingWhitespace().lowercased() {
    case "": break
    case "mute": setMuted(true)
    case "unmute": setMuted(false)
    case "toggle", "m": setMuted(!gate.isMuted)
    case "quit", "q", "exit": return false
    case let other: complain("unknown command '\(other)' (mute, unmute, toggle, quit)")
    }
    return true
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars.drop(while: { $0.properties.isWhitespace })
        return String(String.UnicodeScalarView(scalars.reversed().drop(while: { $0.properties.isWhitespace }).reversed()))
    }
}

while running {
    if quitSignal.load(ordering: .relaxed) != 0 { break }
    if driver.isShutDown {
        let reason = driver.shutdownReason
        complain("the JACK server shut down\(reason.isEmpty ? "" : " (\(reason))"); exiting")
        exitStatus = 1
        break
    }
    // Sleep until input, a server shutdown (its pipe) or a signal (poll returns EINTR). Only a
    // terminal in the background is checked on a timer, to notice `fg`.
    if interactive { enterKeyModeIfForeground() }
    let readInput = stdinOpen && (!interactive || keyMode)
    var fds = [pollfd(fd: driver.shutdownFileDescriptor, events: Int16(POLLIN), revents: 0),
               pollfd(fd: readInput ? STDIN_FILENO : -1, events: Int16(POLLIN), revents: 0)]
    let timeout: Int32 = driver.shutdownFileDescriptor < 0 ? 50 : (interactive && !keyMode && stdinOpen ? 250 : -1)
    let ready = poll(&fds, 2, timeout)
    if ready <= 0 || fds[1].revents == 0 { continue }
    let n = read(STDIN_FILENO, &buffer, buffer.count)
    if n <= 0 {
        if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        if n < 0 && interactive && errno == EIO { leaveKeyMode(); continue }  // sent to the background
        stdinOpen = false          // end of input is not a quit
        if !line.isEmpty { running = handleLine(String(decoding: line, as: UTF8.self)); line = [] }
        continue
    }
    for byte in buffer[0..<n] {
        if interactive {
            switch byte {
            case UInt8(ascii: "m"), UInt8(ascii: "M"): setMuted(!gate.isMuted)
            case UInt8(ascii: "q"), UInt8(ascii: "Q"): running = false
            default: break
            }
        } else if byte == UInt8(ascii: "\n") {
            if !handleLine(String(decoding: line, as: UTF8.self)) { running = false }
            line = []
        } else {
            line.append(byte)
        }
    }
}

leaveKeyMode()
if let recorder {
    do throws(RecorderError) { try recorder.stop() } catch { complain("\(error)"); exitStatus = 1 }
    say("graphthru: recorded \(recorder.framesWritten) frames to \(recorder.path) (\(recorder.framesDropped) dropped)")
}
let xruns = driver.xrunCount
let load = driver.cpuLoad
// Closing talks to the server; if it is wedged, give up after 2 s rather than hang.
exitStatusOnAlarm.store(exitStatus, ordering: .relaxed)
alarm(2)
driver.close()
alarm(0)
say("graphthru: stopped; \(xruns) xrun(s), JACK DSP load \(Int(load.rounded()))%")
exit(exitStatus)

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
  --help              show this help

control:
  terminal:           m = toggle mute, q = quit
  otherwise (lines):  mute | unmute | toggle | quit   (end of input keeps running)
  SIGINT / SIGTERM quit cleanly with status 0.
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
        case "--name": o.name = value(arg)
        case "--server": o.server = value(arg)
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
        default: fail("unknown option '\(arg)' (see --help)", status: 2)
        }
        i += 1
    }
    if o.inputs.count > o.channels { fail("\(o.inputs.count) --input ports but only \(o.channels) channels", status: 2) }
    if o.outputs.count > o.channels { fail("\(o.outputs.count) --output ports but only \(o.channels) channels", status: 2) }
    return o
}

// Signals only set a flag; the main loop acts on it.
let quitSignal = Atomic<Int32>(0)

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))
// A parent may have left these blocked (the mask survives exec); a monitor must hear them.
var quitSignals = sigset_t()
sigemptyset(&quitSignals)
sigaddset(&quitSignals, SIGINT)
sigaddset(&quitSignals, SIGTERM)
pthread_sigmask(SIG_UNBLOCK, &quitSignals, nil)
signal(SIGINT) { sig in quitSignal.store(sig, ordering: .relaxed) }
signal(SIGTERM) { sig in quitSignal.store(sig, ordering: .relaxed) }
signal(SIGPIPE, SIG_IGN)

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
    let stereo = try StreamFormat.float32(sampleRate: 48_000, channels: UInt32(options.channels))
    try mixer.setStreamFormat(stereo, scope: .output, element: 0)
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
    fail("\(error)")
}
if let hz = options.lowpass, let filter = graph.nodes.lazy.compactMap({ try? graph.nodeInfo($0) as? LowPassFilterUnit }).first {
    let nyquist = Float(driver.sampleRate) / 2
    guard hz >= 10, hz <= nyquist else { driver.close(); fail("--lowpass \(hz) Hz is outside 10…\(nyquist) Hz at \(driver.sampleRate) Hz") }
    do { try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, hz, scope: .global) } catch { driver.close(); fail("\(error)") }
}
do {
    try driver.start()
    if !options.inputs.isEmpty || !options.outputs.isEmpty || !options.autoconnect {
        for (port, input) in zip(options.inputs, driver.inputPortNames) { try driver.connect(port, to: input) }
        for (output, port) in zip(driver.outputPortNames, options.outputs) { try driver.connect(output, to: port) }
    }
    if options.autoconnect {
        let captures = driver.physicalPorts(capture: true), playbacks = driver.physicalPorts(capture: false)
        if options.inputs.isEmpty {
            for (port, input) in zip(captures, driver.inputPortNames) { try driver.connect(port, to: input) }
        }
        if options.outputs.isEmpty {
            for (output, port) in zip(driver.outputPortNames, playbacks) { try driver.connect(output, to: port) }
        }
    }
} catch {
    driver.close()
    fail("\(error)")
}

say("graphthru: client '\(driver.clientName)' on JACK server '\(options.server ?? driver.serverDescription)', \(driver.sampleRate) Hz, period \(driver.bufferSize) frames, \(options.channels) channel(s)\(options.lowpass.map { ", low-pass \($0) Hz" } ?? "")")
say("graphthru: ports \(driver.inputPortNames.joined(separator: " ")) → \(driver.outputPortNames.joined(separator: " "))")

// Control: keys in a terminal, lines otherwise.
let interactive = isatty(STDIN_FILENO) == 1
var savedTerminal = termios()
if interactive {
    tcgetattr(STDIN_FILENO, &savedTerminal)
    var raw = savedTerminal
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
    tcsetattr(STDIN_FILENO, TCSANOW, &raw)
    say("graphthru: keys: m = toggle mute, q = quit")
}

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
    if !stdinOpen { usleep(50_000); continue }
    var fds = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
    let ready = poll(&fds, 1, 50)
    if ready <= 0 { continue }
    let n = read(STDIN_FILENO, &buffer, buffer.count)
    if n <= 0 {
        if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
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

if interactive { tcsetattr(STDIN_FILENO, TCSANOW, &savedTerminal) }
let xruns = driver.xrunCount
driver.close()
say("graphthru: stopped; \(xruns) xrun(s)")
exit(exitStatus)

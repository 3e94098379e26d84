// graphthru: live monitoring, microphone → speakers through an AudioGraph pulled by JACK.
//
//   IO element 1 (in_1…in_N) → [low-pass] → mute gate → mixer input 0 → IO element 0 (out_1…out_N)
//
// With the mute off, the volume at 0 dB and no filter, every sample passes bit for bit.
// In a terminal it shows a status area redrawn in place and takes single keys; otherwise it
// prints plain lines and reads line commands (see `usage`).
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
  --start-server [DRIVER]
                      start that server inside graphthru (libjackserver; DRIVER "dummy" by
                      default, "alsa" for a sound card; 48 kHz, period 256) and stop it on exit
  --channels N        input and output channels, 1…64 (default: 2)
  --no-autoconnect    do not connect to the physical capture/playback ports
  --input PORT        connect PORT to the next in_k instead of physical capture (repeatable);
                      an exact port name, or a pattern as jack_lsp takes (system:capture_.*)
                      whose matches fill the next in_k in order
  --output PORT       connect the next out_k to PORT instead of physical playback (repeatable;
                      names or patterns as for --input)
  --muted             start muted
  --lowpass HZ        start with a low-pass filter at HZ (10…sampleRate/2; `l` toggles it;
                      without this option `l` inserts one at 1000 Hz)
  --quiet             print nothing on stdout except answers to `status`, `dump` and `help`
  --dump              print the graph (nodes, formats, connections, conversions, state) once
                      it runs, like CAShow; the `dump` command prints it again
  --record FILE       record what goes to the outputs to FILE (.wav or .flac); at exit it prints
                      "recorded N frames to FILE (D dropped)", and a write that fails while
                      running (disk full) is reported at once while monitoring goes on
  --record-format F   int16, int24 or float32 (default: float32 for WAV, int24 for FLAC)
  --help              show this help

control:
  terminal keys:      m mute · l low-pass · + / - output volume ±3 dB · ? help · q quit
  otherwise (lines):  mute | unmute | toggle | lowpass [on|off|HZ] | volume [+|-|DB] | + | -
                      | status | dump | help | quit      (end of input keeps running)
  SIGINT / SIGTERM / SIGHUP / SIGQUIT quit cleanly with status 0.

output: in a terminal, a status area redrawn in place (mute, volume, low-pass, xruns, DSP load,
server, sample rate, period, meters); otherwise plain lines such as `mute: on`, `volume: -3.0 dB`,
`low-pass: on (1000 Hz)`, `xruns: 2`, and one `status: …` line per `status` command.

exit status: 0 after quit or a signal; 1 when JACK fails (no server, server gone, port errors,
a --start-server that cannot start); 2 for bad options (including a name JACK cannot take, a
--lowpass outside 10…rate/2, or a --record file that cannot be created in that format).
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
    var quiet = false
    /// The driver of a server to start in-process, or nil to join a running one.
    var startServer: String?
    var record: String?
    var recordFormat: RecordingSettings.SampleFormat?
    var dump = false
}

/// Writes straight to a file descriptor: unbuffered, so lines reach a pipe as they happen.
func writeRaw(_ text: String, to fd: Int32 = STDOUT_FILENO) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
        offset += n
    }
}
func write(_ text: String, to fd: Int32) { writeRaw(text + "\n", to: fd) }
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
        case "--help", "-h": writeRaw(usage + "\n"); exit(0)
        case "--name":
            o.name = value(arg)
            if let problem = JACKDriver.problem(withClientName: o.name) { fail("--name '\(o.name)': \(problem)", status: 2) }
        case "--server":
            let v = value(arg)
            guard !v.isEmpty else { fail("--server needs a name (omit it for $JACK_DEFAULT_SERVER or \"default\")", status: 2) }
            o.server = v
        case "--start-server":
            // The driver is optional: the next argument is it unless it is another option.
            if i + 1 < args.count, !args[i + 1].hasPrefix("-") {
                i += 1
                o.startServer = args[i]
            } else {
                o.startServer = "dummy"
            }
        case "--channels":
            let v = value(arg)
            guard let n = Int(v), (1...64).contains(n) else { fail("--channels must be a whole number 1…64, not '\(v)'", status: 2) }
            o.channels = n
        case "--no-autoconnect": o.autoconnect = false
        case "--input": o.inputs.append(value(arg))
        case "--output": o.outputs.append(value(arg))
        case "--muted": o.muted = true
        case "--quiet", "-q": o.quiet = true
        case "--dump": o.dump = true
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
    if o.recordFormat != nil && o.record == nil { fail("--record-format needs --record FILE", status: 2) }
    func channels(_ n: Int) -> String { n == 1 ? "1 channel" : "\(n) channels" }
    if o.inputs.count > o.channels { fail("\(o.inputs.count) --input ports but only \(channels(o.channels)) (raise --channels)", status: 2) }
    if o.outputs.count > o.channels { fail("\(o.outputs.count) --output ports but only \(channels(o.channels)) (raise --channels)", status: 2) }
    return o
}

// Signals only set a flag and write a byte to a pipe the main loop polls (any thread may take
// the signal: libjack's threads, or an in-process server's). A second signal while quitting
// (say, a close that hangs on a wedged server) ends the process at once.
let quitSignal = Atomic<Int32>(0)
let exitStatusOnAlarm = Atomic<Int32>(0)
let signalPipe: (read: Int32, write: Int32) = {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return (-1, -1) }
    for fd in fds {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }
    return (fds[0], fds[1])
}()

// With fd 0, 1 or 2 closed, the next file opened (libjack opens several) would take its number
// and be read as commands or written to. Park them on /dev/null first.
for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) == -1 {
    let null = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)
    if null >= 0 && null != fd { dup2(null, fd); close(null) }
}

var options = parseOptions(Array(CommandLine.arguments.dropFirst()))
_ = signalPipe
// SIGINT, SIGTERM, SIGHUP (terminal closed) and SIGQUIT (Ctrl-\\) all quit cleanly. A parent may
// have left them blocked (the mask survives exec); a monitor must hear them.
var quitSignals = sigset_t()
sigemptyset(&quitSignals)
for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
    sigaddset(&quitSignals, sig)
    signal(sig) { sig in
        if quitSignal.exchange(sig, ordering: .relaxed) != 0 { _exit(128 + sig) }
        var byte: UInt8 = 1
        _ = Glibc.write(signalPipe.write, &byte, 1)
    }
}
pthread_sigmask(SIG_UNBLOCK, &quitSignals, nil)
signal(SIGALRM) { _ in _exit(exitStatusOnAlarm.load(ordering: .relaxed)) }
signal(SIGPIPE, SIG_IGN)
// Started in the background of a shell: touching the terminal must not stop the process (a
// stopped JACK client stalls the whole server). Such calls fail instead, and keys stay off.
signal(SIGTTOU, SIG_IGN)
signal(SIGTTIN, SIG_IGN)

// An in-process server, when asked for: started before the client, stopped at exit (whatever
// the path to exit), after the client has closed.
nonisolated(unsafe) var ownServer: JACKServer?
if let serverDriver = options.startServer {
    let environment = getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }
    let name = options.server ?? (environment?.isEmpty == false ? environment! : "default")
    do {
        ownServer = try JACKServer(name: name, driver: serverDriver)
    } catch {
        fail("\(error)")
    }
    options.server = name
    atexit { ownServer?.stop() }
}

// The graph.
let graph = AudioGraph()
let io = IOUnit()
let gate = MuteGateUnit()
let mixer = MultichannelMixerUnit(inputs: 1)
let filter = LowPassFilterUnit()
let ioNode: AUNode, gateNode: AUNode, mixerNode: AUNode
var filterNode: AUNode?
var cutoff: Float = options.lowpass ?? 1000
do {
    ioNode = try graph.addNode(io)
    gateNode = try graph.addNode(gate)
    mixerNode = try graph.addNode(mixer)
    try io.setInputEnabled(true)
    gate.isMuted = options.muted
    if options.lowpass != nil {
        let node = try graph.addNode(filter)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, node, destinationInputElement: 0)
        try graph.connectNodeInput(node, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
        filterNode = node
    } else {
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, gateNode, destinationInputElement: 0)
    }
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
    if case .invalidClientName = error { fail("\(error)", status: 2) }
    fail("\(error)")
}

/// Display names for patchbays: "Mic L"/"Mic R" and "Out L"/"Out R" in stereo, "Mic"/"Out"
/// in mono, "Mic 3"/"Out 3" otherwise.
func prettyNames(_ base: String, _ count: Int) -> [String] {
    switch count {
    case 1: return [base]
    case 2: return ["\(base) L", "\(base) R"]
    default: return (1...count).map { "\(base) \($0)" }
    }
}

do {
    // The mixer's output carries the channel count; its rate is the server's.
    let format = try StreamFormat.float32(sampleRate: Double(driver.sampleRate), channels: UInt32(options.channels))
    try mixer.setStreamFormat(format, scope: .output, element: 0)
} catch {
    driver.close()
    fail("could not set the mixer format: \(error)")
}
let nyquist = Float(driver.sampleRate) / 2
if let hz = options.lowpass {
    guard hz >= 10, hz <= nyquist else {
        driver.close()
        fail("--lowpass \(hz) Hz is outside 10…\(nyquist) Hz at the server's \(driver.sampleRate) Hz", status: 2)
    }
}
cutoff = min(cutoff, nyquist)
do { try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global) } catch { driver.close(); fail("\(error)") }

/// Connects one side of the client: the ports named (or matched by patterns) with
/// --input/--output if any (waiting up to 2 s for them: their client may still be starting),
/// else the physical ones when autoconnecting; says which of our ports stay unconnected.
@MainActor func connectSide(given: [String], physical: @autoclosure () -> [String], ours: [String],
                            label: String, physicalLabel: String, outgoing: Bool) throws(JACKDriverError) {
    guard !given.isEmpty || options.autoconnect else { return }
    var theirs: [String] = []
    if given.isEmpty {
        theirs = physical()
    } else {
        for spec in given { theirs += try driver.ports(matching: spec, sources: !outgoing, timeout: 2) }
    }
    for (their, our) in zip(theirs, ours) {
        if outgoing { try driver.connect(our, to: their, timeout: given.isEmpty ? 0 : 2) }
        else { try driver.connect(their, to: our, timeout: given.isEmpty ? 0 : 2) }
    }
    if theirs.count < ours.count && !options.quiet {
        write("graphthru: note: \(theirs.count) \(given.isEmpty ? physicalLabel : label) port(s) for \(ours.count) channels; \(ours[theirs.count])… stay unconnected", to: STDOUT_FILENO)
    }
    if theirs.count > ours.count && !options.quiet {
        write("graphthru: note: \(theirs.count) \(label) ports matched for \(ours.count) channels; \(theirs[ours.count])… stay unconnected", to: STDOUT_FILENO)
    }
}

do {
    try driver.start()
    // Pretty names are metadata set by this (control) thread; JACK callbacks never do it.
    for (port, pretty) in zip(driver.inputPortNames, prettyNames("Mic", options.channels)) { try driver.setPrettyName(pretty, forPort: port) }
    for (port, pretty) in zip(driver.outputPortNames, prettyNames("Out", options.channels)) { try driver.setPrettyName(pretty, forPort: port) }
    try connectSide(given: options.inputs, physical: driver.physicalPorts(capture: true),
                    ours: driver.inputPortNames, label: "--input", physicalLabel: "physical capture", outgoing: false)
    try connectSide(given: options.outputs, physical: driver.physicalPorts(capture: false),
                    ours: driver.outputPortNames, label: "--output", physicalLabel: "physical playback", outgoing: true)
} catch {
    driver.close()
    fail("\(error)")
}

// MARK: - State and what is shown of it

/// Output volume in dB (the mixer's output-scope Volume, ramped by the mixer across one slice).
var volumeDB: Float = 0
let volumeStep: Float = 3
let volumeRange: ClosedRange<Float> = -60...12

/// Where the status goes: a status area redrawn in place (stdout is a terminal), plain lines
/// (stdout is a pipe or file), or nothing but answers (--quiet).
enum Display { case terminal, lines, quiet }
let display: Display = options.quiet ? .quiet : (isatty(STDOUT_FILENO) == 1 ? .terminal : .lines)
var drawnLines = 0

/// One channel's level: average (RMS) and peak power, dBFS (−160 for silence).
struct MeterReading { var average: Float; var peak: Float }

// Level meters (the library's LevelMeter: RMS with τ = 0.3 s and a held peak, lock-free reads)
// on the IO unit's two sides: element 1 as the graph receives the input, element 0 as it sends
// the output. Installed once the graph runs; nil if installing failed (then no meters shown).
nonisolated(unsafe) var meters: (input: LevelMeter, output: LevelMeter)?
@MainActor func meterReadings() -> (inputs: [MeterReading], outputs: [MeterReading])? {
    guard let meters else { return nil }
    func read(_ meter: LevelMeter) -> [MeterReading] {
        (0..<options.channels).map { MeterReading(average: meter.averagePower(channel: $0), peak: meter.peakPower(channel: $0)) }
    }
    return (read(meters.input), read(meters.output))
}

func dB(_ value: Float) -> String {
    value.isFinite && value > LevelMeter.silence ? String(format1: value) + " dB" : "-inf dB"
}
extension String {
    /// One decimal, without Foundation: -3.0, 12.0, 0.0.
    init(format1 value: Float) {
        let tenths = Int((abs(value) * 10).rounded())
        self = (value < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}

func meterBar(_ reading: MeterReading, width: Int = 30) -> String {
    let fraction = max(0, min(1, (reading.average + 60) / 60))
    let filled = Int((fraction * Float(width)).rounded())
    return "▕" + String(repeating: "█", count: filled) + String(repeating: "─", count: width - filled) + "▏ "
        + "\(dB(reading.average)) (peak \(dB(reading.peak)))"
}

var muteText: String { gate.isMuted ? "on" : "off" }
var lowpassText: String { filterNode == nil ? "off" : "on (\(Int(cutoff.rounded())) Hz)" }

@MainActor func statusLines() -> [String] {
    let period = driver.bufferSize
    let ms = String(format1: Float(period) * 1000 / Float(max(driver.sampleRate, 1)))
    var lines = [
        "graphthru · client '\(driver.clientName)' · JACK server '\(driver.serverName)'\(ownServer != nil ? " (in-process)" : "") · \(driver.sampleRate) Hz · period \(period) (\(ms) ms) · \(options.channels) ch",
        "mute \(muteText) · volume \(dB(volumeDB)) · low-pass \(lowpassText) · xruns \(driver.xrunCount) · DSP load \(String(format1: driver.cpuLoad))%",
    ]
    if let meters = meterReadings() {
        for (c, reading) in meters.inputs.enumerated() { lines.append("in  \(c + 1) " + meterBar(reading)) }
        for (c, reading) in meters.outputs.enumerated() { lines.append("out \(c + 1) " + meterBar(reading)) }
    } else {
        lines.append("meters: unavailable")
    }
    lines.append("keys: m mute · l low-pass · +/- volume · ? help · q quit")
    return lines
}

@MainActor func statusLine() -> String {
    var text = "status: mute \(muteText), volume \(dB(volumeDB)), low-pass \(lowpassText), xruns \(driver.xrunCount), DSP load \(String(format1: driver.cpuLoad))%, server '\(driver.serverName)', \(driver.sampleRate) Hz, period \(driver.bufferSize), \(options.channels) ch"
    if let meters = meterReadings() {
        text += ", input " + meters.inputs.map { dB($0.average) }.joined(separator: " ")
        text += ", output " + meters.outputs.map { dB($0.average) }.joined(separator: " ")
    } else {
        text += ", meters n/a"
    }
    return text
}

func outputInForeground() -> Bool { tcgetpgrp(STDOUT_FILENO) == getpgrp() }

/// Redraws the status area in place (terminal display only, and only in the foreground).
@MainActor func redraw() {
    guard display == .terminal, outputInForeground() else { return }
    var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
    let lines = statusLines()
    for line in lines { text += "\r\u{1B}[2K" + line + "\n" }
    text += "\u{1B}[J"
    drawnLines = lines.count
    writeRaw(text)
}

/// Prints a line: above the status area in a terminal, as is otherwise.
@MainActor func say(_ text: String) {
    if display == .terminal && drawnLines > 0 && outputInForeground() {
        writeRaw("\u{1B}[\(drawnLines)A\r\u{1B}[J" + text + "\n")
        drawnLines = 0
        redraw()
    } else {
        writeRaw(text + "\n")
    }
}

/// Reports a state change: a plain line (`mute: on`), a redraw, or nothing (--quiet).
@MainActor func report(_ line: String) {
    switch display {
    case .lines: say(line)
    case .terminal: redraw()
    case .quiet: break
    }
}

// MARK: - Actions

@MainActor func setMuted(_ muted: Bool) {
    if gate.isMuted != muted { gate.isMuted = muted }
    report("mute: \(muteText)")
}

@MainActor func setVolume(_ db: Float) {
    volumeDB = min(max(db, volumeRange.lowerBound), volumeRange.upperBound)
    if volumeDB != db {
        let asked = String(format1: db), set = String(format1: volumeDB)
        let low = Int(volumeRange.lowerBound), high = Int(volumeRange.upperBound)
        complain("volume \(asked) dB is outside \(low)…+\(high) dB; set to \(set) dB")
    }
    let gain = Float(pow(10, Double(volumeDB) / 20))   // 0 dB is exactly 1: bit-exact again
    do {
        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, gain, scope: .output, element: 0)
    } catch {
        complain("could not set the volume: \(error)")
    }
    report("volume: \(dB(volumeDB))")
}

/// Inserts or removes the low-pass between the IO input and the gate: a live edit through
/// `update()`. Unless muted, the gate ramps down first and up again afterwards, so the switch
/// (filter memory appearing or vanishing) is not heard as a click.
@MainActor func setLowpass(_ on: Bool) {
    if on == (filterNode != nil) { report("low-pass: \(lowpassText)"); return }
    let fade = !gate.isMuted
    if fade {
        gate.isMuted = true
        // The 10 ms ramp, plus two periods for the parameter to be read and the ramp to finish.
        usleep(UInt32(10_000 + 2 * 1_000_000 * driver.bufferSize / max(driver.sampleRate, 1)))
    }
    defer { if fade { gate.isMuted = false } }
    do {
        if on {
            let node = try graph.addNode(filter)
            do {
                try graph.disconnectNodeInput(gateNode, inputElement: 0)
                try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, node, destinationInputElement: 0)
                try graph.connectNodeInput(node, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
                try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global)
                try graph.update()
                filterNode = node
            } catch {
                // Back to the chain without the filter: drop the node (and its queued
                // connections), feed the gate from the input again.
                try? graph.removeNode(node)
                if !graph.connections.contains(where: { $0.destinationNode == gateNode }) {
                    try? graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, gateNode, destinationInputElement: 0)
                }
                try? graph.update()
                throw error
            }
        } else if let node = filterNode {
            try graph.removeNode(node)
            try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, gateNode, destinationInputElement: 0)
            try graph.update()
            filterNode = nil
        }
        report("low-pass: \(lowpassText)")
    } catch {
        complain("could not switch the low-pass: \(error)")
    }
}

@MainActor func setCutoff(_ hz: Float) {
    guard hz.isFinite, hz >= 10, hz <= nyquist else {
        complain("lowpass takes on, off or a frequency of 10…\(nyquist) Hz at the server's \(driver.sampleRate) Hz, not \(hz)")
        return
    }
    cutoff = hz
    do { try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, hz, scope: .global) } catch { complain("\(error)") }
    if filterNode == nil { setLowpass(true) } else { report("low-pass: \(lowpassText)") }
}

let keyHelp = "keys: m mute/unmute · l low-pass on/off (\(Int(cutoff.rounded())) Hz) · + / - output volume ±3 dB · ? help · q quit"
let lineHelp = "commands: mute | unmute | toggle | lowpass [on|off|HZ] | volume [+|-|DB] | + | - | status | dump | help | quit"

/// Acts on one command line; returns false for quit.
@MainActor func handleLine(_ text: String) -> Bool {
    let words = text.trimmingWhitespace().lowercased().split(separator: " ").map(String.init)
    switch (words.first ?? "", words.count > 1 ? words[1] : nil) {
    case ("", _): break
    case ("mute", nil): setMuted(true)
    case ("unmute", nil): setMuted(false)
    case ("toggle", nil), ("m", nil): setMuted(!gate.isMuted)
    case ("quit", nil), ("q", nil), ("exit", nil): return false
    case ("lowpass", nil), ("l", nil): setLowpass(filterNode == nil)
    case ("lowpass", "on"?): setLowpass(true)
    case ("lowpass", "off"?): setLowpass(false)
    case ("lowpass", let hz?) where Float(hz) != nil: setCutoff(Float(hz)!)
    case ("lowpass", let bad?): complain("lowpass takes on, off or a frequency in Hz, not '\(bad)'")
    case ("+", nil), ("volume", "+"?), ("up", nil): setVolume(volumeDB + volumeStep)
    case ("-", nil), ("volume", "-"?), ("down", nil): setVolume(volumeDB - volumeStep)
    case ("volume", let db?) where Float(db).map({ $0.isFinite }) == true: setVolume(Float(db)!)
    case ("volume", nil): say("volume: \(dB(volumeDB))")
    case ("volume", let bad?): complain("volume takes +, - or a level in dB, not '\(bad)'")
    case ("status", nil): say(statusLine())
    case ("dump", nil): say(graph.description)
    case ("help", nil), ("?", nil): say(lineHelp)
    default: complain("unknown command '\(text.trimmingWhitespace())' (\(lineHelp))")
    }
    return true
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars.drop(while: { $0.properties.isWhitespace })
        return String(String.UnicodeScalarView(scalars.reversed().drop(while: { $0.properties.isWhitespace }).reversed()))
    }
}

// MARK: - Start-up report

if display != .quiet {
    say("graphthru: client '\(driver.clientName)' on JACK server '\(driver.serverName)'\(ownServer != nil ? " (started in-process, driver \(ownServer!.driver))" : ""), \(driver.sampleRate) Hz, period \(driver.bufferSize) frames, \(options.channels) channel(s)\(options.lowpass.map { ", low-pass \($0) Hz" } ?? "")")
    say("graphthru: ports \(driver.inputPortNames.joined(separator: " ")) → \(driver.outputPortNames.joined(separator: " "))")
}
if options.dump { say(graph.description) }

do {
    meters = (try graph.installLevelMeter(on: ioNode, element: IOUnit.inputElement),
              try graph.installLevelMeter(on: ioNode, element: IOUnit.outputElement))
} catch {
    complain("level meters unavailable: \(error)")
}

// --record: what IO element 0 sends to the outputs, written by the recorder's own thread.
var recorder: Recorder?
if let path = options.record {
    do throws(RecorderError) {
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
    if display == .lines { say("graphthru: " + keyHelp) }
}
@MainActor func leaveKeyMode() {
    if keyMode { tcsetattr(STDIN_FILENO, TCSANOW, &savedTerminal); keyMode = false }
}
enterKeyModeIfForeground()

report("mute: \(muteText)")
if display == .terminal { redraw() }

var stdinOpen = true
var line: [UInt8] = []
var exitStatus: Int32 = 0
var running = true
var buffer = [UInt8](repeating: 0, count: 256)
var xrunsShown: UInt64 = 0
var recordingFailureShown = false

while running {
    if quitSignal.load(ordering: .relaxed) != 0 { break }
    if driver.isShutDown {
        let reason = driver.shutdownReason
        complain("the JACK server shut down\(reason.isEmpty ? "" : " (\(reason))"); exiting")
        exitStatus = 1
        break
    }
    // A server rate change (the callback only records it): the graph follows from here.
    if driver.sampleRateChanged {
        do {
            try driver.followSampleRate()
            report("sample rate: \(driver.sampleRate) Hz")
        } catch {
            complain("could not follow the server's new sample rate (\(driver.sampleRate) Hz): \(error)")
            exitStatus = 1
            break
        }
    }
    // A recording that fails while running (disk full) is said at once; audio keeps flowing
    // and the frames not written are counted as dropped.
    if let recorder, !recordingFailureShown, let failure = recorder.writeError {
        recordingFailureShown = true
        complain("\(failure); monitoring goes on, frames from here on are counted as dropped")
    }
    // xruns as they happen: a line each time the count grows (plain lines), or the redraw.
    let xruns = driver.xrunCount
    if xruns != xrunsShown {
        xrunsShown = xruns
        if display == .lines { say("xruns: \(xruns)") }
    }
    if display == .terminal { redraw() }
    // Sleep until input, a server shutdown (its pipe), a signal (its pipe) or the next redraw
    // (10 per second in a terminal; otherwise an xrun and sample-rate check each second).
    if interactive { enterKeyModeIfForeground() }
    let readInput = stdinOpen && (!interactive || keyMode)
    var fds = [pollfd(fd: driver.shutdownFileDescriptor, events: Int16(POLLIN), revents: 0),
               pollfd(fd: signalPipe.read, events: Int16(POLLIN), revents: 0),
               pollfd(fd: readInput ? STDIN_FILENO : -1, events: Int16(POLLIN), revents: 0)]
    let timeout: Int32
    switch display {
    case .terminal: timeout = 100
    case .lines: timeout = interactive && !keyMode && stdinOpen ? 250 : 1000
    case .quiet: timeout = driver.shutdownFileDescriptor < 0 || signalPipe.read < 0 ? 50 : (interactive && !keyMode && stdinOpen ? 250 : 1000)
    }
    let ready = poll(&fds, 3, timeout)
    if ready <= 0 || fds[2].revents == 0 { continue }
    let n = read(STDIN_FILENO, &buffer, buffer.count)
    if n <= 0 {
        if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        if n < 0 && interactive && errno == EIO { leaveKeyMode(); continue }  // sent to the background
        stdinOpen = false          // end of input is not a quit
        if !line.isEmpty { running = handleLine(String(decoding: line, as: UTF8.self)); line = [] }
        continue
    }
    for byte in buffer[0..<n] where running {
        if interactive {
            switch byte {
            case UInt8(ascii: "m"), UInt8(ascii: "M"): setMuted(!gate.isMuted)
            case UInt8(ascii: "q"), UInt8(ascii: "Q"): running = false
            case UInt8(ascii: "l"), UInt8(ascii: "L"): setLowpass(filterNode == nil)
            case UInt8(ascii: "+"), UInt8(ascii: "="): setVolume(volumeDB + volumeStep)
            case UInt8(ascii: "-"), UInt8(ascii: "_"): setVolume(volumeDB - volumeStep)
            case UInt8(ascii: "?"), UInt8(ascii: "h"), UInt8(ascii: "H"): say("graphthru: " + keyHelp)
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
redraw()
if let recorder {
    do throws(RecorderError) { try recorder.stop() } catch {
        if !recordingFailureShown { complain("\(error)") }
        exitStatus = 1
    }
    say("graphthru: recorded \(recorder.framesWritten) frames to \(recorder.path) (\(recorder.framesDropped) dropped)")
}
let xruns = driver.xrunCount
let load = driver.cpuLoad
// Closing talks to the server; if it is wedged, give up after 2 s rather than hang.
exitStatusOnAlarm.store(exitStatus, ordering: .relaxed)
alarm(2)
driver.close()
ownServer?.stop()
alarm(0)
if display == .terminal && drawnLines > 0 && outputInForeground() {
    drawnLines = 0   // the status area stays as it was last drawn; the summary goes below it
}
if display != .quiet {
    say("graphthru: stopped; \(xruns) xrun(s), JACK DSP load \(Int(load.rounded()))%\(ownServer != nil ? "; in-process server '\(ownServer!.name)' stopped" : "")")
}
exit(exitStatus)

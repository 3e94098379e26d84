// graphrun: runs a graph described in a JSON file as a JACK client, and follows the file:
// each saved change is applied to the running graph as a live edit (no restart).
import AudioGraph
import AudioGraphJACK
import Foundation
import Synchronization

let usage = """
usage: graphrun FILE [options]

Runs the AudioGraph described in FILE (JSON) as a JACK client: ports in_1…in_N feed the node
"io" as a source, out_1…out_N are fed by "io" as a destination. When FILE changes, the
difference is applied to the running graph (parameters, nodes added, removed or reshaped,
connections) in one update(); a version with an error is reported with its line and field and
the running graph stays as it was.

options:
  --name NAME         JACK client name (default: the file's "name", else graphrun)
  --server NAME       JACK server to join (default: $JACK_DEFAULT_SERVER or "default")
  --no-autoconnect    do not connect to the physical capture/playback ports
  --input PORT        connect PORT (a name or a pattern such as system:capture_.*) to the next in_k
  --output PORT       connect the next out_k to PORT (name or pattern)
  --check             check FILE and exit (0 when valid, 2 with the error otherwise); no JACK
  --help              show this help

control (standard input, one per line): reload | dump | quit      (end of input keeps running)
  dump prints the running graph (nodes, formats, connections, conversions), like CAShow; a
  version of the file that cannot be applied is reported with the graph that keeps running.
SIGINT / SIGTERM / SIGHUP quit cleanly with status 0.

exit status: 0 after quit or a signal, or a valid --check; 1 when JACK fails; 2 for bad options
or a FILE that is invalid at start.

file format (see Examples/graphthru.json):
  { "name": "graphthru", "channels": 2,
    "nodes": [ { "id": "gate", "type": "mutegate", "parameters": { "mute": 0 } },
               { "id": "mixer", "type": "mixer", "inputs": 1, "format": { "channels": 2 },
                 "parameters": { "volume": 1 }, "inputParameters": [ { "volume": 1, "pan": 0 } ] },
               { "id": "lp", "type": "lowpass", "parameters": { "cutoff": 1000, "resonance": 0 } } ],
    "connections": [ { "from": "io", "to": "gate" }, { "from": "gate", "to": "mixer:0" },
                     { "from": "mixer", "to": "io" } ] }
"""

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
func complain(_ text: String) { FileHandle.standardError.write(Data(("graphrun: " + text + "\n").utf8)) }
func fail(_ message: String, status: Int32 = 1) -> Never { complain(message); exit(status) }

var filePath: String?
var clientName: String?
var serverName: String?
var autoconnect = true
var inputs: [String] = []
var outputs: [String] = []
var checkOnly = false
do {
    let args = Array(CommandLine.arguments.dropFirst())
    var i = 0
    func value(_ flag: String) -> String {
        i += 1
        guard i < args.count else { fail("\(flag) needs a value (see --help)", status: 2) }
        return args[i]
    }
    while i < args.count {
        switch args[i] {
        case "--help", "-h": say(usage); exit(0)
        case "--name":
            clientName = value("--name")
            if let problem = JACKDriver.problem(withClientName: clientName!) { fail("--name '\(clientName!)': \(problem)", status: 2) }
        case "--server": serverName = value("--server")
        case "--no-autoconnect": autoconnect = false
        case "--input": inputs.append(value("--input"))
        case "--output": outputs.append(value("--output"))
        case "--check": checkOnly = true
        case let arg where arg.hasPrefix("-"): fail("unknown option '\(arg)' (see --help)", status: 2)
        case let arg:
            guard filePath == nil else { fail("one graph file only ('\(filePath!)' and '\(arg)')", status: 2) }
            filePath = arg
        }
        i += 1
    }
}
guard let filePath else { fail("no graph file given (see --help)", status: 2) }

/// The file's identity and contents now: (modification time, size, inode) and its text.
func readFile() -> (stamp: [Int], text: String)? {
    var info = stat()
    guard stat(filePath, &info) == 0, let data = FileManager.default.contents(atPath: filePath) else { return nil }
    let stamp = [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_size), Int(info.st_ino)]
    return (stamp, String(decoding: data, as: UTF8.self))
}

guard let first = readFile() else { fail("cannot read '\(filePath)'", status: 2) }
let firstReader = GraphFileReader(file: filePath, text: first.text)
let firstSpec: GraphSpec
do { firstSpec = try firstReader.read() } catch { fail("\(error)", status: 2) }
if checkOnly {
    say("graphrun: \(filePath) is valid: \(firstSpec.nodes.count) node(s), \(firstSpec.connections.count) connection(s), \(firstSpec.channels) channel(s)")
    exit(0)
}

// Signals set a flag and write to a pipe the main loop polls.
let quitSignal = Atomic<Int32>(0)
let signalPipe: (read: Int32, write: Int32) = {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return (-1, -1) }
    for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return (fds[0], fds[1])
}()
_ = signalPipe
for sig in [SIGINT, SIGTERM, SIGHUP] {
    signal(sig) { sig in
        if quitSignal.exchange(sig, ordering: .relaxed) != 0 { _exit(128 + sig) }
        var byte: UInt8 = 1
        _ = write(signalPipe.write, &byte, 1)
    }
}
signal(SIGPIPE, SIG_IGN)

let live: LiveGraph
do { live = try LiveGraph() } catch { fail("could not make the graph: \(error)") }
var options = JACKDriver.Options()
options.clientName = clientName ?? firstSpec.name ?? "graphrun"
options.serverName = serverName
options.inputChannels = firstSpec.channels
options.outputChannels = firstSpec.channels
let driver: JACKDriver
do { driver = try JACKDriver(graph: live.graph, options: options) } catch {
    if case .invalidClientName = error { fail("\(error)", status: 2) }
    fail("\(error)")
}
live.sampleRate = Double(driver.sampleRate)
do { try live.apply(firstSpec, reader: firstReader) } catch { driver.close(); fail("\(error)", status: 2) }
do {
    try driver.start()
} catch {
    driver.close()
    if case .graph = error { fail("\(filePath):\(firstSpec.connectionsLine): connections: \(error)", status: 2) }
    fail("\(error)")
}
do {
    for (ours, given, sources) in [(driver.inputPortNames, inputs, true), (driver.outputPortNames, outputs, false)] {
        var theirs: [String] = []
        if given.isEmpty { theirs = autoconnect ? driver.physicalPorts(capture: sources) : [] }
        else { for spec in given { theirs += try driver.ports(matching: spec, sources: sources, timeout: 2) } }
        for (their, our) in zip(theirs, ours) {
            if sources { try driver.connect(their, to: our, timeout: 2) } else { try driver.connect(our, to: their, timeout: 2) }
        }
    }
} catch {
    driver.close()
    fail("\(error)")
}
say("graphrun: running \(filePath) as '\(driver.clientName)' on JACK server '\(driver.serverName)', \(driver.sampleRate) Hz: \(firstSpec.nodes.count) node(s), \(firstSpec.connections.count) connection(s)")

var stamp = first.stamp
var fileMissing = false
var lastText = first.text

/// Reads the file again and applies what changed. Errors leave the running graph as it was.
@MainActor func reload(force: Bool) {
    guard let now = readFile() else {
        // Once per absence: editors that save by deleting and re-creating leave a gap.
        if !fileMissing { complain("cannot read '\(filePath)' now; still running the previous version") }
        fileMissing = true
        return
    }
    fileMissing = false
    guard force || now.stamp != stamp else { return }
    stamp = now.stamp
    guard force || now.text != lastText else { return }
    lastText = now.text
    let reader = GraphFileReader(file: filePath, text: now.text)
    do {
        let spec = try reader.read()
        let changes = try live.apply(spec, reader: reader)
        driver.recomputeLatency()  // a reshaped node may add or remove a resampling conversion
        say("graphrun: reloaded \(filePath): \(changes.description)")
    } catch {
        complain("\(error); still running the previous version:\n" + live.graph.description)
    }
}

var line: [UInt8] = []
var stdinOpen = true
var buffer = [UInt8](repeating: 0, count: 256)
var exitStatus: Int32 = 0
loop: while quitSignal.load(ordering: .relaxed) == 0 {
    if driver.isShutDown {
        complain("the JACK server shut down (\(driver.shutdownReason)); exiting")
        exitStatus = 1
        break
    }
    if driver.sampleRateChanged {
        do {
            try driver.followSampleRate()
            live.sampleRate = Double(driver.sampleRate)
            say("graphrun: following the server's new sample rate, \(driver.sampleRate) Hz")
        } catch {
            complain("could not follow the server's new sample rate (\(driver.sampleRate) Hz): \(error)")
            exitStatus = 1
            break
        }
    }
    var fds = [pollfd(fd: driver.shutdownFileDescriptor, events: Int16(POLLIN), revents: 0),
               pollfd(fd: signalPipe.read, events: Int16(POLLIN), revents: 0),
               pollfd(fd: stdinOpen ? STDIN_FILENO : -1, events: Int16(POLLIN), revents: 0)]
    // The file is checked 5 times a second (a stat; read only when it changed).
    let ready = poll(&fds, 3, 200)
    reload(force: false)
    guard ready > 0, fds[2].revents != 0 else { continue }
    let n = read(STDIN_FILENO, &buffer, buffer.count)
    if n <= 0 {
        if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        stdinOpen = false
        continue
    }
    for byte in buffer[0..<n] {
        guard byte == UInt8(ascii: "\n") else { line.append(byte); continue }
        let command = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        line = []
        switch command {
        case "": break
        case "reload": reload(force: true)
        case "dump": say(live.graph.description)
        case "quit", "q", "exit": break loop
        default: complain("unknown command '\(command)' (reload, dump, quit)")
        }
    }
}
let xruns = driver.xrunCount
driver.close()
say("graphrun: stopped; \(xruns) xrun(s)")
exit(exitStatus)

// graphrun: the tool's life — read the graph file, open the client, run the graph, follow the file's edits live, close.
//
// Each saved change of the file is applied to the running graph as a live edit (no restart).
import AudioGraph
import AudioGraphJACK
import Foundation
import ToolSupport

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
\(ServerStartOptions.usage)
  --no-autoconnect    do not connect to the physical capture/playback ports
  --input PORT        connect PORT (a name or a pattern such as system:capture_.*) to the next in_k
  --output PORT       connect the next out_k to PORT (name or pattern)
  --reconnect         when the server goes away, wait for it (a try every 250 ms) and resume:
                      same client name and ports, connections made again, the graph following
                      the server's rate if it changed (without it: exit 1)
  --threads N         threads that render the graph: 0 (the default) lets the engine choose from
                      the graph's estimated cost, 1 keeps to JACK's process thread, 2…64 adds
                      workers at its priority that render independent branches beside it
  --check             check FILE and exit (0 when valid, 2 with the error otherwise); no JACK.
                      Bounds that follow the sample rate (a low-pass cutoff's top, half the
                      rate) are checked at --rate's, else at 48000 Hz; the answer says which
  --rate HZ           with --check: the server's sample rate to check at, 1000…768000
  --list [TEXT]       list the node types, their shape fields and their parameters, and the
                      installed LV2 and LADSPA plugins (only lines containing TEXT), and exit
  --info NAME         a plugin's ports and parameters (NAME: an LV2 URI, a LADSPA label or ID)
  --json              while running, print one JSON object per line on stdout (for scripts):
                      running, reloaded, message (dump), a status object once a second and as
                      the answer to `status` (xruns, DSP load, render errors, non-finite
                      samples replaced with 0), stopped; errors stay text on stderr
  --help              show this help
  --part SERVER       (internal) run the part of FILE on servers entry SERVER, driven by the
                      graphrun that runs io, over standard input and output

control (standard input, one per line): reload | dump | status | quit   (end of input keeps running)
  status prints xruns, DSP load, render errors and NaN/Inf samples replaced with 0; dump prints the running graph (nodes, formats, connections, conversions), like CAShow; a
  version of the file that cannot be applied is reported with the graph that keeps running.
SIGINT / SIGTERM / SIGHUP / SIGQUIT quit cleanly with status 0.

exit status: 0 after quit or a signal, or a valid --check; 1 when JACK fails (the server gone
without --reconnect, a part on another server ended); 2 for bad options
or a FILE that is invalid at start.

file format (see Examples/graphthru.json):
  { "name": "graphthru", "channels": 2,
    "nodes": [ { "id": "gate", "type": "mutegate", "parameters": { "mute": 0 } },
               { "id": "mixer", "type": "mixer", "inputs": 1, "format": { "channels": 2 },
                 "parameters": { "volume": 1 }, "inputParameters": [ { "volume": 1, "pan": 0 } ] },
               { "id": "lp", "type": "lowpass", "parameters": { "cutoff": 1000, "resonance": 0 } } ],
    "connections": [ { "from": "io", "to": "gate" }, { "from": "gate", "to": "mixer:0" },
                     { "from": "mixer", "to": "io" } ] }

one graph across JACK servers (see Docs/NetJACK.md): "servers" lists them, io's first, and a
node's "server" places it (without one, it runs with io). Each entry's "jack" is the JACK server
its part joins (the first's defaults to the usual one, and --server wins over it). Each other
server's part runs in a graphrun of its own, as client NAME-SERVER; an edge between servers is
carried over extra ports (io's client: in_/out_ after the file's channels) that graphrun
connects to the netjack2 link when io's server is its master ("net": the slave's client name
there, needed with more than one link), and the round trip it adds is compensated. Every
crossing edge has io's server at one end. While running, live edits reach every part, all or
none; which node runs where, what crosses, and the servers need a restart. `dump` and `status`
cover every part. --reconnect is for a graph on one server.
  "servers": { "here": {}, "far": { "jack": "SLAVE-SERVER-NAME", "net": "SLAVE-CLIENT" } },
  "nodes": [ …, { "id": "gate", "type": "mutegate", "server": "far" } ]
"""

let tool = Tool(name: "graphrun")

// Options: the client's (no --channels: the file says how many), the file, --check [--rate].
Tool.parkClosedStandardStreams()
var client = ClientOptions()
var filePath: String?
var checkOnly = false
var checkRate: Int?
var json = false
var partServer: String?
var ownServer = ServerStartOptions()
var arguments = Arguments(tool: tool)
while let argument = arguments.next() {
    if client.parse(argument, from: &arguments, accepted: [.name, .server, .inputs, .outputs, .noAutoconnect, .reconnect])
        || ownServer.parse(argument, from: &arguments) { continue }
    switch argument {
    case "--help", "-h": tool.help(usage)
    case "--list":
        tool.say(NodeType.listing(matching: arguments.optionalValue()))
        exit(ExitStatus.success)
    case "--info":
        let name = arguments.value(for: argument)
        guard let text = NodeType.pluginDescription(name) else {
            tool.fail("no LV2 plugin with the URI, nor LADSPA plugin with the label or ID, '\(name)' (graphrun --list TEXT finds them)", status: ExitStatus.usage)
        }
        tool.say(text)
        exit(ExitStatus.success)
    case "--check": checkOnly = true
    case "--part": partServer = arguments.value(for: argument)
    case "--json": json = true
    case "--rate": checkRate = arguments.integer(for: argument, in: 1000...Int(StreamFormat.maximumSampleRate))
    case "--threads": LiveGraph.renderThreads = arguments.integer(for: argument, in: 0...64)
    case let arg where arg.hasPrefix("-"): arguments.unknown(arg)
    case let arg:
        guard filePath == nil else { tool.fail("one graph file only ('\(filePath!)' and '\(arg)')", status: ExitStatus.usage) }
        filePath = arg
    }
}
guard let filePath else { tool.fail("no graph file given (see --help)", status: ExitStatus.usage) }
if let partServer { runPart(server: partServer, file: filePath, clientName: client.name, tool: Tool(name: "graphrun (part \"\(partServer)\")")) }
ownServer.check(tool: tool)
/// --reconnect waits for one server: refused (status 2) for a file whose graph runs on several,
/// which ends when any of them goes away.
@MainActor func checkReconnect(_ plan: SplitPlan) {
    if plan.parts.count > 1 && client.reconnect {
        tool.fail("--reconnect is for a graph on one server (this file's runs on \(plan.parts.count)): a part's server that goes away ends graphrun", status: ExitStatus.usage)
    }
}
if ownServer.driver != nil && (checkOnly || partServer != nil) { tool.fail("--start-server is for a run (not --check)", status: ExitStatus.usage) }
if checkRate != nil && !checkOnly { tool.fail("--rate is for --check (a run uses the server's rate)", status: ExitStatus.usage) }

// The file, checked before anything runs: its channel count sizes the client.
let file: FollowedFile
do { file = try FollowedFile(path: filePath) } catch { tool.fail("\(error)", status: ExitStatus.usage) }
if checkOnly {
    // At a rate, as a run is: the rate given, else the usual 48000 Hz, and the answer says which.
    let rate = checkRate ?? 48_000
    let note = checkRate == nil ? "the default; --rate HZ checks at another" : "--rate"
    let reader = GraphFileReader(file: filePath, text: file.text, sampleRate: Double(rate), rateNote: "checked at \(rate) Hz, \(note)")
    let spec: GraphSpec
    do {
        spec = try reader.read()
        checkReconnect(try SplitPlan.make(spec, reader: reader))
    } catch { tool.fail("\(error)", status: ExitStatus.usage) }
    tool.say("graphrun: \(filePath) is valid at \(rate) Hz (\(note)): \(spec.nodes.count) node(s), \(spec.connections.count) connection(s), \(spec.channels) channel(s)")
    exit(ExitStatus.success)
}
let firstReader = GraphFileReader(file: filePath, text: file.text)
let firstSpec: GraphSpec
do { firstSpec = try firstReader.read() } catch { tool.fail("\(error)", status: ExitStatus.usage) }

QuitSignals.install([SIGINT, SIGTERM, SIGHUP, SIGQUIT])

// The graph, one part per server the file's nodes run on (the IO units alone until the file
// is applied), then the clients they run in: io's part's first.
let firstPlan: SplitPlan
do { firstPlan = try SplitPlan.make(firstSpec, reader: firstReader) } catch { tool.fail("\(error)", status: ExitStatus.usage) }
checkReconnect(firstPlan)
let split: SplitGraph
do { split = try SplitGraph(firstPlan) } catch { tool.fail("could not make the graph: \(error)") }
let live = split.main
client.channels = firstSpec.channels
// io joins the first "servers" entry's "jack", unless --server says otherwise.
if client.server == nil, let jack = firstSpec.servers.first?.jack { client.server = jack }
var mainOptions = client.driverOptions(defaultName: firstSpec.name ?? "graphrun")
mainOptions.inputChannels = firstPlan.parts[0].inputPorts
mainOptions.outputChannels = firstPlan.parts[0].outputPorts
// The returns from other servers arrive with their round trip, which the graph reports itself.
if firstPlan.parts.count > 1 { mainOptions.latencyPorts = firstSpec.channels }
let ownJACKServer = ownServer.startForProcess(for: &client, tool: tool)
mainOptions.serverName = client.server
let driver = tool.openDriver(graph: live.graph, options: mainOptions)
// A far part on io's own server would be linked to nothing: refused, naming the entry.
if let same = firstSpec.servers.dropFirst().first(where: { $0.jack == driver.serverName }) {
    driver.close()
    tool.fail("\(firstReader.error([.key("servers"), .key(same.name), .key("jack")], "\"\(same.name)\" joins the JACK server io runs on ('\(driver.serverName)'); give it a server of its own"))", status: ExitStatus.usage)
}
@MainActor func closeAll() { split.stop(); driver.close() }
// The file once more, now that the server's rate gives the bounds that follow it (the cutoff's
// top), made into the graph.
live.sampleRate = Double(driver.sampleRate)
let startReader = GraphFileReader(file: filePath, text: file.text, sampleRate: live.sampleRate)
do { try split.apply(try startReader.read(), text: file.text, reader: startReader) } catch { driver.close(); tool.fail("\(error)", status: ExitStatus.usage) }
do {
    try driver.start()
} catch {
    driver.close()
    if case .graph = error { tool.fail("\(filePath):\(firstSpec.connectionsLine): connections: \(error)", status: ExitStatus.usage) }
    tool.fail("\(error)")
}
// Each far part in a graphrun of its own, on its server, once the netjack2 links they need are
// found. Without any link on io's server, starting the parts comes first: a far server that is
// not running is the likelier mistake, and its part says so with how to start a slave (this
// process cannot ask that server itself: libjack takes one server per process).
let hasLinks = !((try? driver.ports(matching: ":to_slave_1$", sources: false)) ?? []).isEmpty
if split.plan.parts.count > 1 && hasLinks {
    do { _ = try split.linkNames(driver, spec: firstSpec, reader: firstReader) } catch {
        driver.close()
        tool.fail("\(error)", status: ExitStatus.usage)
    }
}
do { try split.startFarParts(file: filePath, text: file.text, mainName: driver.clientName, servers: firstSpec.servers) } catch {
    driver.close()
    tool.fail("\(error)", status: error.status ?? (error.line > 0 ? ExitStatus.usage : ExitStatus.failure))
}
do {
    // io's own channels only: the ports after them carry the edges to other servers.
    for note in try client.routing.connect(driver, channels: firstSpec.channels) { tool.complain(note) }
    for note in try split.link(driver, spec: firstSpec, reader: firstReader) { tool.complain(note) }
} catch let error as JACKDriverError {
    closeAll()
    tool.fail("\(error)", status: ExitStatus.connecting(error))
} catch {
    closeAll()
    tool.fail("\(error)")
}
let runStatus = RunStatus(json: json, tool: tool, file: filePath, live: live, driver: driver)
runStatus.fileSpec = { split.spec }
runStatus.farParts = { split.far.map { part in (part.serverName, part.ready?.client ?? "", part.ready?.server ?? "", part.report()?.xruns ?? 0) } }
runStatus.say(event: "running", "graphrun: running \(filePath) as '\(driver.clientName)' on JACK server '\(driver.serverName)', \(driver.sampleRate) Hz: \(firstSpec.nodes.count) node(s), \(firstSpec.connections.count) connection(s)\(ownJACKServer.map { " (server started as a child jackd, driver \($0.driver))" } ?? "")")

/// Whether the last version read was refused (then a new server rate, which moves the bounds,
/// has it read again).
var lastVersionRefused = false

/// Reads the file again and applies what changed. Errors leave the running graph as it was.
@MainActor func reload(force: Bool) {
    guard let text = file.changedText(force: force, tool: tool) else { return }
    lastVersionRefused = true
    let reader = GraphFileReader(file: filePath, text: text, sampleRate: live.sampleRate)
    do {
        let spec = try reader.read()
        let changes = try split.apply(spec, text: text, reader: reader)
        driver.recomputeLatency()  // a reshaped node may add or remove a resampling conversion
        runStatus.say(event: "reloaded", "graphrun: reloaded \(filePath): \(changes.description)")
        lastVersionRefused = false
    } catch {
        tool.complain("\(error); still running the previous version:\n" + live.description)
    }
}

/// Acts on one command line; false for quit.
@MainActor func command(_ line: String) -> Bool {
    let command = line.trimmingCharacters(in: .whitespaces)
    switch command {
    case "": break
    case "reload": reload(force: true)
    case "dump": runStatus.say(split.description)
    case "status": runStatus.answerStatus()
    case "quit", "q", "exit": return false
    default: tool.complain("unknown command '\(command)' (reload, dump, status, quit)")
    }
    return true
}

// Until quit: the file is read as soon as inotify says a save is complete, and looked at 5 times
// a second besides (FollowedFile says how).
let loop = MainLoop(tool: tool, driver: driver, input: .lines(command))
loop.wakeFileDescriptor = file.wakeFileDescriptor
loop.onWake = { reload(force: false); runStatus.tick(); return file.nextLookMilliseconds }
loop.follow(client)
loop.extraFileDescriptors = split.far.map(\.fileDescriptor)
loop.failure = { split.far.first { $0.checkEnded() }.map { "the part on \"\($0.serverName)\" (its own graphrun) ended; exiting" } }
loop.report = { runStatus.say(event: "notice", "graphrun: \($0)") }
loop.onSampleRateFollowed = {
    live.sampleRate = Double(driver.sampleRate)
    runStatus.say(event: "sample rate", "graphrun: following the server's new sample rate, \(driver.sampleRate) Hz")
    let clamped = live.refitParametersToRate()
    if !clamped.isEmpty {
        runStatus.say(event: "notice", "graphrun: above half the new rate, clamped: \(clamped.joined(separator: ", ")); the file's next save must stay within \(driver.sampleRate / 2) Hz")
    }
    // A version refused at the old rate may fit the new one: it is read again.
    if lastVersionRefused { reload(force: true) }
}
let status = loop.run()
let xruns = driver.xrunCount
QuitSignals.withDeadline(seconds: 2, exitStatus: status) { closeAll() }
runStatus.stopped(xruns: xruns, serverStopped: ownJACKServer?.name)
exit(status)

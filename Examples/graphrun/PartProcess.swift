// graphrun: a far part of a split graph in a process of its own — jack2's libjack serves one server per process — and the pipe that drives it.
//
// jack2 keeps its shared-memory state per process, for the first server a client opened:
// a second client on another server gets the first one's ports and graph (jack2 issue #154,
// open since 2015). So each part of a graph that runs on another server is a child graphrun
// (`graphrun FILE --part NAME --name CLIENT`), driven over its standard input and output, one
// JSON object per line:
//
//   parent → child   {"apply": TEXT}      the file's text: the first makes the part and starts it
//                    {"revert": true}     back to the version before the last apply
//                    {"report": true}     the part's dump and its client's xruns
//                    end of input         quit
//   child → parent   {"ready": {...}}     after the first apply: client, server, rate, period and
//                                         the latencies the round trip is made of, in frames
//                    {"ok": "CHANGES"}    an apply or revert done ({"ok": DUMP, "xruns": N} for a report)
//                    {"error": {...}}     refused (file, line, column, field, message): unchanged
//
// The child's diagnostics go to the shared stderr. When its server goes away the child ends
// (status 1); the parent sees its pipe close and ends too.
import AudioGraph
import AudioGraphJACK
import Foundation
import ToolSupport

/// One line of the protocol, as JSON text; nil for end of input. Reads byte by byte: the
/// other side writes one line and waits for the answer, so nothing is read ahead.
/// Thread: the main thread.
private func readProtocolLine(_ fd: Int32, timeout: Int32 = -1) -> [String: Any]? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        if timeout >= 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, timeout) > 0 else { return nil }
        }
        let n = read(fd, &byte, 1)
        if n < 0 && errno == EINTR { continue }
        guard n == 1 else { return nil }
        if byte == UInt8(ascii: "\n") { break }
        bytes.append(byte)
    }
    return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
}

private func writeProtocolLine(_ fd: Int32, _ value: JSONValue) {
    let line = Array((value.text + "\n").utf8)
    var written = 0
    while written < line.count {
        let n = line[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return }
        written += n
    }
}

extension GraphFileError {
    var protocolValue: JSONValue {
        .object([("error", .object([("file", .string(file)), ("line", .integer(Int64(line))), ("column", .integer(Int64(column ?? 0))),
                                    ("field", .string(field)), ("message", .string(message)),
                                    ("status", status.map { .integer(Int64($0)) } ?? .null)]))])
    }

    init?(protocolObject object: [String: Any]) {
        guard let e = object["error"] as? [String: Any] else { return nil }
        let column = e["column"] as? Int ?? 0
        self.init(file: e["file"] as? String ?? "", line: e["line"] as? Int ?? 0, column: column == 0 ? nil : column,
                  field: e["field"] as? String ?? "", message: e["message"] as? String ?? "",
                  status: (e["status"] as? Int).map { Int32($0) })
    }
}

/// What a far part's child says once it runs.
struct PartReady {
    var client: String, server: String
    var sampleRate: Int, period: Int
    /// The slave's system capture port's capture latency and playback port's playback latency,
    /// and the part's own render latency, in frames.
    var capture: Int, playback: Int, renderLatency: Int
}

/// The parent's handle on one far part's child graphrun.
/// Thread: the main thread.
final class FarPart {
    let serverName: String
    private let file: String
    private let process = Process()
    private let toChild = Pipe(), fromChild = Pipe()
    private(set) var ready: PartReady?
    /// Whether the child has ended (its pipe closed).
    private(set) var hasEnded = false

    /// Starts the child for the part on server entry `serverName` of `file`: `graphrun FILE
    /// --part NAME --name CLIENT --threads N`, with the same stderr.
    /// - Throws: Foundation's error when the program cannot be started.
    init(file: String, serverName: String, clientName: String) throws {
        self.serverName = serverName
        self.file = file
        process.executableURL = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        process.arguments = [file, "--part", serverName, "--name", clientName, "--threads", String(LiveGraph.renderThreads)]
        process.standardInput = toChild
        process.standardOutput = fromChild
        try process.run()
    }

    /// The pipe from the child: readable only when it ends (it speaks only when asked).
    var fileDescriptor: Int32 { fromChild.fileHandleForReading.fileDescriptor }

    /// Whether the child has ended, looked at without waiting.
    func checkEnded() -> Bool {
        if hasEnded { return true }
        var p = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, 0) > 0 { hasEnded = true }
        return hasEnded
    }

    private func ask(_ value: JSONValue, timeout: Int32) throws(GraphFileError) -> [String: Any] {
        writeProtocolLine(toChild.fileHandleForWriting.fileDescriptor, value)
        guard let answer = readProtocolLine(fileDescriptor, timeout: timeout) else {
            hasEnded = true
            throw GraphFileError(file: file, line: 0, field: "servers.\(serverName)",
                                 message: "the part on this server (a graphrun of its own) ended or did not answer within \(timeout / 1000) s; its messages are above")
        }
        if let error = GraphFileError(protocolObject: answer) { throw error }
        return answer
    }

    /// The first apply: the child makes its part, opens its client and starts; 15 s at most.
    func start(text: String) throws(GraphFileError) {
        let answer = try ask(.object([("apply", .string(text))]), timeout: 15_000)
        guard let r = answer["ready"] as? [String: Any] else { throw GraphFileError(file: file, line: 0, field: "servers.\(serverName)", message: "the part's graphrun answered \(answer)") }
        ready = PartReady(client: r["client"] as? String ?? "", server: r["server"] as? String ?? "",
                          sampleRate: r["sampleRate"] as? Int ?? 0, period: r["period"] as? Int ?? 0,
                          capture: r["capture"] as? Int ?? 0, playback: r["playback"] as? Int ?? 0, renderLatency: r["renderLatency"] as? Int ?? 0)
    }

    /// A later version applied to the part; the changes it made (as the log line says them).
    func apply(text: String) throws(GraphFileError) -> String { try ask(.object([("apply", .string(text))]), timeout: 10_000)["ok"] as? String ?? "" }

    /// The part's graph as `dump` shows it, and its client's xruns; nil when the child does
    /// not answer within 2 s.
    func report() -> (description: String, xruns: UInt64)? {
        guard let answer = try? ask(.object([("report", .bool(true))]), timeout: 2_000) else { return nil }
        return (answer["ok"] as? String ?? "", UInt64(answer["xruns"] as? Int ?? 0))
    }

    /// Back to the version before the last apply (after another part refused its share).
    func revert() { _ = try? ask(.object([("revert", .bool(true))]), timeout: 10_000) }

    /// Ends the child: end of input, then up to 3 s for it to close its client.
    func stop() {
        try? toChild.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
    }
}

/// The child's side: runs the part on server entry `server` of `file`, driven over stdin and
/// stdout, until end of input (status 0), its server going away (1) or a first version it
/// cannot run (2). Never returns.
/// - Thread: the main thread.
@MainActor
func runPart(server: String, file: String, clientName: String?, tool: Tool) -> Never {
    let out = STDOUT_FILENO
    func refuse(_ error: GraphFileError, status: Int32) -> Never { writeProtocolLine(out, error.protocolValue); exit(status) }
    func fail(_ message: String, status: Int32) -> Never {
        refuse(GraphFileError(file: file, line: 0, field: "servers.\(server)", message: message), status: status)
    }
    guard let first = readProtocolLine(STDIN_FILENO), let text = first["apply"] as? String else { exit(ExitStatus.usage) }
    // A terminal's ^C, ^\ and hang-up reach the whole process group: the parent quits and
    // closes this part's input, which ends it in order. SIGTERM (sent to this process) ends it too.
    for signal in [SIGINT, SIGQUIT, SIGHUP] { _ = Glibc.signal(signal, SIG_IGN) }
    QuitSignals.install([SIGTERM])
    // Which part, and its ports, from the file as the parent read it.
    func part(_ text: String, rate: Double?) throws(GraphFileError) -> (PartPlan, GraphFileReader, GraphSpec) {
        let reader = GraphFileReader(file: file, text: text, sampleRate: rate)
        let spec = try reader.read()
        let plan = try SplitPlan.make(spec, reader: reader)
        guard let part = plan.parts.dropFirst().first(where: { spec.servers[$0.server].name == server }) else {
            throw reader.error([.key("servers")], "no node runs on \"\(server)\"")
        }
        return (part, reader, spec)
    }
    let plan: PartPlan
    let spec: GraphSpec
    let firstReader: GraphFileReader
    do { (plan, firstReader, spec) = try part(text, rate: nil) } catch { refuse(error, status: ExitStatus.usage) }
    let live: LiveGraph
    do { live = try LiveGraph(fixed: plan.makeFixedUnits()) } catch { fail("could not make the part: \(error)", status: ExitStatus.failure) }
    var options = JACKDriver.Options()
    options.clientName = clientName ?? "graphrun-\(server)"
    options.serverName = spec.servers[plan.server].jack
    options.inputChannels = plan.inputPorts
    options.outputChannels = plan.outputPorts
    options.setFormatsFollowServerRate = true
    let driver: JACKDriver
    do { driver = try JACKDriver(graph: live.graph, options: options) } catch {
        // A far part's server is a netjack2 slave of io's server, not one with a sound card or
        // a dummy driver: say so at the entry's "jack" field, with how to start a slave.
        if case .serverNotRunning(let name) = error {
            let jack = name ?? "default"
            var problem = firstReader.error([.key("servers"), .key(server), .key("jack")],
                                     "no JACK server named '\(jack)' is running; a far part runs on a netjack2 slave of io's server (the master): "
                                     + "on io's server `jack_load netmanager`, then start the slave with `jackd -n \(jack) -d net -a MASTER-ADDRESS` "
                                     + "(the master's IPv4 address, 127.0.0.1 on this machine; `-p PORT` when netmanager is not on 19000); see Docs/NetJACK.md")
            problem.status = ExitStatus.failure
            refuse(problem, status: ExitStatus.failure)
        }
        fail("\(error)", status: ExitStatus.failure)
    }
    live.sampleRate = Double(driver.sampleRate)
    var previous: GraphSpec?
    do {
        let (now, reader, _) = try part(text, rate: live.sampleRate)
        try live.apply(now.spec, reader: reader)
    } catch { driver.close(); refuse(error, status: ExitStatus.usage) }
    do {
        try driver.start()
        // The part's ports in order onto its server's physical ones: a netjack2 slave's are
        // the link's channels, in the order the parent sends them.
        for note in try PortRouting().connect(driver) { tool.complain("\(driver.clientName): \(note)") }
    } catch { driver.close(); fail("\(error)", status: ExitStatus.failure) }
    let capture = driver.physicalPorts(capture: true).first.flatMap { driver.latencyRange(ofPort: $0, capture: true)?.max } ?? 0
    let playback = driver.physicalPorts(capture: false).first.flatMap { driver.latencyRange(ofPort: $0, capture: false)?.max } ?? 0
    writeProtocolLine(out, .object([("ready", .object([
        ("client", .string(driver.clientName)), ("server", .string(driver.serverName)),
        ("sampleRate", .integer(Int64(driver.sampleRate))), ("period", .integer(Int64(driver.bufferSize))),
        ("capture", .integer(Int64(capture))), ("playback", .integer(Int64(playback))),
        ("renderLatency", .integer(Int64((live.graph.renderLatency * Double(driver.sampleRate)).rounded())))]))]))

    func command(_ line: String) -> Bool {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return true }
        do {
            if let text = object["apply"] as? String {
                let before = live.spec
                let (now, reader, _) = try part(text, rate: live.sampleRate)
                let changes = try live.apply(now.spec, reader: reader)
                previous = before
                driver.recomputeLatency()
                writeProtocolLine(out, .object([("ok", .string(changes.description))]))
            } else if object["report"] != nil {
                writeProtocolLine(out, .object([("ok", .string(live.description)), ("xruns", .count(driver.xrunCount))]))
            } else if object["revert"] != nil {
                if let previous { try live.apply(previous, reader: GraphFileReader(file: file, text: text)) }
                previous = nil
                writeProtocolLine(out, .object([("ok", .string("reverted"))]))
            }
        } catch {
            writeProtocolLine(out, error.protocolValue)
        }
        return true
    }
    let loop = MainLoop(tool: tool, driver: driver, input: .lines(command))
    loop.isDone = { !loop.inputOpen }
    // A slave follows its master's rate: the part's units are made at the new one from then on.
    loop.onSampleRateFollowed = { live.sampleRate = Double(driver.sampleRate) }
    let status = loop.run()
    QuitSignals.withDeadline(seconds: 2, exitStatus: status) { driver.close() }
    exit(status)
}

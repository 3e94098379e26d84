// graphrun: what it prints while it runs — plain lines, or with --json one strict JSON object per line; the `status` answer.
import AudioGraph
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

/// graphrun's stdout while a graph runs. Plain: the lines it always printed (`graphrun: running …`,
/// `reloaded …`, `stopped …`) and a `status: …` line per `status` command. With --json every
/// line is one JSON object (``JSONValue``: strict, no `-inf` or `NaN`): `{"event":"running",…}`,
/// `{"event":"reloaded","text":…}`, `{"event":"message","text":…}` (the `dump` answer),
/// a status object once a second (`tick`) and as the `status` answer, `{"event":"stopped",…}`
/// last. Errors stay text on stderr. Thread: the main thread.
@MainActor
final class RunStatus {
    let json: Bool
    private let tool: Tool
    private let file: String
    private let live: LiveGraph
    private let driver: JACKDriver
    private var lastTick: Double = 0
    /// The whole file as last applied (nil: io's part's), and each far part's report: its
    /// server entry, client, server and xruns (a split graph's other processes).
    var fileSpec: () -> GraphSpec? = { nil }
    var farParts: () -> [(entry: String, client: String, server: String, xruns: UInt64)] = { [] }

    init(json: Bool, tool: Tool, file: String, live: LiveGraph, driver: JACKDriver) {
        self.json = json
        self.tool = tool
        self.file = file
        self.live = live
        self.driver = driver
    }

    /// A line: as is, or with --json as `{"event":EVENT,"text":LINE}`.
    func say(event: String = "message", _ line: String) {
        if json { emit(.object([("event", .string(event)), ("text", .string(line))])) } else { tool.say(line) }
    }

    /// The status: the client, its server's rate and period, the file's nodes and connections,
    /// xruns, DSP load (%, one decimal), the graph's failed render callbacks and the NaN/±Inf
    /// samples replaced with 0 (by the graph and by hosted plugins).
    func object(event: String) -> JSONValue {
        let spec = fileSpec() ?? live.spec
        let parts = farParts()
        return .object([
            ("event", .string(event)), ("client", .string(driver.clientName)), ("server", .string(driver.serverName)),
            ("file", .string(file)), ("sampleRate", .integer(Int64(driver.sampleRate))), ("period", .integer(Int64(driver.bufferSize))),
            ("channels", .integer(Int64(spec?.channels ?? 0))),
            ("nodes", .integer(Int64(spec?.nodes.count ?? 0))), ("connections", .integer(Int64(spec?.connections.count ?? 0))),
            ("xruns", .count(driver.xrunCount)), ("dspLoad", .number(driver.cpuLoad)),
            ("renderErrors", .count(live.graph.renderErrorCount)), ("nonFiniteSamples", .count(live.nonFiniteSampleCount)),
        ] + (parts.isEmpty ? [] : [("parts", .array(parts.map { part in
            .object([("server", .string(part.entry)), ("client", .string(part.client)), ("jackServer", .string(part.server)), ("xruns", .count(part.xruns))])
        }))]))
    }

    /// Answers the `status` command: one `status: …` line, or one JSON object.
    func answerStatus() {
        if json { emit(object(event: "status")); return }
        let parts = farParts().map { "; part \"\($0.entry)\" ('\($0.client)' on '\($0.server)'): xruns \($0.xruns)" }.joined()
        tool.say("status: xruns \(driver.xrunCount), DSP load \(RunStatus.oneDecimal(driver.cpuLoad))%, render errors \(live.graph.renderErrorCount), non-finite \(live.nonFiniteSampleCount), server '\(driver.serverName)', \(driver.sampleRate) Hz, period \(driver.bufferSize)\(parts)")
    }

    /// Each wake-up: with --json, a status object once a second.
    func tick() {
        guard json else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let seconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        if seconds - lastTick >= 1 { lastTick = seconds; emit(object(event: "tick")) }
    }

    /// The last line.
    func stopped(xruns: UInt64, serverStopped: String? = nil) {
        if json { emit(.object([("event", .string("stopped")), ("xruns", .count(xruns)), ("nonFiniteSamples", .count(live.nonFiniteSampleCount))])) }
        else { tool.say("graphrun: stopped; \(xruns) xrun(s)\(serverStopped.map { "; server '\($0)' (child jackd) stopped" } ?? "")") }
    }

    private func emit(_ value: JSONValue) { Tool.write(value.text + "\n") }

    static func oneDecimal(_ x: Float) -> String {
        let tenths = Int((abs(x) * 10).rounded())
        return (x < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}

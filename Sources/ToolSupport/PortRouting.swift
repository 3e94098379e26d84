// ToolSupport: port routing — a client's ports connected to ports named, matched by jack_lsp patterns, or physical.
import AudioGraphJACK
#if canImport(Glibc)
import Glibc
#endif

/// What a tool's ports connect to: for each side, the ports given with --input / --output
/// (exact names or patterns, whose matches fill the next ports in order), else the server's
/// physical ports when autoconnecting, else nothing.
/// Thread: a plain value, made anywhere; ``connect(_:)`` on the main thread.
public struct PortRouting: Sendable {
    /// Sources for in_1, in_2, …: full port names or patterns (`system:capture_.*`).
    public var inputs: [String] = []
    /// Destinations for out_1, out_2, …: full port names or patterns.
    public var outputs: [String] = []
    /// Whether a side with nothing given connects to the physical capture / playback ports.
    public var autoconnect = true

    /// Nothing given, autoconnect on.
    public init() {}

    /// Connects both sides of an active client: port k of ours to the k-th port given or
    /// matched (waiting up to 2 s for given ports to appear: their client may still be
    /// starting), or to physical port k. Extra ports on either side stay unconnected.
    /// - Parameter channels: how many of the client's ports on each side are routed (the
    ///   first ones), or nil for all; the rest are left for the caller (graphrun's ports that
    ///   carry a graph's edges to another server).
    /// - Returns: notes, one line each: the ports left unconnected on a side that was routed
    ///   ("note: 1 physical capture port(s) for 2 channels; graphthru:in_2… stay unconnected"),
    ///   and, when autoconnected outputs join physical playback ports that another client
    ///   already feeds (a second graphthru, a player), which ones: both are heard, added
    ///   ("note: autoconnect doubles up: system:playback_1 already plays graphthru:out_1, …").
    /// - Throws: `JACKDriverError.invalidPortPattern`, `.portNotFound` (nothing matched in 2 s),
    ///   `.connectionFailed`, `.serverShutDown`.
    /// - Thread: the main thread (it waits); never a JACK callback.
    public func connect(_ driver: JACKDriver, channels: Int? = nil) throws(JACKDriverError) -> [String] {
        // Refused before any connection is made: a spec that is neither a port nor a pattern.
        for (spec, sources) in inputs.map({ ($0, true) }) + outputs.map({ ($0, false) }) {
            var regex = regex_t()
            if regcomp(&regex, spec, REG_EXTENDED | REG_NOSUB) == 0 { regfree(&regex); continue }
            _ = try driver.ports(matching: spec, sources: sources)   // an exact name passes; else invalidPortPattern
        }
        var notes: [String] = []
        notes += try connectSide(driver, given: inputs, ours: Array(driver.inputPortNames.prefix(channels ?? .max)), outgoing: false)
        notes += try connectSide(driver, given: outputs, ours: Array(driver.outputPortNames.prefix(channels ?? .max)), outgoing: true)
        return notes
    }

    private func connectSide(_ driver: JACKDriver, given: [String], ours: [String], outgoing: Bool) throws(JACKDriverError) -> [String] {
        guard !given.isEmpty || autoconnect else { return [] }
        var theirs: [String] = []
        if given.isEmpty {
            theirs = driver.physicalPorts(capture: !outgoing)
        } else {
            for spec in given { theirs += try driver.ports(matching: spec, sources: !outgoing, timeout: 2) }
        }
        var notes: [String] = []
        if given.isEmpty && outgoing {
            // Looked at before connecting, so our own connections are not counted.
            let fed = theirs.prefix(ours.count).compactMap { their -> String? in
                let others = driver.connections(ofPort: their).filter { !$0.hasPrefix(driver.clientName + ":") }
                return others.isEmpty ? nil : "\(their) already plays \(others.joined(separator: " and "))"
            }
            if !fed.isEmpty {
                notes.append("note: autoconnect doubles up: \(fed.joined(separator: ", ")); \(driver.clientName)'s output is added to it (choose with --output, or --no-autoconnect)")
            }
        }
        for (their, our) in zip(theirs, ours) {
            if outgoing { try driver.connect(our, to: their, timeout: given.isEmpty ? 0 : 2) }
            else { try driver.connect(their, to: our, timeout: given.isEmpty ? 0 : 2) }
        }
        let label = given.isEmpty ? (outgoing ? "physical playback" : "physical capture") : (outgoing ? "--output" : "--input")
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        if theirs.count < ours.count {
            notes.append("note: \(count(theirs.count, "\(label) port")) for \(count(ours.count, "channel")); \(ours[theirs.count])… stay\(ours.count - theirs.count == 1 ? "s" : "") unconnected")
        }
        if theirs.count > ours.count {
            notes.append("note: \(count(theirs.count, "\(label) port")) matched for \(count(ours.count, "channel")); \(theirs[ours.count])… stay\(theirs.count - ours.count == 1 ? "s" : "") unconnected (raise --channels to take them)")
        }
        return notes
    }
}

// ToolSupport: the JACK client options the tools share (--name, --server, --channels, routing) and opening the client.
import AudioGraph
import AudioGraphJACK

/// How a tool's JACK client is named, which server it joins, how many ports it has, what
/// they connect to and whether it waits for a server that went away: the options every tool
/// parses alike.
/// Thread: the main thread.
public struct ClientOptions {
    /// Which of the shared options a tool takes; the others stay unknown options.
    public struct Accepted: OptionSet, Sendable {
        /// The option set's bits.
        public let rawValue: Int
        /// An option set from its bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `--name NAME`.
        public static let name = Accepted(rawValue: 1)
        /// `--server NAME`.
        public static let server = Accepted(rawValue: 2)
        /// `--channels N`, 1…64.
        public static let channels = Accepted(rawValue: 4)
        /// `--input PORT`, repeatable.
        public static let inputs = Accepted(rawValue: 8)
        /// `--output PORT`, repeatable.
        public static let outputs = Accepted(rawValue: 16)
        /// `--no-autoconnect`.
        public static let noAutoconnect = Accepted(rawValue: 32)
        /// `--reconnect`.
        public static let reconnect = Accepted(rawValue: 64)
        /// All of them.
        public static let all: Accepted = [.name, .server, .channels, .inputs, .outputs, .noAutoconnect, .reconnect]
    }

    /// The client name asked for with --name (checked: 1…63 bytes, no ':'), or nil for the tool's default.
    public var name: String?
    /// The server asked for with --server (never empty), or nil: `$JACK_DEFAULT_SERVER`, else "default".
    public var server: String?
    /// Input and output ports, 1…64.
    public var channels: Int
    /// What the ports connect to once the client runs.
    public var routing = PortRouting()
    /// `--reconnect`: when the server goes away, wait for it and resume (``MainLoop/reconnects``)
    /// instead of exiting 1.
    public var reconnect = false

    /// Defaults: no name (the tool's), the default server, `channels` ports each way, autoconnect.
    public init(channels: Int = 2) { self.channels = channels }

    /// Takes `argument` when it is one of the `accepted` options, reading its value from
    /// `arguments`. Returns false, consuming nothing more, for any other argument.
    /// Exits 2 (through `arguments`) for a missing or bad value: a name JACK cannot take, an
    /// empty server name, a channel count outside 1…64.
    public mutating func parse(_ argument: String, from arguments: inout Arguments, accepted: Accepted = .all) -> Bool {
        let tool = arguments.tool
        switch argument {
        case "--name" where accepted.contains(.name):
            let value = arguments.value(for: argument)
            if let problem = JACKDriver.problem(withClientName: value) { tool.fail("--name '\(value)': \(problem)", status: ExitStatus.usage) }
            name = value
        case "--server" where accepted.contains(.server):
            let value = arguments.value(for: argument)
            guard !value.isEmpty else { tool.fail("--server needs a name (omit it for $JACK_DEFAULT_SERVER or \"default\")", status: ExitStatus.usage) }
            server = value
        case "--channels" where accepted.contains(.channels):
            channels = arguments.integer(for: argument, in: 1...64)
        case "--input" where accepted.contains(.inputs): routing.inputs.append(arguments.value(for: argument))
        case "--output" where accepted.contains(.outputs): routing.outputs.append(arguments.value(for: argument))
        case "--no-autoconnect" where accepted.contains(.noAutoconnect): routing.autoconnect = false
        case "--reconnect" where accepted.contains(.reconnect): reconnect = true
        default: return false
        }
        return true
    }

    /// The driver's options: this name (or `defaultName`), server and channel count both ways;
    /// set formats follow the server's rate (``JACKDriver/Options/setFormatsFollowServerRate``).
    public func driverOptions(defaultName: String) -> JACKDriver.Options {
        var options = JACKDriver.Options()
        options.clientName = name ?? defaultName
        options.serverName = server
        options.inputChannels = channels
        options.outputChannels = channels
        // The tools set formats at the server's rate only to choose channel counts.
        options.setFormatsFollowServerRate = true
        return options
    }
}

extension Tool {
    /// Opens the JACK client for `graph` (see `JACKDriver.init(graph:options:)`), or exits: with
    /// ``ExitStatus/usage`` (2) for a client or server name JACK refuses, ``ExitStatus/failure`` (1) otherwise (no
    /// server, the graph refused), printing the driver's one-line reason.
    /// - Thread: the main thread.
    public func openDriver(graph: AudioGraph, options: JACKDriver.Options) -> JACKDriver {
        do {
            return try JACKDriver(graph: graph, options: options)
        } catch {
            switch error {
            case .invalidClientName, .invalidServerName: fail("\(error)", status: ExitStatus.usage)
            default: fail("\(error)")
            }
            fail("\(error)")
        }
    }
}

extension MainLoop {
    /// Sets the loop up for `options`: with `--reconnect` it waits for a server that went away,
    /// and once the client is back it connects the ports as at the start (`routing`, the
    /// patterns matched anew), then calls `afterConnecting` (port names); what cannot be
    /// restored is said as a note, and the tool runs on.
    public func follow(_ options: ClientOptions, afterConnecting: @escaping () throws -> Void = {}) {
        reconnects = options.reconnect
        let routing = options.routing, driver = self.driver
        onReconnected = {
            var notes: [String] = []
            do throws(JACKDriverError) {
                notes += try routing.connect(driver)
            } catch {
                // A port not back yet that the driver waits for is said with the waiting ones.
                let awaited: Bool
                if case .portNotFound(let port) = error {
                    awaited = driver.pendingConnections.contains { $0.source == port || $0.destination == port }
                } else {
                    awaited = false
                }
                if !awaited { notes.append("note: could not restore every connection: \(error) (connect with jack_connect or a patchbay)") }
            }
            do { try afterConnecting() } catch { notes.append("note: could not name the ports again: \(error)") }
            return notes
        }
    }
}

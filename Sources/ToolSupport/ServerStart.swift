// ToolSupport: a JACK server of the tool's own (--start-server [DRIVER], and the netjack2 slave's --net-* options) — parsed, checked and started before the client joins.
import AudioGraphJACK
#if canImport(Glibc)
import Glibc
#endif

/// `--start-server [DRIVER]` and, for `DRIVER` "net" (a netjack2 slave), `--net-master
/// HOST[:PORT]`, `--net-capture N`, `--net-playback N`, `--net-latency N`, `--net-name NAME`:
/// a child jackd the tool starts before its client joins and stops at exit (``JACKServer``).
/// Thread: the main thread (refusals exit the process).
public struct ServerStartOptions {
    /// The driver of the server to start, or nil to join a running one.
    public var driver: String?
    /// The netjack2 link for driver "net" (nil until a --net-* option or the driver asks for one).
    public var net: JACKServer.NetSlave?
    /// The --net-* options given, for the check that they come with `--start-server net`.
    private var netOptionsGiven: [String] = []

    /// No server of our own.
    public init() {}

    /// jack2's multicast address: a slave without --net-master finds a master on the local network.
    public static let multicastAddress = "225.3.19.154"

    /// The lines of `--help` that describe these options, 2-space indented, descriptions from column 22.
    public static let usage = """
      --start-server [DRIVER]
                          start that server as a jackd child process (DRIVER "dummy" by default,
                          "alsa" for a sound card; 48 kHz, period 256) and stop it on exit;
                          "net" joins a netjack2 master as a slave (its rate and period):
      --net-master HOST[:PORT]
                          the master's IPv4 address and netmanager port (default: multicast
                          225.3.19.154, port 19000); waits up to 10 s for the master to answer
      --net-capture N     channels from the master (0…256; default: its physical capture count)
      --net-playback N    channels back to it (0…256; default: its physical playback count)
      --net-latency N     network latency in periods, 0…30 (default: 5)
      --net-name NAME     the slave's client name on the master (default: this host's name)
    """

    /// Takes `argument` when it is one of these options, reading its value from `arguments`;
    /// false, consuming nothing more, for any other. Exits 2 for a missing or bad value: an
    /// empty driver, an IPv6 master address (netjack2 is IPv4 only), a host that does not resolve, a port, count or latency out of range, a
    /// client name JACK cannot take.
    public mutating func parse(_ argument: String, from arguments: inout Arguments) -> Bool {
        let tool = arguments.tool
        switch argument {
        // The driver is optional: the next argument is it unless it is another option.
        case "--start-server":
            let driver = arguments.optionalValue() ?? "dummy"
            guard !driver.isEmpty else { tool.fail("--start-server takes a driver name (dummy, alsa, net, …) or nothing for dummy, not ''", status: ExitStatus.usage) }
            self.driver = driver
            return true
        case "--net-master":
            let value = arguments.value(for: argument)
            // jack2's net backend opens AF_INET sockets and reads the address with inet_aton
            // (posix/JackNetUnixSocket.cpp): an IPv6 master ("::1", "[::1]:19000") cannot work.
            if value.hasPrefix("[") || value.filter({ $0 == ":" }).count > 1 {
                tool.fail("--net-master '\(value)': netjack2's master address must be IPv4 (jack2's net backend takes IPv4 only); give the master's IPv4 address, e.g. 127.0.0.1 or 192.168.1.10:19000, or a host name that has one", status: ExitStatus.usage)
            }
            var host = Substring(value), port = 19_000
            if let colon = value.lastIndex(of: ":") {
                let text = value[value.index(after: colon)...]
                guard let number = Int(text), (1...65_535).contains(number) else {
                    tool.fail("--net-master '\(value)': the port after ':' must be 1…65535, not '\(text)'", status: ExitStatus.usage)
                }
                host = value[..<colon]
                port = number
            }
            guard var link = JACKServer.NetSlave.resolving(host: String(host), port: port) else {
                tool.fail("--net-master '\(value)': '\(host)' is not an IPv4 address or a host name that resolves", status: ExitStatus.usage)
            }
            if let net {
                link.captureChannels = net.captureChannels
                link.playbackChannels = net.playbackChannels
                link.latency = net.latency
                link.clientName = net.clientName
            }
            net = link
        case "--net-capture": withNet { $0.captureChannels = arguments.integer(for: argument, in: JACKServer.NetSlave.channelRange) }
        case "--net-playback": withNet { $0.playbackChannels = arguments.integer(for: argument, in: JACKServer.NetSlave.channelRange) }
        case "--net-latency": withNet { $0.latency = arguments.integer(for: argument, in: JACKServer.NetSlave.latencyRange) }
        case "--net-name":
            let value = arguments.value(for: argument)
            if let problem = JACKDriver.problem(withClientName: value) { tool.fail("--net-name '\(value)': \(problem)", status: ExitStatus.usage) }
            withNet { $0.clientName = value }
        default: return false
        }
        netOptionsGiven.append(argument)
        return true
    }

    /// Changes the netjack2 options, starting from the multicast default.
    private mutating func withNet(_ change: (inout JACKServer.NetSlave) -> Void) {
        var link = net ?? JACKServer.NetSlave(address: ServerStartOptions.multicastAddress)
        change(&link)
        net = link
    }

    /// Checks the options together once all are parsed: --net-* options need `--start-server
    /// net`, and the link they describe must be able to work (``JACKServer/NetSlave/problem``:
    /// at least one audio channel either way). Exits 2 otherwise.
    public func check(tool: Tool) {
        if let given = netOptionsGiven.first, driver != "net" {
            tool.fail("\(given) is for a netjack2 slave: it needs --start-server net", status: ExitStatus.usage)
        }
        if driver == "net", let problem = net?.problem {
            tool.fail("--start-server net: \(problem)", status: ExitStatus.usage)
        }
    }

    // SAFETY: set once on the main thread before the atexit handler (which captures nothing) can read it.
    nonisolated(unsafe) private static var running: JACKServer?

    /// ``start(for:tool:)``, the server then kept for the life of the process: stopped at exit
    /// whatever the path to exit, after the client has closed (and by its watchdog if the tool
    /// is killed). What graphthru, graphrun and graphrecord call. Nil when none is asked for.
    /// Thread: the main thread, once.
    @discardableResult
    public func startForProcess(for client: inout ClientOptions, tool: Tool) -> JACKServer? {
        guard let server = start(for: &client, tool: tool) else { return nil }
        ServerStartOptions.running = server
        ServerStartOptions.startedWith = self
        atexit { ServerStartOptions.running?.stop() }
        return server
    }

    // SAFETY: set once on the main thread with `running`; read on the main thread.
    nonisolated(unsafe) private static var startedWith: ServerStartOptions?

    /// For `--reconnect`: when the jackd ``startForProcess(for:tool:)`` started has exited (killed,
    /// crashed, its netjack2 master gone for good), starts it again with the same options, so the
    /// client has a server to come back to. Nil when there is nothing to do (no server of our
    /// own, or it runs); otherwise what happened, to be said: it was started again, or why it
    /// could not be (try again later). Thread: the main thread; blocks while jackd starts (up to
    /// 10 s, and for "net" until the master answers).
    public static func restartOwnServerIfExited() -> String? {
        guard let server = running, !server.isRunning, let options = startedWith, let driver = options.driver else { return nil }
        server.stop()  // reaps the exited child
        do {
            running = try options.makeServer(named: server.name, driver: driver)
            return "the jackd it started (server '\(server.name)', driver \(driver)) had exited: started it again"
        } catch {
            running = server  // exited: looked at again at the next try
            return "the jackd it started (server '\(server.name)') had exited and could not be started again yet: \(error)"
        }
    }

    /// Starts the server asked for, under the client's server name (else
    /// `$JACK_DEFAULT_SERVER`, else "default"), and points the client at it; nil when none is
    /// asked for. Exits 2 for a name too long for a server of our own, 1 when it cannot start
    /// (a server of that name runs, jackd is missing, no such driver, no netjack2 master answered).
    /// Thread: the main thread; blocks until the server answers (and, for "net", its master).
    public func start(for client: inout ClientOptions, tool: Tool) -> JACKServer? {
        guard let driver else { return nil }
        let environment = getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }
        let name = client.server ?? (environment?.isEmpty == false ? environment! : "default")
        // JACKServer's bound: a name jackd can bind a socket for. Past it, a bad option (2).
        if name.utf8.count > JACKServer.maximumNameLength {
            tool.fail("--start-server: a server name is 1…\(JACKServer.maximumNameLength) bytes; '\(name.prefix(40))…' has \(name.utf8.count)", status: ExitStatus.usage)
        }
        let server: JACKServer
        do { server = try makeServer(named: name, driver: driver) } catch { tool.fail("\(error)") }
        client.server = name
        return server
    }

    /// A jackd of `driver` named `name`, with the netjack2 options for "net" (multicast when none
    /// were given). Thread: the main thread; blocks while it starts.
    private func makeServer(named name: String, driver: String) throws(JACKDriverError) -> JACKServer {
        if driver == "net" { return try JACKServer(name: name, net: net ?? JACKServer.NetSlave(address: ServerStartOptions.multicastAddress)) }
        return try JACKServer(name: name, driver: driver)
    }
}

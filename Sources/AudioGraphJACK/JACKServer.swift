// AudioGraphJACK: a JACK server of our own — jackd run as a child process that cannot outlive this one, for machines with none.
import CJack
import CProcessSpawn
#if canImport(Glibc)
import Glibc
#endif

/// A JACK server run as a child process of this one: jack2's `jackd` program, found on `PATH`
/// (Debian's `jackd2` package), for machines where no server runs yet. Clients of this or any
/// other process join it by its name, as they would join any `jackd`.
///
/// It is a separate program, not a library: nothing of jack2's server (GPL) is linked into or
/// loaded by this process. It never outlives this process: it runs under a small watchdog
/// process (a fork of this one, which the kernel tells when this process dies, however it
/// dies, SIGKILL included), which then sends jackd SIGTERM, once this process is wholly gone
/// and its clients have left the server, so that jackd shuts down cleanly (within about half
/// a second). Its output is read by this process and shown only when
/// `AUDIOGRAPH_JACK_VERBOSE=1` (each line prefixed `jackd: `, on stderr).
///
/// Stop it with ``stop()`` (also done on deinit) before the process exits: a clean stop lets
/// the clients close first and jackd remove its entry from jack2's machine-wide registry of 8
/// servers.
/// Thread: control thread, never a JACK callback. The watchdog is forked by a thread of the
/// server's own that lives as long as jackd, so the thread that created the server may end first.
/// SAFETY (`@unchecked Sendable`): its one mutable field, the child handle, changes only in init and stop, on the control thread.
public final class JACKServer: @unchecked Sendable {
    /// The server's name, as clients give it (`-s NAME`, `$JACK_DEFAULT_SERVER`).
    public let name: String
    /// The longest name a server of our own is started under, in bytes. (jackd's socket path
    /// must fit 108 bytes, which limits it further, to about 85: jackd then says it cannot bind.)
    public static let maximumNameLength = 127
    /// The backend driver, for example "dummy" (no sound card) or "alsa".
    public let driver: String
    private var child: OpaquePointer?

    /// How long ``init(name:driver:sampleRate:period:realtime:driverArguments:)`` waits for jackd to answer, in seconds.
    static let startTimeout = 10.0
    /// How long ``stop()`` gives jackd after SIGTERM before SIGKILL, then after SIGKILL, in milliseconds.
    static let stopGrace: (term: Int32, kill: Int32) = (3000, 2000)

    /// Starts `jackd [-R | --no-realtime] -n NAME -d DRIVER [--rate RATE] [--period PERIOD]` as
    /// a child process and waits until a client can open on it (polled every 50 ms, up to 10 s).
    /// - Parameters:
    ///   - name: server name, 1…127 bytes; must not be in use on this machine.
    ///   - driver: a jackd driver (backend) name: "dummy" (default; needs no hardware), "alsa",
    ///     "net", … (`jackd --help` lists them).
    ///   - sampleRate: Hz, 0…768 000, passed as `--rate` to drivers that list that option in
    ///     `jackd -d DRIVER --help` (dummy, alsa, netone); 0 keeps the driver's default.
    ///   - period: frames per period, 0…8192, passed as `--period` to drivers that list that
    ///     option; 0 keeps the driver's default.
    ///   - realtime: ask for real-time scheduling (`-R`; jack2 falls back to normal scheduling
    ///     when it is not permitted) or not (`--no-realtime`). Default: on for real drivers,
    ///     off for "dummy".
    ///   - driverArguments: further options for the driver, after `-d DRIVER` and the rate and
    ///     period (for example `["-C", "4"]`), passed as they are; jackd refuses what the driver
    ///     does not take (then this throws with jackd's reason).
    /// - Throws: ``JACKDriverError/serverStartFailed(name:reason:)`` — a server of that name
    ///   already runs, `jackd` is not on `PATH`, or jackd exited before it answered (the reason
    ///   is jackd's own last line: no such driver, the device is busy, "too many servers
    ///   already active", …) or did not answer within 10 s. Nothing is left running then.
    /// - Thread: control thread; starts processes and a thread, blocks until jackd answers.
    public init(name: String, driver: String = "dummy", sampleRate: Int = 48_000, period: Int = 256,
                realtime: Bool? = nil, driverArguments: [String] = []) throws(JACKDriverError) {
        guard !name.isEmpty, name.utf8.count <= JACKServer.maximumNameLength else {
            throw .serverStartFailed(name: name, reason: "a server name is 1…\(JACKServer.maximumNameLength) bytes")
        }
        guard !driver.isEmpty else { throw .serverStartFailed(name: name, reason: "no driver named") }
        guard (0...768_000).contains(sampleRate), (0...8192).contains(period) else {
            throw .serverStartFailed(name: name, reason: "sample rate \(sampleRate) or period \(period) out of range")
        }
        if JACKServer.isRunning(name) {
            throw .serverStartFailed(name: name, reason: "a JACK server of that name is already running; join it instead")
        }
        self.name = name
        self.driver = driver
        var arguments = ["jackd", (realtime ?? (driver != "dummy")) ? "-R" : "--no-realtime", "-n", name, "-d", driver]
        if sampleRate != 0 || period != 0 {
            let accepted = JACKServer.driverOptions(driver)
            if sampleRate != 0 && accepted.contains("--rate") { arguments += ["--rate", String(sampleRate)] }
            if period != 0 && accepted.contains("--period") { arguments += ["--period", String(period)] }
        }
        arguments += driverArguments
        let (spawned, error) = JACKServer.spawn(arguments, forward: JACKServer.verbose ? STDERR_FILENO : -1)
        guard let child = spawned else {
            throw .serverStartFailed(name: name, reason: error == ENOENT ? "jackd is not on PATH (install jackd2)"
                                                                         : "cannot run jackd: \(String(cString: strerror(error)))")
        }
        self.child = child

        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let deadline = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9 + JACKServer.startTimeout
        while true {
            if audiograph_child_wait(child, 0) {
                let reason = JACKServer.reason(child)
                audiograph_child_release(child)
                self.child = nil
                throw .serverStartFailed(name: name, reason: reason)
            }
            if JACKServer.isRunning(name) { return }
            clock_gettime(CLOCK_MONOTONIC, &clock)
            if Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9 >= deadline {
                let last = JACKServer.lastLine(child)
                stop()
                throw .serverStartFailed(name: name, reason: "jackd did not answer within \(Int(JACKServer.startTimeout)) s"
                                         + (last.map { " (its last words: \($0))" } ?? ""))
            }
            _ = audiograph_child_wait(child, 50)   // returns at once if jackd exits
        }
    }

    /// Whether jackd still runs: false once it has exited (stopped with ``stop()``, killed, or
    /// gone by itself). Does not block. Thread: control thread (the handle it reads is the one
    /// ``stop()`` releases).
    public var isRunning: Bool {
        guard let child else { return false }
        return !audiograph_child_wait(child, 0)
    }

    /// Stops jackd: SIGTERM (its clients, in any process, are told it shut down), then waits up
    /// to 3 s for it to exit, then SIGKILL and up to 2 s more. Safe to call twice.
    /// Thread: control thread, never a JACK callback; blocks until jackd has exited (5 s at most).
    public func stop() {
        guard let child else { return }
        self.child = nil
        audiograph_child_signal(child, SIGTERM)
        if !audiograph_child_wait(child, JACKServer.stopGrace.term) {
            audiograph_child_signal(child, SIGKILL)
            _ = audiograph_child_wait(child, JACKServer.stopGrace.kill)
        }
        audiograph_child_release(child)
    }

    deinit { stop() }

    /// Whether a JACK server named `name` answers, found by opening and closing a client
    /// (never starting a server). False for a name libjack cannot take (empty, or over
    /// ``JACKDriver/maximumServerNameLength`` bytes), which no server can have. Thread: control thread.
    public static func isRunning(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= JACKDriver.maximumServerNameLength else { return false }
        JACKDriver.routeLibjackMessages()
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
        guard let client = audiograph_jack_client_open("audiograph-probe", options, &status, name) else { return false }
        jack_client_close(client)
        return true
    }

    // MARK: - A netjack2 slave

    /// How a server of our own joins a netjack2 master as a slave (jack2's `net` backend,
    /// `jackd -d net`): where the master's `netmanager` listens, how many audio channels go
    /// each way, and the network latency. The master sets the rate and the period.
    public struct NetSlave: Sendable, Equatable {
        /// The master's IPv4 address (dotted quad), or a multicast address (jack2's default,
        /// 225.3.19.154, finds a master on the local network). A host name is resolved by
        /// ``resolving(host:port:)``.
        public var address: String
        /// The UDP port the master's netmanager listens on, 1…65535 (jack2's default: 19000).
        public var port: Int = 19_000
        /// Audio channels from the master into this server's `system:capture_N` ports, 0…256,
        /// or nil for as many as the master has physical capture ports (`-C -1`).
        public var captureChannels: Int?
        /// Audio channels from this server's `system:playback_N` ports back to the master,
        /// 0…256, or nil for as many as the master has physical playback ports (`-P -1`).
        public var playbackChannels: Int?
        /// The network latency in periods, 0…30 (`-l`; jack2's default: 5), or nil for jack2's.
        /// The master receives what the slave sent that many periods later; it appears in the
        /// slave's port latency ranges.
        public var latency: Int?
        /// The slave's client name on the master (its ports there are `NAME:to_slave_N` and
        /// `NAME:from_slave_N`), or nil for jack2's default (the host name).
        public var clientName: String?

        /// The master's address and port; channels, latency and name left to jack2.
        public init(address: String, port: Int = 19_000) {
            self.address = address
            self.port = port
        }

        /// The bound of ``latency`` (jack2's "network latency is limited to 30").
        public static let latencyRange = 0...30
        /// The bound of the channel counts (jack2's net driver allocates at most 256 ports each way).
        public static let channelRange = 0...256

        /// `host` (an IPv4 address or a name, resolved to its first IPv4 address) and `port`;
        /// nil when the name does not resolve. Thread: any; may block on DNS.
        public static func resolving(host: String, port: Int = 19_000) -> NetSlave? {
            var hints = addrinfo()
            hints.ai_family = AF_INET
            hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
            var found: UnsafeMutablePointer<addrinfo>?
            guard !host.isEmpty, getaddrinfo(host, nil, &hints, &found) == 0, let first = found else { return nil }
            defer { freeaddrinfo(found) }
            guard let raw = first.pointee.ai_addr else { return nil }
            var address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return nil }
            return NetSlave(address: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port: port)
        }

        /// The `net` driver's options: `-a ADDRESS -p PORT [-C N] [-P N] [-l N] [-n NAME]`.
        public var driverArguments: [String] {
            var arguments = ["-a", address, "-p", String(port)]
            if let captureChannels { arguments += ["-C", String(captureChannels)] }
            if let playbackChannels { arguments += ["-P", String(playbackChannels)] }
            if let latency { arguments += ["-l", String(latency)] }
            if let clientName { arguments += ["-n", clientName] }
            return arguments
        }

        /// Why these options cannot work, or nil: a port outside 1…65535, channels outside
        /// 0…256 or none either way (a link without audio makes no `system:` ports, which is how
        /// a started slave is known to have joined its master), a latency outside 0…30, an
        /// empty or over-long client name.
        public var problem: String? {
            if !(1...65_535).contains(port) { return "UDP port \(port) is outside 1…65535" }
            for (what, count) in [("capture", captureChannels), ("playback", playbackChannels)] {
                if let count, !NetSlave.channelRange.contains(count) { return "\(count) \(what) channels is outside 0…256" }
            }
            if captureChannels == 0 && playbackChannels == 0 {
                return "0 capture and 0 playback channels carry no audio; give at least one channel in one direction"
            }
            if let latency, !NetSlave.latencyRange.contains(latency) { return "a network latency of \(latency) periods is outside 0…30" }
            if let clientName, let why = JACKDriver.problem(withClientName: clientName) { return "client name '\(clientName)': \(why)" }
            return nil
        }
    }

    /// Starts `jackd -n NAME -d net -a ADDRESS -p PORT …` (see ``NetSlave``) and waits until
    /// the link to the master is up: the server answers at once, but its `system:` ports
    /// appear only once the master's netmanager has answered (polled every 50 ms, up to 10 s).
    /// The rate and period are the master's.
    /// - Parameters:
    ///   - name: server name, as for ``init(name:driver:sampleRate:period:realtime:driverArguments:)``.
    ///   - net: where the master is, channels, latency, name on the master.
    ///   - realtime: as for the other initializer (default: on).
    /// - Throws: ``JACKDriverError/serverStartFailed(name:reason:)`` — bad ``NetSlave``
    ///   options, any reason the other initializer has, or no master answered within 10 s (the
    ///   reason says how to load netmanager there). Nothing is left running then.
    /// - Thread: control thread; blocks until the link is up.
    public convenience init(name: String, net: NetSlave, realtime: Bool? = nil) throws(JACKDriverError) {
        if let problem = net.problem { throw .serverStartFailed(name: name, reason: "netjack2: \(problem)") }
        try self.init(name: name, driver: "net", sampleRate: 0, period: 0, realtime: realtime, driverArguments: net.driverArguments)
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let deadline = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9 + JACKServer.startTimeout
        while !JACKServer.hasPorts(name, matching: "^system:") {
            clock_gettime(CLOCK_MONOTONIC, &clock)
            if !isRunning || Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9 >= deadline {
                let last = child.flatMap { JACKServer.lastLine($0) }
                stop()
                throw .serverStartFailed(name: name, reason: "no netjack2 master answered at \(net.address):\(net.port) within \(Int(JACKServer.startTimeout)) s"
                                         + " (on the master: jack_load netmanager -i \"-a \(net.address) -p \(net.port)\")"
                                         + (last.map { "; jackd's last words: \($0)" } ?? ""))
            }
            usleep(50_000)
        }
    }

    /// Whether server `name` has a port whose name matches `pattern` (a `jack_get_ports`
    /// regular expression), seen by a probe client. Thread: control thread.
    static func hasPorts(_ name: String, matching pattern: String) -> Bool {
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
        guard let client = audiograph_jack_client_open("audiograph-probe", options, &status, name) else { return false }
        defer { jack_client_close(client) }
        guard let list = jack_get_ports(client, pattern, nil, 0) else { return false }
        jack_free(UnsafeMutableRawPointer(mutating: list))
        return true
    }

    // MARK: - The child

    /// Whether jackd's own output is shown (on stderr), as libjack's is: `AUDIOGRAPH_JACK_VERBOSE=1`.
    private static var verbose: Bool {
        getenv("AUDIOGRAPH_JACK_VERBOSE").map { String(cString: $0) == "1" } ?? false
    }

    /// Starts `arguments` (`arguments[0]` on `PATH`) as a child that dies with this process;
    /// its lines go to `forward` too when that is 0 or more. Nil and the errno when it cannot start.
    private static func spawn(_ arguments: [String], forward: Int32 = -1) -> (child: OpaquePointer?, error: Int32) {
        let copies: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { copies.forEach { free($0) } }
        var error: Int32 = 0
        let child = copies.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                audiograph_child_spawn($0, forward, &error)
            }
        }
        return (child, error)
    }

    /// The options (`--rate`, `--period`, …) that `driver` lists in `jackd -d DRIVER --help`;
    /// empty when jackd does not know the driver (the start then fails with jackd's reason).
    private static func driverOptions(_ driver: String) -> Set<String> {
        guard let child = spawn(["jackd", "-d", driver, "--help"]).child else { return [] }
        if !audiograph_child_wait(child, 5000) {
            audiograph_child_signal(child, SIGKILL)
            _ = audiograph_child_wait(child, 2000)
        }
        defer { audiograph_child_release(child) }
        // Lines such as "\t-r, --rate \tSample rate (default: 48000)".
        return Set(output(child, stream: 1).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "," })
            .filter { $0.hasPrefix("--") }.map(String.init))
    }

    /// The last output of the child's `stream` (1: stdout, 2: stderr), at most 8 KiB.
    private static func output(_ child: OpaquePointer, stream: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 8193)
        let count = audiograph_child_output(child, stream, &buffer, buffer.count)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// jackd's summaries that follow the line saying why ("Failed to open server"): the reason
    /// is the line before them.
    private static let summaries = ["Failed to open server", "Failed to start server", "Cannot stop server..."]
    /// jackd's banner and start-up lines on stdout: never a reason.
    private static let banner = ["jackdmp ", "Copyright ", "jackdmp comes with", "This is free software",
                                 "under certain conditions", "JACK server starting", "self-connect-mode is"]

    /// jackd's last meaningful line: the last line on stderr that is not a summary (else the
    /// summary), else the last stdout line that is not the banner; nil when it said nothing.
    private static func lastLine(_ child: OpaquePointer) -> String? {
        func lines(_ stream: Int32) -> [String] {
            output(child, stream: stream).split(separator: "\n")
                .map { $0.trimmingCharacters(in: " \t\r") }.filter { !$0.isEmpty }
        }
        let errors = lines(2)
        if let line = errors.last(where: { !summaries.contains($0) }) ?? errors.last { return line }
        return lines(1).last { line in !banner.contains { line.hasPrefix($0) } }
    }

    /// Why an exited jackd did not start: its last meaningful line (with where to see the rest,
    /// when its output is not shown), or its exit status.
    private static func reason(_ child: OpaquePointer) -> String {
        if let line = lastLine(child) {
            return "jackd: \(line)" + (verbose ? "" : " (AUDIOGRAPH_JACK_VERBOSE=1 shows all of jackd's output)")
        }
        let status = audiograph_child_status(child)
        if status == -1 { return "jackd exited before it answered" }
        if status & 0x7f == 0 { return "jackd exited with status \((status >> 8) & 0xff) before it answered, saying nothing" }
        return "jackd was killed by signal \(status & 0x7f) before it answered"
    }
}

private extension Substring {
    /// The text without the leading and trailing characters in `characters`.
    func trimmingCharacters(in characters: String) -> String {
        let set = Set(characters)
        guard let first = firstIndex(where: { !set.contains($0) }), let last = lastIndex(where: { !set.contains($0) }) else { return "" }
        return String(self[first...last])
    }
}

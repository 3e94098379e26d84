// Test support: real jackd servers, the probe client, real speech, and the tools as child processes, for the JACK tests.
import CJack
import CSndFile
import Foundation
import Synchronization


/// A real jackd (dummy driver) for the tests: the one named in `$AUDIOGRAPH_TEST_JACK_SERVER`
/// (started by scripts/test and .ci/run), or else one started here and stopped at exit.
public enum TestServer {
    public static let shared: String = {
        if let name = ProcessInfo.processInfo.environment["AUDIOGRAPH_TEST_JACK_SERVER"], !name.isEmpty {
            precondition(waitForServer(name, seconds: 10), "AUDIOGRAPH_TEST_JACK_SERVER=\(name) is set but no such server answers")
            return name
        }
        let server: PrivateServer
        do { server = try PrivateServer(name: "audiograph-test-\(getpid())") } catch { preconditionFailure("\(error)") }
        ownServer.withLock { $0 = server }
        atexit { TestServer.ownServer.withLock { $0?.stop() } }
        return server.name
    }()
    public static let ownServer = Mutex<PrivateServer?>(nil)

    /// Whether a client can open on `name` within `seconds`.
    public static func waitForServer(_ name: String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        jack_set_error_function { _ in }
        jack_set_info_function { _ in }
        while Date() < deadline {
            var status = jack_status_t(rawValue: 0)
            let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
            if let client = audiograph_jack_client_open("probe-wait", options, &status, name) {
                jack_client_close(client)
                return true
            }
            usleep(100_000)
        }
        return false
    }
}

/// A jackd process with the dummy driver (48 kHz and period 256 unless told), 2 capture and 2
/// playback ports, or with the driver and options given (`["net", "-a", "127.0.0.1", …]`).
// SAFETY (@unchecked Sendable): constants, and whether the server exited behind a Mutex.
public final class PrivateServer: @unchecked Sendable {
    public let name: String
    private let pid: pid_t
    private let exited = Mutex<Bool>(false)

    public struct StartFailure: Error, CustomStringConvertible { public let description: String }

    /// Starts jackd and waits (up to 20 s) until a client can connect. jackd runs under a small
    /// shell watchdog that stops it when this test process goes away, however it goes (a
    /// crashed or killed test run must not leave servers behind: jack2 allows 8 per machine).
    /// The watchdog is started with posix_spawn and an empty signal mask: the test runner's
    /// threads block signals, and a child inheriting that mask could never be stopped.
    public init(name: String, period: Int = 256, sampleRate: Int = 48_000, driver: [String]? = nil) throws {
        self.name = name
        let driverWords = (driver ?? ["dummy", "-r", String(sampleRate), "-p", String(period), "-C", "2", "-P", "2"])
            .map { "'\($0)'" }.joined(separator: " ")
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("jackd-\(name).log").path
        // Real-time scheduling where the machine grants it (jackd falls back by itself where it
        // does not), as for the shared test server: without it a busy 2-core machine makes xruns.
        let mode = ProcessInfo.processInfo.environment["AUDIOGRAPH_TEST_JACKD_REALTIME"] == "0" ? "--no-realtime" : "-R"
        let script = """
            jackd \(mode) -n '\(name)' -d \(driverWords) >'\(log)' 2>&1 & j=$!
            trap 'kill -TERM $j 2>/dev/null; wait $j; exit 0' TERM INT
            trap 'kill -KILL $j 2>/dev/null; wait $j; exit 0' USR1
            # The test process gone or a zombie (kill -0 still succeeds on one): stop jackd.
            alive() { [ -d /proc/\(getpid()) ] && ! grep -q '^State:[[:space:]]*Z' /proc/\(getpid())/status 2>/dev/null; }
            while alive && kill -0 $j 2>/dev/null; do sleep 0.2 & wait $!; done
            kill -TERM $j 2>/dev/null; wait $j
            """
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), defaults = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        for sig in [SIGTERM, SIGINT, SIGCHLD, SIGUSR1, SIGPIPE] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", script]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let status = posix_spawn(&child, "/bin/sh", nil, &attributes, argv, environ)
        guard status == 0 else { throw StartFailure(description: "cannot start jackd: posix_spawn returned \(status)") }
        pid = child
        guard TestServer.waitForServer(name, seconds: 20) else {
            kill()
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw StartFailure(description: "jackd -n \(name) did not come up; its output:\n\(output)")
        }
    }

    /// Stops jackd, with SIGTERM (a clean shutdown) or SIGKILL, and waits for it.
    public func kill(signal: Int32 = SIGKILL) {
        exited.withLock { done in
            guard !done else { return }
            Glibc.kill(pid, signal == SIGKILL ? SIGUSR1 : SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            done = true
        }
    }

    public func stop() { kill(signal: SIGTERM) }

    /// Whether jackd still runs (false once it exited, by itself or stopped).
    public var isRunning: Bool { exited.withLock { !$0 } && waitpid(pid, nil, WNOHANG) == 0 }
}

/// A netjack2 link on loopback, as shared/REFERENCE.md sets one up: a master jackd (dummy
/// driver, a private name), `jack_load netmanager` on it listening on a free UDP port of
/// 127.0.0.1, and, when asked, a slave jackd with the `net` backend pointed at it. The master
/// then has `SLAVE:to_slave_N` (into the slave's `system:capture_N`) and `SLAVE:from_slave_N`
/// (out of its `system:playback_N`). Servers are stopped by process id when the link goes.
public final class NetLink {
    public private(set) var master: PrivateServer
    /// The UDP port the master's netmanager listens on.
    public let port: Int
    public private(set) var slave: PrivateServer?
    /// The slave's client name on the master.
    public let slaveClient: String

    public struct Failure: Error, CustomStringConvertible { public let description: String }

    /// Starts the master (and netmanager) and, with `slave` true, a slave with `channels`
    /// each way and `latency` periods of network latency.
    public init(tag: String, slave startSlave: Bool = true, channels: Int = 2, latency: Int = 2) throws {
        master = try PrivateServer(name: "ag-net-master-\(tag)-\(getpid())")
        port = NetLink.freeUDPPort()
        slaveClient = "ag-slave-\(tag)"
        try loadNetmanager()
        if startSlave { try self.startSlave(channels: channels, latency: latency) }
    }

    /// `jack_load netmanager` on the master, listening on ``port`` of 127.0.0.1.
    private func loadNetmanager() throws {
        let load = Process()
        load.executableURL = URL(fileURLWithPath: "/usr/bin/jack_load")
        load.arguments = ["-s", master.name, "-i", "-a 127.0.0.1 -p \(port)", "netmanager"]
        load.standardOutput = FileHandle.nullDevice
        load.standardError = FileHandle.nullDevice
        try load.run()
        load.waitUntilExit()
        guard load.terminationStatus == 0 else { throw Failure(description: "jack_load netmanager on \(master.name) exited \(load.terminationStatus)") }
    }

    /// Kills the master (SIGKILL), starts a master of the same name with netmanager on the
    /// same port, and waits until the slave has joined it again (its ports back on both sides).
    public func restartMaster() throws {
        let name = master.name
        master.kill()
        master = try PrivateServer(name: name)
        try loadNetmanager()
        if let slave, !(NetLink.waitForPort("system:playback_1", on: slave.name) && NetLink.waitForPort("\(slaveClient):from_slave_1", on: name)) {
            throw Failure(description: "the slave \(slave.name) did not join the restarted master \(name) within 20 s")
        }
    }

    /// Starts the slave jackd (`-d net -a 127.0.0.1 -p PORT -n SLAVE -C N -P N -l L`) and
    /// waits until the link is up: its `system:` ports and the master's `SLAVE:` ports exist.
    public func startSlave(channels: Int = 2, latency: Int = 2) throws {
        let server = try PrivateServer(name: "ag-net-slave-\(slaveClient)-\(getpid())",
                                       driver: ["net", "-a", "127.0.0.1", "-p", String(port), "-n", slaveClient,
                                                "-C", String(channels), "-P", String(channels), "-l", String(latency)])
        slave = server
        guard NetLink.waitForPort("system:playback_1", on: server.name), NetLink.waitForPort("\(slaveClient):from_slave_1", on: master.name) else {
            throw Failure(description: "the netjack2 link \(master.name) ↔ \(server.name) on UDP \(port) did not come up within 20 s")
        }
    }

    /// Waits up to `seconds` for `port` to exist on `server`.
    public static func waitForPort(_ port: String, on server: String, seconds: Double = 20) -> Bool {
        waitUntil(port, on: server, seconds: seconds, exists: true)
    }

    /// Waits up to `seconds` for `port` to be gone from `server` (its client closed).
    public static func waitForPortGone(_ port: String, on server: String, seconds: Double = 20) -> Bool {
        waitUntil(port, on: server, seconds: seconds, exists: false)
    }

    private static func waitUntil(_ port: String, on server: String, seconds: Double, exists: Bool) -> Bool {
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
        guard let client = audiograph_jack_client_open("probe-port-wait", options, &status, server) else { return false }
        defer { jack_client_close(client) }
        let deadline = Date().addingTimeInterval(seconds)
        while (jack_port_by_name(client, port) != nil) != exists {
            if Date() >= deadline { return false }
            usleep(20_000)
        }
        return true
    }

    /// A UDP port of 127.0.0.1 that nothing listens on now (the kernel's choice for port 0).
    public static func freeUDPPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A port's latency range (`jack_port_get_latency_range`) on `server`, in frames: capture
    /// (how long ago its samples entered the graph) or playback (how long until they leave it).
    public static func latency(of port: String, on server: String, capture: Bool) -> (min: Int, max: Int)? {
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
        guard let client = audiograph_jack_client_open("probe-latency", options, &status, server) else { return nil }
        defer { jack_client_close(client) }
        guard let handle = jack_port_by_name(client, port) else { return nil }
        var range = jack_latency_range_t()
        jack_port_get_latency_range(handle, capture ? JackCaptureLatency : JackPlaybackLatency, &range)
        return (Int(range.min), Int(range.max))
    }

    deinit {
        slave?.stop()
        master.stop()
    }
}

/// Real recorded speech from alsa-utils, read with libsndfile as Float32 in −1…1.
public enum Speech {
    public static let path = "/usr/share/sounds/alsa/Front_Center.wav"

    public static func load(_ path: String = Speech.path) -> (samples: [Float], sampleRate: Int) {
        var info = SF_INFO()
        guard let file = sf_open(path, Int32(SFM_READ), &info) else {
            preconditionFailure("cannot read \(path): install alsa-utils")
        }
        defer { sf_close(file) }
        var interleaved = [Float](repeating: 0, count: Int(info.frames) * Int(info.channels))
        let read = sf_readf_float(file, &interleaved, info.frames)
        precondition(read == info.frames)
        // First channel only (the alsa-utils files are mono).
        let samples = stride(from: 0, to: interleaved.count, by: Int(info.channels)).map { interleaved[$0] }
        return (samples, Int(info.samplerate))
    }
}

/// State the probe's JACK callback touches.
// SAFETY (@unchecked Sendable): buffers and ports set before the client activates, then only atomics change; the capture buffer is read after the pass ends.
public final class ProbeState: @unchecked Sendable {
    public let play: UnsafeMutableBufferPointer<Float>
    public let capture: UnsafeMutableBufferPointer<Float>
    public let position = Atomic<Int>(0)
    public let armed = Atomic<Bool>(false)
    public let xruns = Atomic<Int>(0)
    public var outPort: OpaquePointer?
    public var inPort: OpaquePointer?

    public init(play: [Float], captureFrames: Int) {
        self.play = .allocate(capacity: play.count)
        _ = self.play.initialize(from: play)
        capture = .allocate(capacity: captureFrames)
        capture.initialize(repeating: 0)
    }
    deinit { play.deallocate(); capture.deallocate() }
}

/// A JACK client that plays a buffer from its `out` port and records its `in` port, starting in
/// the same cycle once armed. Used to feed and measure the client under test.
public final class ProbeClient {
    public let client: OpaquePointer
    public let state: ProbeState
    public let name: String

    public let outPort: String, inPort: String

    public init(server: String, name: String = "probe", play: [Float], captureFrames: Int,
         outPort: String = "out", inPort: String = "in") {
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
        guard let client = audiograph_jack_client_open(name, options, &status, server) else {
            preconditionFailure("probe could not open on \(server): status \(status.rawValue)")
        }
        self.client = client
        self.name = String(cString: jack_get_client_name(client))
        state = ProbeState(play: play, captureFrames: captureFrames)
        self.outPort = "\(self.name):\(outPort)"
        self.inPort = "\(self.name):\(inPort)"
        state.outPort = jack_port_register(client, outPort, JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0)
        state.inPort = jack_port_register(client, inPort, JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0)
        jack_set_process_callback(client, { frames, arg in
            let s = Unmanaged<ProbeState>.fromOpaque(arg!).takeUnretainedValue()
            let n = Int(frames)
            let out = jack_port_get_buffer(s.outPort, frames)!.assumingMemoryBound(to: Float.self)
            let input = jack_port_get_buffer(s.inPort, frames)!.assumingMemoryBound(to: Float.self)
            guard s.armed.load(ordering: .acquiring) else {
                out.update(repeating: 0, count: n)
                return 0
            }
            let pos = s.position.load(ordering: .relaxed)
            for f in 0..<n {
                out[f] = pos + f < s.play.count ? s.play[pos + f] : 0
                if pos + f < s.capture.count { s.capture[pos + f] = input[f] }
            }
            s.position.store(pos + n, ordering: .releasing)
            return 0
        }, Unmanaged.passUnretained(state).toOpaque())
        jack_set_xrun_callback(client, { arg in
            Unmanaged<ProbeState>.fromOpaque(arg!).takeUnretainedValue().xruns.add(1, ordering: .relaxed)
            return 0
        }, Unmanaged.passUnretained(state).toOpaque())
        precondition(jack_activate(client) == 0)
    }

    public func connect(_ source: String, _ destination: String) {
        let code = jack_connect(client, source, destination)
        precondition(code == 0 || code == EEXIST, "jack_connect \(source) → \(destination): \(code)")
    }

    /// Whether the last pass of ``run(timeout:passes:)`` still saw an xrun (every pass did):
    /// what it captured then says nothing about our code.
    public private(set) var lastPassHadXruns = false

    /// Xruns the server has reported to this client since it opened.
    public var xrunCount: Int { state.xruns.load(ordering: .relaxed) }

    /// Plays and records until the capture buffer is full (or `timeout` seconds pass). An xrun
    /// loses audio by JACK's design, whatever the clients do; a pass the server reported one in
    /// is run again, so the comparison is about our code, not the machine's load.
    /// - Parameter passes: how many passes at most (1 for a test that repeats its whole set-up
    ///   itself, because what it plays, a file player or a tool's recording, cannot simply be
    ///   played again).
    public func run(timeout: Double = 20, passes: Int = 5) -> [Float] {
        for _ in 0..<passes {
            let xrunsBefore = state.xruns.load(ordering: .relaxed)
            state.position.store(0, ordering: .relaxed)
            state.capture.update(repeating: 0)
            state.armed.store(true, ordering: .releasing)
            let deadline = Date().addingTimeInterval(timeout)
            while state.position.load(ordering: .acquiring) < state.capture.count && Date() < deadline { usleep(10_000) }
            state.armed.store(false, ordering: .releasing)
            usleep(20_000)
            lastPassHadXruns = state.xruns.load(ordering: .relaxed) != xrunsBefore
            if !lastPassHadXruns { break }
        }
        return Array(state.capture)
    }

    deinit {
        jack_deactivate(client)
        jack_client_close(client)
    }
}

/// Where `played` reappears exactly in `captured`, if it does: the offset in frames.
public func exactDelay(of played: [Float], in captured: [Float], maxDelay: Int = 8192) -> Int? {
    guard let firstPlayed = played.firstIndex(where: { $0 != 0 }),
          let firstCaptured = captured.firstIndex(where: { $0 != 0 }) else { return nil }
    let delay = firstCaptured - firstPlayed
    guard delay >= 0, delay <= maxDelay, delay + played.count <= captured.count else { return nil }
    for i in 0..<played.count where captured[delay + i] != played[i] { return nil }
    return delay
}

/// What a failed exact comparison saw, for its message: whether the probe's last pass had an
/// xrun, where the capture's first non-zero sample is, and at that delay how many samples
/// differ, the first few, and the largest difference.
public func captureReport(_ played: [Float], _ captured: [Float], _ probe: ProbeClient) -> String {
    var text = "last pass had xruns: \(probe.lastPassHadXruns) (\(probe.xrunCount) since the probe opened)"
    guard let firstPlayed = played.firstIndex(where: { $0 != 0 }),
          let firstCaptured = captured.firstIndex(where: { $0 != 0 }) else { return text + "; the capture is silent" }
    let delay = firstCaptured - firstPlayed
    text += "; first non-zero at \(firstCaptured) (delay \(delay))"
    guard delay >= 0 else { return text }
    var differing = 0, largest: Float = 0, firsts: [String] = []
    for i in 0..<min(played.count, captured.count - delay) where captured[delay + i] != played[i] {
        differing += 1
        largest = max(largest, abs(captured[delay + i] - played[i]))
        if firsts.count < 4 { firsts.append("\(i): \(captured[delay + i]) vs \(played[i])") }
    }
    if let occurrence = exactOccurrence(of: played, in: captured) { text += "; an intact copy at \(occurrence)" }
    return text + "; \(differing) samples differ (largest \(largest)) \(firsts)"
}

/// Where `played` appears exactly in `captured`, at any offset: for captures that may hold
/// several passes of it (a pass that had an xrun is played again, so an earlier copy can be
/// damaged). The offset of the first intact copy, or nil.
public func exactOccurrence(of played: [Float], in captured: [Float]) -> Int? {
    guard let first = played.firstIndex(where: { $0 != 0 }) else { return nil }
    let marker = played[first]
    var start = 0
    while let hit = captured[start...].firstIndex(of: marker) {
        let offset = hit - first
        if offset >= 0, offset + played.count <= captured.count,
           zip(played, captured[offset..<(offset + played.count)]).allSatisfy({ $0 == $1 }) {
            return offset
        }
        start = hit + 1
    }
    return nil
}

/// Runs a command and returns its standard output.
public func run(_ executable: String, _ arguments: [String], server: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["JACK_DEFAULT_SERVER"] = server
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// One of the package's executables (graphthru, graphrun, …) as a child process, with its stdin
/// as a pipe and its stdout and stderr in files (complete the moment it exits, unlike a pipe
/// drained by another thread).
// SAFETY (@unchecked Sendable): constants (Process, Pipe, file URLs) used from the test's thread; the child writes only to its files.
public final class ToolProcess: @unchecked Sendable {
    public let process = Process()
    public let stdin = Pipe()
    private let outputURL: URL
    private let errorURL: URL

    public static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["GRAPHTHRU"] { return URL(fileURLWithPath: path) }
        // The test bundle sits beside the products in .build/<config>/.
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while dir.path != "/" {
            let candidate = dir.appendingPathComponent("graphthru")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir.deleteLastPathComponent()
        }
        preconditionFailure("graphthru not built; run `swift build` first or set GRAPHTHRU")
    }

    /// The package's executable `name`, beside graphthru in the build folder.
    public static func binary(_ name: String) -> URL {
        binary.deletingLastPathComponent().appendingPathComponent(name)
    }

    /// graphthru with `arguments`.
    public convenience init(_ arguments: [String], server: String) throws {
        try self.init("graphthru", arguments, server: server)
    }

    /// `executable` with `arguments`, this process's environment plus `environment` (e.g. `LV2_PATH`).
    public init(_ executable: String, _ arguments: [String], server: String, environment extra: [String: String] = [:]) throws {
        process.executableURL = ToolProcess.binary(executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        environment["JACK_DEFAULT_SERVER"] = server
        environment["JACK_NO_START_SERVER"] = "1"
        process.environment = environment
        process.standardInput = stdin
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("\(executable)-test-\(UUID().uuidString)")
        outputURL = base.appendingPathExtension("out")
        errorURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
    }

    public var stdout: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "" }

    /// Waits until stdout contains `text` `count` times; false on timeout or exit.
    public func waitFor(_ text: String, count: Int = 1, timeout: Double = 10) -> Bool {
        wait(text, count: count, in: { stdout }, timeout: timeout)
    }

    /// Waits until stderr contains `text` `count` times; false on timeout or exit.
    public func waitForError(_ text: String, count: Int = 1, timeout: Double = 10) -> Bool {
        wait(text, count: count, in: { stderr }, timeout: timeout)
    }

    /// Waits until stdout (or stderr) holds `text` after byte `offset`, then moves `offset` past
    /// it; false on timeout or exit. Reads only what is new: for a long run whose output grows.
    public func waitFor(_ text: String, after offset: inout Int, stderr inStderr: Bool = false, timeout: Double = 10) -> Bool {
        let url = inStderr ? errorURL : outputURL
        let needle = Data(text.utf8)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let handle = try? FileHandle(forReadingFrom: url) {
                defer { try? handle.close() }
                try? handle.seek(toOffset: UInt64(offset))
                if let data = try? handle.readToEnd(), let range = data.range(of: needle) {
                    offset += range.upperBound - data.startIndex
                    return true
                }
            }
            if !process.isRunning || Date() >= deadline { return false }
            usleep(10_000)
        }
    }

    private func wait(_ text: String, count: Int, in stream: () -> String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stream().components(separatedBy: text).count - 1 >= count { return true }
            if !process.isRunning { return stream().components(separatedBy: text).count - 1 >= count }
            usleep(10_000)
        }
        return false
    }

    /// Writes `line` and a newline to the tool's standard input; nothing when the tool has
    /// exited (EPIPE is ignored: SIGPIPE would end the whole test process).
    public func send(_ line: String) {
        signal(SIGPIPE, SIG_IGN)
        try? stdin.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Waits for exit; nil if it did not exit within `timeout` seconds (then it is killed).
    public func waitForExit(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: outputURL)
        try? FileManager.default.removeItem(at: errorURL)
    }
}

/// Text appended from one thread and read from another.
public final class LockedText: Sendable {
    private let storage = Mutex<String>("")
    public func append(_ s: String) { storage.withLock { $0 += s } }
    public var text: String { storage.withLock { $0 } }
}

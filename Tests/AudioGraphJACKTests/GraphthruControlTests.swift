// Tests, JACK: graphthru's controls, terminal, patchbay and --start-server against a real jackd.
import CJack
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// graphthru's day-to-day controls (volume, low-pass, help, status, --quiet, the terminal
    /// status area), patchbay citizenship (pretty names, port patterns) and --start-server,
    /// against a real jackd with real speech.
    @Suite("graphthru controls against a real jackd")
    struct GraphthruControlTests {
        let server = TestServer.shared

        @Test func volumeStepsScaleTheOutputExactlyAndZeroDecibelsIsBitExactAgain() throws {
            let name = "gt-volume-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--channels", "1"], server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stderr)")
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-vol", play: speech, captureFrames: speech.count + 8192)
            probe.connect(probe.outPort, "\(name):in_1")
            probe.connect("\(name):out_1", probe.inPort)

            tool.send("-")
            #expect(tool.waitFor("volume: -3.0 dB"), "\(tool.stdout) \(tool.stderr)")
            usleep(100_000)
            // The mixer's output volume multiplies every sample by 10^(−3/20) once the one-slice
            // ramp is over: the capture is the speech times that gain, exactly.
            let gain = Float(pow(10, -3.0 / 20))
            probe.expectExact(speech.map { $0 * gain }, "−3 dB is the speech × \(gain)")

            tool.send("volume +")
            #expect(tool.waitFor("volume: 0.0 dB"))
            usleep(100_000)
            probe.expectExact(speech, "back at 0 dB the speech passes bit for bit")

            tool.send("volume -200")     // clamped to the floor, and said so
            #expect(tool.waitFor("volume: -60.0 dB"))
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            #expect(tool.stderr == "graphthru: volume -200.0 dB is outside -60…+12 dB; set to -60.0 dB\n", "stderr: \(tool.stderr)")
        }

        @Test func lowpassTogglesLiveThroughUpdateAndOffIsBitExactAgain() throws {
            let name = "gt-lptoggle-\(getpid())"
            let tone = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 8000 * Double($0) / 48_000)) }
            let probe = ProbeClient(server: server, name: "probe-lpt", play: tone, captureFrames: tone.count + 8192)
            // Patterns, as jack_lsp takes them: each matches exactly the probe's one port.
            let tool = try ToolProcess(["--name", name, "--channels", "1",
                                             "--input", "probe-lpt:o.t", "--output", "probe-lp[t]:in"], server: server)
            #expect(tool.waitFor("mute: off"), "\(tool.stderr)")
            probe.expectExact(tone, "without the filter the tone passes bit for bit")

            tool.send("lowpass")
            #expect(tool.waitFor("low-pass: on (1000 Hz)"), "\(tool.stdout) \(tool.stderr)")
            usleep(100_000)
            let filtered = probe.run()
            let tail = filtered[24_000..<48_000]
            let rms = (tail.reduce(0.0) { $0 + Double($1 * $1) } / Double(tail.count)).squareRoot()
            let gain = 20 * log10(rms / (0.5 / 2.0.squareRoot()))
            // Second order at 1 kHz: 8 kHz is 3 octaves up, about −36 dB.
            #expect(gain < -30, "8 kHz through the inserted 1 kHz low-pass: \(gain) dB")

            tool.send("l")
            #expect(tool.waitFor("low-pass: off"))
            usleep(100_000)
            probe.expectExact(tone, "filter removed live: bit-exact again")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            #expect(tool.stderr.isEmpty, "stderr: \(tool.stderr)")
        }

        @Test func helpStatusAndUnknownCommands() throws {
            let tool = try ToolProcess(["--name", "gt-help-\(getpid())", "--no-autoconnect", "--muted", "--dump"], server: server)
            #expect(tool.waitFor("in 0: 48000 Hz, 2 ch, Float32, non-interleaved ← node 1:1"), "--dump at start: \(tool.stdout)")
            #expect(tool.waitFor("mute: on"))
            tool.send("help")
            #expect(tool.waitFor("commands: mute | unmute"))
            tool.send("status")
            #expect(tool.waitFor("status: mute on, volume 0.0 dB, low-pass off, xruns "), "\(tool.stdout)")
            #expect(tool.stdout.contains("48000 Hz, period 256, 2 ch"), "\(tool.stdout)")
            tool.send("dump")
            #expect(tool.waitFor("AudioGraph: 3 node(s), initialized, running"), "\(tool.stdout)")
            #expect(tool.waitFor("multichannelMixer"), "the dump lists the units: \(tool.stdout)")
            tool.send("frobnicate")
            tool.send("lowpass on off")  // not "on": words left over are refused
            tool.send("status")
            #expect(tool.waitFor("status: ", count: 2))
            #expect(tool.stderr.contains("unknown command 'frobnicate'"), "stderr: \(tool.stderr)")
            #expect(tool.stderr.contains("'lowpass' takes at most one word after it, not 'on off'"), "stderr: \(tool.stderr)")
            #expect(tool.stdout.contains("low-pass off, xruns") && !tool.stdout.contains("low-pass: on"), "\(tool.stdout)")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func metersReadTheLevelsGoingInAndOut() throws {
            let name = "gt-meters-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("mute: off"), "\(tool.stderr)")
            // A constant 0.5 on in_1 for 4 s: 20·log10(0.5) = −6.02 dBFS, average and peak alike,
            // once the 0.3 s average has settled (99 % after 1.4 s). in_2 stays silent.
            let level = [Float](repeating: 0.5, count: 4 * 48_000)
            let probe = ProbeClient(server: server, name: "probe-meters", play: level, captureFrames: level.count)
            probe.connect(probe.outPort, "\(name):in_1")
            probe.state.position.store(0, ordering: .relaxed)
            probe.state.armed.store(true, ordering: .releasing)
            usleep(2_500_000)
            tool.send("status")
            #expect(tool.waitFor("input -6.0 dB -inf dB, output -6.0 dB -inf dB"), "\(tool.stdout)")
            tool.send("mute")
            usleep(1_000_000)
            tool.send("status")
            #expect(tool.waitFor("status: ", count: 2))
            let last = tool.stdout.split(separator: "\n").last { $0.hasPrefix("status: ") }.map(String.init) ?? ""
            #expect(last.contains("input -6.0 dB -inf dB, output ") && !last.contains("output -6.0 dB"),
                    "muted: the input meter still reads, the output falls: \(last)")
            probe.state.armed.store(false, ordering: .releasing)
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func quietPrintsOnlyWhatIsAskedFor() throws {
            let tool = try ToolProcess(["--name", "gt-quiet-\(getpid())", "--no-autoconnect", "--quiet"], server: server)
            tool.send("mute")
            tool.send("-")
            tool.send("status")
            #expect(tool.waitFor("status: mute on, volume -3.0 dB"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            let lines = tool.stdout.split(separator: "\n")
            #expect(lines.count == 1, "only the status answer: \(tool.stdout)")
        }

        @Test func portsCarryPrettyNamesReadBackThroughJACKMetadata() throws {
            let name = "gt-pretty-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("mute: off"), "\(tool.stderr)")
            let probe = ProbeClient(server: server, name: "probe-pretty", play: [0], captureFrames: 1)
            func pretty(_ port: String) -> (String?, jack_uuid_t) {
                guard let handle = jack_port_by_name(probe.client, port) else { return (nil, 0) }
                let uuid = jack_port_uuid(handle)
                var value: UnsafeMutablePointer<CChar>?, type: UnsafeMutablePointer<CChar>?
                guard jack_get_property(uuid, audiograph_jack_pretty_name_key(), &value, &type) == 0, let value else { return (nil, uuid) }
                defer { jack_free(value); if let type { jack_free(type) } }
                return (String(cString: value), uuid)
            }
            let names = ["in_1", "in_2", "out_1", "out_2"].map { pretty("\(name):\($0)") }
            // Under a name of its own (not graphthru's default) the client's name comes first.
            #expect(names.map(\.0) == ["Mic L", "Mic R", "Out L", "Out R"].map { "\(name) \($0)" })
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            // graphthru removes its metadata when it closes: the store outlives the ports.
            for (_, uuid) in names where uuid != 0 {
                var value: UnsafeMutablePointer<CChar>?, type: UnsafeMutablePointer<CChar>?
                #expect(jack_get_property(uuid, audiograph_jack_pretty_name_key(), &value, &type) != 0, "pretty name left behind")
            }
        }

        @Test func patternsConnectEveryMatchInOrderAndBadPatternsAreRefused() throws {
            let name = "gt-pattern-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--input", "system:capture_.*", "--output", "system:playback_.*"], server: server)
            #expect(tool.waitFor("mute: off"), "\(tool.stderr)")
            let listing = try run("/usr/bin/jack_lsp", ["-c"], server: server)
            func connections(of port: String) -> [String] {
                let lines = listing.split(separator: "\n").map(String.init)
                guard let i = lines.firstIndex(of: port) else { return [] }
                return lines[(i + 1)...].prefix { $0.hasPrefix(" ") }.map { $0.trimmingCharacters(in: .whitespaces) }
            }
            #expect(connections(of: "\(name):in_1") == ["system:capture_1"], "\(listing)")
            #expect(connections(of: "\(name):in_2") == ["system:capture_2"])
            #expect(connections(of: "\(name):out_2") == ["system:playback_2"])
            tool.send("quit")
            #expect(tool.waitForExit() == 0)

            let bad = try ToolProcess(["--name", "\(name)-bad", "--input", "system:capture_[", "--output", "system:playback_1"], server: server)
            #expect(bad.waitForExit() == 2, "a bad option: status 2")
            #expect(bad.stderr.contains("neither a JACK port name nor a valid regular expression"), "stderr: \(bad.stderr)")
            let none = try ToolProcess(["--name", "\(name)-none", "--input", "nobody:.*"], server: server)
            #expect(none.waitForExit() == 1)
            #expect(none.stderr.contains("no JACK port named or matching 'nobody:.*'"), "stderr: \(none.stderr)")
        }

        @Test func startServerRunsItsOwnServerAndStopsItOnExit() throws {
            let own = "audiograph-issue6-inproc-\(getpid())"
            let name = "gt-inproc"
            let tool = try ToolProcess(["--name", name, "--start-server", "--server", own, "--no-autoconnect"], server: server)
            // Nothing below can run without the server: stop here if it did not start.
            try #require(tool.waitFor("mute: off"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            #expect(tool.stdout.contains("started as a child jackd, driver dummy"))
            try #require(TestServer.waitForServer(own, seconds: 5), "the server it started answers other processes")
            do {
                let speech = Speech.load().samples
                let probe = ProbeClient(server: own, name: "probe-inproc", play: speech, captureFrames: speech.count + 8192)
                probe.connect(probe.outPort, "\(name):in_1")
                probe.connect("\(name):out_1", probe.inPort)
                probe.expectExact(speech, "speech through graphthru on its own server, bit-exact")
            }
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            #expect(tool.stdout.contains("server '\(own)' (child jackd) stopped"), "\(tool.stdout)")
            #expect(tool.stderr.isEmpty, "stderr: \(tool.stderr)")
            #expect(!TestServer.waitForServer(own, seconds: 0.3), "the server is gone after exit")

            // A server name already in use is refused, and the running server is left alone.
            let clash = try ToolProcess(["--name", "gt-clash", "--start-server", "--server", server], server: server)
            #expect(clash.waitForExit() == 1)
            #expect(clash.stderr.contains("already running"), "stderr: \(clash.stderr)")
            #expect(TestServer.waitForServer(server, seconds: 2))
        }

        /// With --reconnect, the server graphthru started is started again when it dies (nobody
        /// else would), and graphthru comes back on it; at exit it is stopped as before.
        @Test func startServerWithReconnectStartsItsOwnServerAgainWhenItDies() throws {
            let own = "audiograph-own-again-\(getpid())"
            let tool = try ToolProcess(["--name", "gt-own-again", "--start-server", "--server", own, "--no-autoconnect", "--reconnect"], server: server)
            try #require(tool.waitFor("mute: off"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            let pgrep = Process()
            pgrep.executableURL = URL(fileURLWithPath: "/usr/bin/pgrep")
            pgrep.arguments = ["-f", "jackd .*-n \(own) "]
            let pipe = Pipe()
            pgrep.standardOutput = pipe
            try pgrep.run()
            pgrep.waitUntilExit()
            let pids = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
            try #require(pids.count == 1, "one jackd named \(own): \(pids)")
            kill(pids[0], SIGKILL)
            #expect(tool.waitFor("the JACK server is back", timeout: 15), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            #expect(tool.stderr.contains("the jackd it started (server '\(own)', driver dummy) had exited: started it again"), "stderr: \(tool.stderr)")
            #expect(TestServer.waitForServer(own, seconds: 5))
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            #expect(!TestServer.waitForServer(own, seconds: 0.3), "the server it started again is gone after exit")
        }

        @Test func terminalShowsAStatusAreaRedrawnInPlaceAndTakesKeys() throws {
            // A pseudo-terminal from util-linux `script`, so stdin and stdout are terminals.
            let name = "gt-tty-\(getpid())"
            let tool = try TerminalProcess([ToolProcess.binary.path, "--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("keys: m mute"), "output: \(tool.output)")
            for key in ["m", "-", "l"] {
                tool.type(key)
                usleep(300_000)
            }
            // The xrun count is the machine's (a loaded one makes some), not the keys'.
            #expect(tool.waitFor("mute on · volume -3.0 dB · low-pass on (1000 Hz) · xruns "), "output: \(tool.output)")
            #expect(tool.output.contains("\u{1B}[7A"), "redrawn in place (cursor up over the 7 status lines: 2 + a meter per channel and side + keys)")
            #expect(tool.output.contains("in  1 ▕") && tool.output.contains("out 2 ▕"), "meter bars per channel")
            #expect(tool.output.contains("JACK server '\(server)' · 48000 Hz · period 256"))
            tool.type("?")
            #expect(tool.waitFor("graphthru: keys: m mute/unmute"))
            tool.type("q")
            #expect(tool.waitForExit() == 0)
            #expect(tool.output.contains("graphthru: stopped"))
        }

        @Test func statusAreaFitsASmallTerminal() throws {
            // A line wider than the terminal wraps and more lines than it has rows scroll; either
            // way moving the cursor up one row per line misses, and every redraw leaves a copy.
            let name = "gt-small-tty"
            let command = "stty cols 60 rows 6 && exec '\(ToolProcess.binary.path)' --name \(name) --no-autoconnect"
            let tool = try TerminalProcess(["/bin/sh", "-c", command], server: server)
            #expect(tool.waitFor("keys: m mute"), "output: \(tool.output)")
            tool.type("m")
            #expect(tool.waitFor("mute on"), "output: \(tool.output)")
            tool.type("q")
            #expect(tool.waitForExit() == 0)
            // Each drawn line: after "erase line", up to the end of line (the terminal writes "\r\n").
            let drawn = tool.output.components(separatedBy: "\r\u{1B}[2K").dropFirst().map { $0.prefix { !$0.isNewline } }
            #expect(drawn.count >= 10, "redrawn several times: \(drawn.count) lines drawn")
            #expect(drawn.allSatisfy { $0.count <= 59 }, "a drawn line is wider than 59 columns: \(drawn.filter { $0.count > 59 }.first ?? "")")
            #expect(tool.output.contains("\u{1B}[5A"), "5 lines fit in 6 rows: header, state, 2 meters, keys")
            #expect(!tool.output.contains("\u{1B}[7A"), "never the 7 lines that would scroll")
            #expect(drawn.contains { $0.hasPrefix("keys: m mute") }, "the keys line stays")
        }
    }
}

/// A command run inside a pseudo-terminal (`script -qfec`), keys written to it, everything it
/// shows collected in a file.
// SAFETY (@unchecked Sendable): constants (Process, Pipe, file URLs) used from the test's thread; the child writes only to its file.
final class TerminalProcess: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    private let outputURL: URL

    init(_ command: [String], server: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        process.arguments = ["-qfec", quoted, "/dev/null"]
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_DEFAULT_SERVER"] = server
        environment["JACK_NO_START_SERVER"] = "1"
        environment["TERM"] = "xterm"
        process.environment = environment
        process.standardInput = input
        outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("graphthru-tty-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    var output: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

    func waitFor(_ text: String, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if output.contains(text) { return true }
            if !process.isRunning { return output.contains(text) }
            usleep(20_000)
        }
        return false
    }

    /// Types `key`; nothing once the command has exited (writing to its closed pipe would end
    /// the test runner: a tool that died is the test's finding, not the runner's crash).
    func type(_ key: String) {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.write(contentsOf: Data(key.utf8))
    }

    func waitForExit(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate(); process.waitUntilExit(); return nil }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: outputURL)
    }
}

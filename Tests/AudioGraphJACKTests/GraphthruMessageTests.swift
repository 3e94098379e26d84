// Tests, JACK: graphthru's messages in a terminal (the status area's message lines), a --record file refused before JACK, and two instances told apart, against a real jackd.
import CJack
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

extension JACKIntegration {
    /// What graphthru says while its status area is on the terminal (errors and notices in the
    /// area's message lines, then in the scrollback at exit, the header never copied), a
    /// recording that fails while it runs, a --record file refused before anything joins JACK,
    /// and a second instance's pretty names and autoconnect notice, against a real jackd.
    @Suite("graphthru messages against a real jackd")
    struct GraphthruMessageTests {
        let server = TestServer.shared

        @Test func messagesStayInTheStatusAreaForSecondsThenReachTheScrollbackAndTheHeaderIsNeverCopied() throws {
            let name = "gt-messages"
            let command = "stty cols 120 rows 30 && exec '\(ToolProcess.binary.path)' --name \(name) --no-autoconnect"
            let tool = try TerminalProcess(["/bin/sh", "-c", command], server: server)
            #expect(tool.waitFor("keys: m mute"), "screen: \(shown(tool.output))")
            // 0 dB + 4 steps of 3 dB is the +12 dB top; the fifth step is refused with a notice.
            for key in ["+", "+", "+", "+", "+", "x"] { tool.type(key) }
            let volumeNotice = "graphthru: volume 15.0 dB is outside -60…+12 dB; set to 12.0 dB"
            let keyNotice = "graphthru: key 'x' does nothing"
            // Eight redraws after both were said: a message that stays is on every one of them.
            #expect(waitUntil { redrawsSince(keyNotice, in: tool.output) >= 8 }, "screen: \(shown(tool.output))")
            var terminal = VirtualTerminal(rows: 30, columns: 120)
            terminal.feed(tool.output)
            let withBoth = terminal.frames.filter { frame in
                frame.contains { $0.hasPrefix(volumeNotice) } && frame.contains { $0.hasPrefix(keyNotice) }
            }
            #expect(withBoth.count >= 8, "both messages on \(withBoth.count) redraws: \(terminal.frames.last ?? [])")
            // They go after a few seconds (the area returns to its own lines).
            #expect(waitUntil(timeout: 15) {
                var later = VirtualTerminal(rows: 30, columns: 120)
                later.feed(tool.output)
                // The status area: from its header down (the start-up lines above it say "graphthru: " too).
                let frame = later.frames.last ?? []
                let area = frame.drop { !$0.hasPrefix("graphthru · client") }
                return !area.isEmpty && !area.contains { $0.hasPrefix("graphthru: ") }
            }, "the message lines empty again")
            tool.type("q")
            #expect(tool.waitForExit() == 0)

            var final = VirtualTerminal(rows: 30, columns: 120)
            final.feed(tool.output)
            let lines = final.lines
            #expect(lines.filter { $0.hasPrefix("graphthru · client") }.count == 1, "one header, no copies: \(lines)")
            // After quit, below the last status area: each message once, in the order said.
            let keys = try #require(lines.lastIndex { $0.hasPrefix("keys: m mute") }, "\(lines)")
            let after = Array(lines[(keys + 1)...])
            #expect(after.filter { $0 == volumeNotice }.count == 1, "the volume notice in the scrollback: \(after)")
            let volume = after.firstIndex(of: volumeNotice) ?? .max, key = after.firstIndex { $0.hasPrefix(keyNotice) } ?? -1
            #expect(volume < key, "the key notice after the volume notice: \(after)")
            #expect(after.last?.hasPrefix("graphthru: stopped") == true, "\(after)")
        }

        @Test func aRecordingWriteFailureIsShownAndKeptStopsTheRecordingAndQuitThenExitsOneAsTheREADMESays() throws {
            // A real write failure: a file-size limit of 100 KiB (RLIMIT_FSIZE, `ulimit -f`) ends the
            // float32 stereo recording after about a quarter of a second of audio; write(2) fails
            // with EFBIG as it would with ENOSPC on a full disk. graphthru ignores SIGXFSZ itself:
            // `env --default-signal` hands it the signal unblocked and at its default (the test
            // runner's threads block signals, and a child inherits that), which kills the process.
            let name = "gt-recfail"
            let path = "/tmp/gt-recfail-\(getpid()).wav"
            defer { unlink(path) }
            let command = "stty cols 300 rows 30 && ulimit -f 100 && exec env --default-signal=XFSZ '\(ToolProcess.binary.path)' --name \(name) --no-autoconnect --record '\(path)'"
            let tool = try TerminalProcess(["/bin/bash", "-c", command], server: server)
            let failure = "graphthru: writing \(path) failed: "
            #expect(tool.waitFor(failure), "screen: \(shown(tool.output))")
            #expect(waitUntil { redrawsSince(failure, in: tool.output) >= 5 }, "screen: \(shown(tool.output))")
            var terminal = VirtualTerminal(rows: 30, columns: 300)
            terminal.feed(tool.output)
            #expect(terminal.frames.filter { $0.contains { $0.hasPrefix(failure) } }.count >= 5, "the failure stays in the status area")
            tool.type("q")
            // README: 1 after a recording lost audio to a failed write, however the run ended.
            #expect(tool.waitForExit() == 1, "screen: \(shown(tool.output))")
            var final = VirtualTerminal(rows: 30, columns: 300)
            final.feed(tool.output)
            let lines = final.lines
            #expect(lines.filter { $0.hasPrefix("graphthru · client") }.count == 1, "one header, no copies: \(lines)")
            let keys = try #require(lines.lastIndex { $0.hasPrefix("keys: m mute") }, "\(lines)")
            let after = lines[(keys + 1)...].joined(separator: "\n")
            #expect(after.contains(failure) && after.contains("File too large"), "the failure in the scrollback: \(after)")
            #expect(after.contains("(libsndfile)"), "libsndfile's reason: \(after)")
            #expect(after.contains("; incomplete: writing failed (see above), so the exit status is 1"), "\(after)")
            // The recording stopped at the failure (the terminal is wide enough for its one line): the frames it says the file holds are those
            // recorded at exit, and those the file reads back with.
            let said = try #require(after.firstRange(of: "; the file holds the ").map { Int(after[$0.upperBound...].prefix { $0.isNumber }) ?? -1 },
                                    "the frames the file holds: \(after)")
            #expect(after.contains(" frames written before the failure; the recording stopped there, monitoring goes on"), "\(after)")
            #expect(after.contains("graphthru: recorded \(said) frames to \(path) "), "the same count at exit: \(after)")
            let file = try #require(readAudioFile(path))
            #expect(Int(file.info.frames) == said, "the file holds \(file.info.frames) frames, \(said) said")
        }

        @Test func theServerShuttingDownIsSaidBelowTheStatusAreaAndExitsOne() throws {
            let doomed = try PrivateServer(name: "audiograph-tty-doomed-\(getpid())")
            let command = "stty cols 120 rows 30 && exec '\(ToolProcess.binary.path)' --name gt-tty-doomed --no-autoconnect"
            let tool = try TerminalProcess(["/bin/sh", "-c", command], server: doomed.name)
            #expect(tool.waitFor("keys: m mute"), "screen: \(shown(tool.output))")
            doomed.kill(signal: SIGTERM)   // as an administrator stops it
            #expect(tool.waitForExit(timeout: 5) == 1, "screen: \(shown(tool.output))")
            // A real-time jackd stopped with a client attached leaves its entry in jack2's
            // 8-server registry; a server of the same name takes the dead entry over, and one
            // stopped with no client gives it back.
            try? PrivateServer(name: doomed.name).stop()
            var final = VirtualTerminal(rows: 30, columns: 120)
            final.feed(tool.output)
            let lines = final.lines
            #expect(lines.filter { $0.hasPrefix("graphthru · client") }.count == 1, "one header, no copies: \(lines)")
            let keys = try #require(lines.lastIndex { $0.hasPrefix("keys: m mute") }, "\(lines)")
            #expect(lines[(keys + 1)...].contains { $0.hasPrefix("graphthru: the JACK server shut down") }, "said below the area: \(lines)")
        }

        @Test func aRecordFileThatCannotBeCreatedIsRefusedBeforeAnyClientJoinsJACK() throws {
            let watcher = RegistrationWatcher(server: server)
            let name = "gt-norecord-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--record", "/nonexistent-dir/x.wav"], server: server)
            #expect(tool.waitForExit() == 2)
            #expect(tool.stderr == "graphthru: --record: cannot create /nonexistent-dir/x.wav: No such file or directory\n", "stderr: \(tool.stderr)")
            #expect(tool.stdout.isEmpty, "nothing started: \(tool.stdout)")
            // The watcher sees clients that do register: a probe opened now.
            let probe = ProbeClient(server: server, name: "probe-norecord", play: [0], captureFrames: 1)
            #expect(waitUntil { watcher.registered.contains(probe.name) }, "the watcher sees registrations: \(watcher.registered)")
            #expect(!watcher.registered.contains { $0.hasPrefix(name) }, "graphthru joined JACK: \(watcher.registered)")
        }

        @Test func aSecondInstanceCarriesItsNameInItsPrettyNamesAndSaysAutoconnectDoublesUp() throws {
            // The first, under the default name, autoconnects to the physical ports.
            let first = try ToolProcess([], server: server)
            try #require(first.waitFor("mute: off"), "stdout: \(first.stdout) stderr: \(first.stderr)")
            try #require(first.stdout.contains("client 'graphthru' on"), "the default name was free: \(first.stdout)")
            // The second gets another name from JACK, and finds the playback ports fed already.
            let command = "stty cols 250 rows 30 && exec '\(ToolProcess.binary.path)'"
            let second = try TerminalProcess(["/bin/sh", "-c", command], server: server)
            try #require(second.waitFor("keys: m mute"), "screen: \(shown(second.output))")
            let output = second.output
            let start = try #require(output.range(of: "graphthru: client '")?.upperBound, "screen: \(shown(output))")
            let secondName = String(output[start...].prefix { $0 != "'" })
            #expect(secondName != "graphthru" && secondName.hasPrefix("graphthru"), "JACK's name for the second: \(secondName)")

            let probe = ProbeClient(server: server, name: "probe-twins", play: [0], captureFrames: 1)
            let ports = ["in_1", "in_2", "out_1", "out_2"]
            #expect(ports.map { prettyName(of: "graphthru:\($0)", probe: probe) } == ["Mic L", "Mic R", "Out L", "Out R"])
            #expect(ports.map { prettyName(of: "\(secondName):\($0)", probe: probe) }
                    == ["Mic L", "Mic R", "Out L", "Out R"].map { "\(secondName) \($0)" })

            let notice = "graphthru: note: autoconnect doubles up: system:playback_1 already plays graphthru:out_1, system:playback_2 already plays graphthru:out_2; \(secondName)'s output is added to it"
            #expect(waitUntil { redrawsSince(notice, in: second.output) >= 3 }, "screen: \(shown(second.output))")
            var terminal = VirtualTerminal(rows: 30, columns: 250)
            terminal.feed(second.output)
            #expect(terminal.frames.contains { $0.contains { $0.hasPrefix(notice) } }, "the notice in the message lines")
            second.type("q")
            #expect(second.waitForExit() == 0)
            var final = VirtualTerminal(rows: 30, columns: 250)
            final.feed(second.output)
            let keys = try #require(final.lines.lastIndex { $0.hasPrefix("keys: m mute") }, "\(final.lines)")
            #expect(final.lines[(keys + 1)...].contains { $0.hasPrefix(notice) }, "the notice in the scrollback: \(final.lines)")

            first.send("quit")
            #expect(first.waitForExit() == 0)
            #expect(!first.stdout.contains("doubles up"), "nothing fed the playback ports before the first: \(first.stdout)")
        }
    }
}

/// Waits until `condition` holds, polling every 20 ms; false after `timeout` seconds.
private func waitUntil(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// What `output` leaves on a wide terminal, as lines, for failure messages (the raw output is
/// full of escape sequences).
private func shown(_ output: String) -> String {
    var terminal = VirtualTerminal(rows: 40, columns: 300)
    terminal.feed(output)
    return terminal.lines.joined(separator: "\n")
}

/// How many redraws (each ends with "erase below", ESC [ J) the output has after `text` first appears.
private func redrawsSince(_ text: String, in output: String) -> Int {
    guard let start = output.range(of: text)?.upperBound else { return 0 }
    return output[start...].components(separatedBy: "\u{1B}[J").count - 1
}

/// A port's pretty name (JACK metadata), read by another client.
private func prettyName(of port: String, probe: ProbeClient) -> String? {
    guard let handle = jack_port_by_name(probe.client, port) else { return nil }
    var value: UnsafeMutablePointer<CChar>?, type: UnsafeMutablePointer<CChar>?
    guard jack_get_property(jack_port_uuid(handle), audiograph_jack_pretty_name_key(), &value, &type) == 0, let value else { return nil }
    defer { jack_free(value); if let type { jack_free(type) } }
    return String(cString: value)
}

/// A JACK client that records the name of every client that registers on its server after it.
// SAFETY (@unchecked Sendable): the client handle is a constant; the names are behind a Mutex (JACK's notification thread appends).
final class RegistrationWatcher: @unchecked Sendable {
    private let client: OpaquePointer
    private let names = Mutex<[String]>([])

    init(server: String) {
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
        guard let client = audiograph_jack_client_open("registration-watch", options, &status, server) else {
            preconditionFailure("the watcher could not open on \(server): status \(status.rawValue)")
        }
        self.client = client
        jack_set_client_registration_callback(client, { name, registered, arg in
            guard registered != 0, let name, let arg else { return }
            let watcher = Unmanaged<RegistrationWatcher>.fromOpaque(arg).takeUnretainedValue()
            watcher.names.withLock { $0.append(String(cString: name)) }
        }, Unmanaged.passUnretained(self).toOpaque())
        precondition(jack_activate(client) == 0)
    }

    /// The clients that registered so far.
    var registered: [String] { names.withLock { $0 } }

    deinit {
        jack_deactivate(client)
        jack_client_close(client)
    }
}

/// A minimal terminal: what a program's output leaves on a screen of `rows` × `columns` and in
/// the scrollback above it. It knows what graphthru writes: text, CR, LF, cursor up
/// (ESC [ n A), erase line (ESC [ 2 K), erase below (ESC [ J); other escape sequences are
/// skipped. Every character takes one column; a line longer than the screen wraps.
struct VirtualTerminal {
    let rows: Int, columns: Int
    private var scrollback: [String] = []
    private var screen: [[Unicode.Scalar]]
    private var row = 0, column = 0
    /// The screen after each erase-below: graphthru ends every redraw of its status area with it.
    private(set) var frames: [[String]] = []

    init(rows: Int, columns: Int) {
        self.rows = rows
        self.columns = columns
        screen = Array(repeating: [], count: rows)
    }

    /// Every line, scrollback then screen, without trailing spaces or the empty rows below.
    var lines: [String] {
        var all = scrollback + screenLines
        while all.last?.isEmpty == true { all.removeLast() }
        return all
    }

    private var screenLines: [String] {
        screen.map { line in
            var text = String(String.UnicodeScalarView(line))
            while text.last == " " { text.removeLast() }
            return text
        }
    }

    private mutating func lineFeed() {
        row += 1
        if row == rows {
            scrollback.append(screenLines[0])
            screen.removeFirst()
            screen.append([])
            row = rows - 1
        }
    }

    mutating func feed(_ text: String) {
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            i += 1
            switch c {
            case "\u{1B}":
                guard i < scalars.count, scalars[i] == "[" else { i += 1; continue }
                i += 1
                var parameter = ""
                while i < scalars.count, ("0"..."9").contains(scalars[i]) || scalars[i] == ";" || scalars[i] == "?" {
                    parameter.unicodeScalars.append(scalars[i])
                    i += 1
                }
                guard i < scalars.count else { return }
                let command = scalars[i]
                i += 1
                switch command {
                case "A": row = max(0, row - (Int(parameter) ?? 1))
                case "K" where parameter == "2": screen[row] = []
                case "J" where parameter.isEmpty || parameter == "0":
                    screen[row] = Array(screen[row].prefix(column))
                    for r in (row + 1)..<rows { screen[r] = [] }
                    frames.append(screenLines)
                default: break
                }
            case "\r": column = 0
            case "\n": lineFeed()
            default:
                if c.value < 0x20 { continue }
                if column >= columns { column = 0; lineFeed() }
                while screen[row].count < column { screen[row].append(" ") }
                if column < screen[row].count { screen[row][column] = c } else { screen[row].append(c) }
                column += 1
            }
        }
    }
}

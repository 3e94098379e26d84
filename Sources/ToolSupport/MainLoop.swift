// ToolSupport: the poll main loop — sleeps until input, a quit signal, a server shutdown or a timeout, and follows the server's rate.
import AudioGraphJACK
#if canImport(Glibc)
import Glibc
#endif

/// A tool's main loop, on the main thread while JACK's threads pull the graph.
///
/// Each time round it checks, in order: a quit signal (``QuitSignals``) or ``isDone`` → returns 0;
/// the driver's notifications are dispatched (`JACKDriver.dispatchNotifications()`: its
/// observers hear of an interruption or a new configuration); the server shut down or dropped
/// the client → without ``reconnects`` says so (``complain``) and returns 1, with it says so
/// once and then tries `JACKDriver.reconnect()` every 250 ms (a failed `jack_client_open`, no
/// busy loop) until a server answers (the driver makes the client's earlier connections again,
/// those to ports not back yet once they appear, and the loop says which wait), then
/// ``onReconnected`` (the tool restores its --input/--output routing); the server's sample rate changed (the driver's callback only records it) →
/// `JACKDriver.followSampleRate()` here, then ``onSampleRateFollowed``, or says why it could not
/// and returns 1 (a reconnect at another rate calls ``onSampleRateFollowed`` too). Then it calls
/// ``onWake`` (the tool's periodic work: redraw, reload a file, print a level) and sleeps in
/// `poll` until standard input has bytes, the signal pipe or the driver's notification pipe
/// becomes readable, or ``onWake``'s timeout passes. Bytes of input go to the ``Input`` handler; end of input is
/// not a quit (the loop goes on without reading).
///
/// Thread: the main thread (`@MainActor`), as are the handlers it calls.
@MainActor
public final class MainLoop {
    /// How standard input is read.
    public enum Input {
        /// Not at all.
        case none
        /// As lines (without the newline; a last line without one is passed at end of input).
        /// The handler returns false to quit.
        case lines((String) -> Bool)
        /// Byte by byte, for single keys from a terminal in non-canonical mode. The handler
        /// returns false to quit.
        case keys((UInt8) -> Bool)
    }

    /// The tool whose messages these are.
    public let tool: Tool
    /// The client whose shutdown and rate changes the loop watches.
    public let driver: JACKDriver
    /// Whether standard input is still open (false after end of input or an error).
    public private(set) var inputOpen = true

    /// Called each time round before the loop sleeps (the first time before the first sleep):
    /// the tool's periodic work. Returns the longest sleep, in milliseconds (≥ 0). Default 1000.
    public var onWake: () -> Int32 = { 1000 }
    /// Checked each time round after the quit signals: true ends the loop with status 0, as a
    /// quit does (graphrecord: the --duration is recorded). Default: never.
    public var isDone: () -> Bool = { false }
    /// Whether standard input is read this time round (graphthru: not while its terminal
    /// belongs to another process group). Default: always.
    public var readsInputNow: () -> Bool = { true }
    /// Called after the graph followed a new server rate (`driver.sampleRate` is the new one).
    public var onSampleRateFollowed: () -> Void = {}
    /// Checked each time round: a reason ends the loop with status 1, said as the complaint
    /// (graphrun: a part of a split graph, running in a process of its own on another server,
    /// ended). Default: never.
    public var failure: () -> String? = { nil }
    /// More descriptors whose readability wakes the loop (so ``failure`` is checked at once):
    /// graphrun's pipes from those processes. Default: none.
    public var extraFileDescriptors: [Int32] = []
    /// Whether a server that goes away is waited for (the tools' `--reconnect`) rather than
    /// ending the loop with status 1. Default: false.
    public var reconnects = false
    /// Called after `JACKDriver.reconnect()` opened the client again (same name and ports, the
    /// graph running): the tool restores its connections and port names. Returns notes to say
    /// (a port given that is not there yet); the loop says them with ``report``.
    public var onReconnected: () -> [String] = { [] }
    /// Says how the run goes (waiting for the server, back), one line without the tool's
    /// prefix. Default: the tool's `say` (stdout).
    public var report: (String) -> Void
    /// Milliseconds between reconnect attempts while the server is away.
    public static let reconnectInterval: Int32 = 250
    /// Says why the loop ends with a failure (the server went away, its new rate could not be
    /// followed), one line without the tool's prefix. Default: the tool's `complain` (stderr).
    /// A tool that draws a status area on the terminal shows it there instead, where a line
    /// written to stderr in the middle of the area would be wiped by the next redraw.
    public var complain: (String) -> Void

    /// Called when reading a terminal fails with EIO: the tool was put in the background. The
    /// loop keeps reading; the tool should stop asking for input until it is in the foreground.
    public var onBackground: () -> Void = {}

    /// A descriptor whose readability also wakes the loop before ``onWake``'s timeout, so that
    /// ``onWake`` runs at once (graphrun: inotify's, on the graph file's folder; ``onWake``
    /// reads it). -1 (the default): none.
    public var wakeFileDescriptor: Int32 = -1

    private let input: Input
    /// The last reason a reconnect failed other than "no server", said once until it changes.
    private var reconnectProblem: String?
    /// The last refusal and how many attempts in a row met it.
    private var reconnectRefusal: String?
    private var refusalRepeats = 0
    /// Whether the current interruption was said.
    private var interruptionSaid = false
    private var line: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 256)

    /// A loop for `driver`'s client, reading standard input as `input` says.
    public init(tool: Tool, driver: JACKDriver, input: Input = .none) {
        self.tool = tool
        self.driver = driver
        self.input = input
        complain = { [tool] in tool.complain($0) }
        report = { [tool] in tool.say("\(tool.name): \($0)") }
        if case .none = input { inputOpen = false }
    }

    /// Runs until a quit command (an input handler returned false) or signal, or a failure.
    /// - Returns: the exit status: ``ExitStatus/success`` (0) for a quit, ``ExitStatus/failure``
    ///   (1) when the server went away (without ``reconnects``) or the graph could not follow
    ///   its new rate (the reason goes to ``complain``).
    /// - Thread: the main thread.
    public func run() -> Int32 {
        // Physical ports that go away and come back while the server runs (a netjack2 slave
        // whose master restarted re-creates its system: ports): said both ways.
        let token = driver.addObserver { [report] notification in
            switch notification {
            case .connectionsLost(let lost):
                report("note: port(s) gone while the server runs on; their connection(s) will be made again when they are back: "
                       + lost.map(\.description).joined(separator: ", "))
            case .connectionsRestored(let restored):
                report("note: connection(s) made again, their ports back: " + restored.map(\.description).joined(separator: ", "))
            default: break
            }
        }
        defer { driver.removeObserver(token) }
        while true {
            if QuitSignals.received != 0 || isDone() { return ExitStatus.success }
            driver.dispatchNotifications()
            var waiting = false
            if let reason = failure() {
                complain(reason)
                return ExitStatus.failure
            }
            if driver.isShutDown {
                let reason = driver.shutdownReason
                let what = "the JACK server shut down\(reason.isEmpty ? "" : " (\(reason))")"
                guard reconnects else {
                    complain("\(what); exiting")
                    return ExitStatus.failure
                }
                if !interruptionSaid {
                    complain("\(what); waiting for it to come back (--reconnect)")
                    interruptionSaid = true
                }
                waiting = !tryReconnect()
            }
            if !waiting && driver.sampleRateChanged {
                do {
                    try driver.followSampleRate()
                    onSampleRateFollowed()
                } catch {
                    complain("could not follow the server's new sample rate (\(driver.sampleRate) Hz): \(error)")
                    return ExitStatus.failure
                }
            }
            // The shortest of the timeouts that apply (-1: none).
            var timeout = onWake()
            for limit in [driver.dispatchDelay, waiting ? MainLoop.reconnectInterval : -1] where limit >= 0 {
                timeout = timeout < 0 ? limit : min(timeout, limit)
            }
            let readInput = inputOpen && readsInputNow()
            var fds = [pollfd(fd: driver.notificationFileDescriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: QuitSignals.fileDescriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: readInput ? STDIN_FILENO : -1, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeFileDescriptor, events: Int16(POLLIN), revents: 0)]
                + extraFileDescriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready <= 0 || fds[2].revents == 0 { continue }
            if !readInputNow() { return ExitStatus.success }
        }
    }

    /// One reconnect attempt: true once the client runs again (then said, with the downtime,
    /// and handed to ``onReconnected``). "No server" stays quiet; another reason is said once.
    private func tryReconnect() -> Bool {
        // A server of the tool's own (--start-server) that exited has nobody else to start it.
        if let note = ServerStartOptions.restartOwnServerIfExited(), note != reconnectProblem {
            complain(note)
            reconnectProblem = note
        }
        let rateBefore = driver.sampleRate
        var downtime = 0.0
        let token = driver.addObserver { notification in
            if case .interruptionEnded(let seconds, _) = notification { downtime = seconds }
        }
        defer { driver.removeObserver(token) }
        do {
            try driver.reconnect()
        } catch {
            if case .serverNotRunning = error { return false }
            // A server still shutting down (or starting) refuses for a moment: said only when
            // the same refusal lasts a second (4 attempts), then once until it changes.
            let text = "\(error)"
            if text == reconnectRefusal { refusalRepeats += 1 } else { reconnectRefusal = text; refusalRepeats = 1 }
            if refusalRepeats >= 4, text != reconnectProblem { complain("cannot reconnect yet: \(text); trying again"); reconnectProblem = text }
            return false
        }
        reconnectProblem = nil
        reconnectRefusal = nil
        interruptionSaid = false
        let seconds = Double(Int((downtime * 100).rounded())) / 100
        let notes = onReconnected()  // connections first: once this is said, the ports are routed
        report("the JACK server is back: resumed as '\(driver.clientName)' after \(seconds) s (\(driver.configuration))")
        for note in notes { report(note) }
        let pending = driver.pendingConnections
        if !pending.isEmpty {
            let list = pending.map { "\($0.source) → \($0.destination)" }.joined(separator: ", ")
            report("note: \(pending.count) earlier connection(s) wait for their ports to come back: \(list)")
        }
        if driver.sampleRate != rateBefore { onSampleRateFollowed() }
        return true
    }

    /// Reads what standard input has and passes it on; false when a handler asked to quit.
    private func readInputNow() -> Bool {
        let n = read(STDIN_FILENO, &buffer, buffer.count)
        if n <= 0 {
            if n < 0 && (errno == EINTR || errno == EAGAIN) { return true }
            if n < 0, errno == EIO, case .keys = input { onBackground(); return true }
            inputOpen = false
            if case .lines(let handle) = input, !line.isEmpty {
                defer { line = [] }
                return handle(String(decoding: line, as: UTF8.self))
            }
            return true
        }
        for byte in buffer[0..<n] {
            switch input {
            case .none: break
            case .keys(let handle): if !handle(byte) { return false }
            case .lines(let handle):
                guard byte == UInt8(ascii: "\n") else { line.append(byte); continue }
                let text = String(decoding: line, as: UTF8.self)
                line = []
                if !handle(text) { return false }
            }
        }
        return true
    }
}

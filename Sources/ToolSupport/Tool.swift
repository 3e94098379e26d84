// ToolSupport: output — a tool's name, its unbuffered stdout lines, stderr messages and its exits with the tools' status codes.
import AudioGraphJACK
#if canImport(Glibc)
import Glibc
#endif

/// The exit statuses graphthru, graphrun and graphrecord share.
public enum ExitStatus {
    /// 0: quit by a command or a signal, or `--help`.
    public static let success: Int32 = 0
    /// 1: JACK failed (no server, server gone, port errors) or the graph refused to run.
    public static let failure: Int32 = 1
    /// 2: bad options or a bad input file; nothing ran.
    public static let usage: Int32 = 2

    /// The status for a failure connecting ports: ``usage`` when the user's --input/--output
    /// was not a port or a pattern (a mistake in the options), ``failure`` otherwise.
    public static func connecting(_ error: JACKDriverError) -> Int32 {
        if case .invalidPortPattern = error { return usage }
        return failure
    }
}

/// Milliseconds on the monotonic clock (`CLOCK_MONOTONIC`): for the tools' once-a-second lines
/// and deadlines. Thread: any.
public func monotonicMilliseconds() -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000
}

/// A command-line tool's voice: lines on stdout, `name: message` lines on stderr, and exits.
///
/// Everything is written straight to the file descriptor with write(2), unbuffered, so lines
/// reach a pipe as they happen (tests and scripts read them while the tool runs) and nothing is
/// lost at `exit`. A write that fails (a closed pipe) is dropped: tools ignore SIGPIPE
/// (``QuitSignals/install(_:secondSignalExits:)``), so it cannot kill them.
/// Thread: any (each call is one or more write(2) calls; lines from two threads may interleave).
public struct Tool: Sendable {
    /// The tool's name, the prefix of its messages: "graphthru".
    public let name: String

    /// A tool called `name` (the executable's name, shown before every message).
    public init(name: String) { self.name = name }

    /// Writes `text` as it is (no newline added) to `fd`, retrying after EINTR and partial writes.
    /// - Parameters:
    ///   - text: UTF-8 text, written whole (or until a write fails).
    ///   - fd: an open file descriptor; stdout unless told.
    /// - Thread: any.
    public static func write(_ text: String, to fd: Int32 = STDOUT_FILENO) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
            offset += n
        }
    }

    /// Prints one line on stdout, as it is (no prefix).
    /// - Thread: any.
    public func say(_ line: String) { Tool.write(line + "\n") }

    /// Messages longer than this many bytes are cut (a 2 MB argument is not echoed back whole).
    public static let longestMessage = 4096

    /// Prints `name: message` on stderr: an error or a warning the tool survives (cut to
    /// ``longestMessage`` bytes).
    /// - Thread: any.
    public func complain(_ message: String) { Tool.write("\(name): \(Tool.capped(message))\n", to: STDERR_FILENO) }

    /// `message`, or its first ``longestMessage`` bytes (whole characters) and how much was left out.
    static func capped(_ message: String) -> String {
        let size = message.utf8.count
        guard size > longestMessage else { return message }
        var kept = "", bytes = 0
        for character in message {
            bytes += character.utf8.count
            if bytes > longestMessage { break }
            kept.append(character)
        }
        return kept + "… (\(size - kept.utf8.count) more bytes left out)"
    }

    /// Prints `name: message` on stderr and exits the process with `status`.
    /// - Parameters:
    ///   - message: one line saying what went wrong and, where it helps, what to do.
    ///   - status: ``ExitStatus/failure`` (1) unless told; ``ExitStatus/usage`` (2) for bad
    ///     options or files.
    /// - Thread: the main thread (`exit` runs the atexit handlers, which stop a server the tool started).
    public func fail(_ message: String, status: Int32 = ExitStatus.failure) -> Never {
        complain(message)
        exit(status)
    }

    /// Prints a usage text (with a final newline) on stdout and exits with status 0: `--help`.
    /// - Thread: the main thread.
    public func help(_ usage: String) -> Never {
        Tool.write(usage + "\n")
        exit(ExitStatus.success)
    }

    /// With fd 0, 1 or 2 closed, the next file opened (libjack opens several) would take its
    /// number and be read as commands or written to: parks each closed one on /dev/null.
    /// - Thread: the main thread, first thing, before any file or client is opened.
    public static func parkClosedStandardStreams() {
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) == -1 {
            let null = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)
            if null >= 0 && null != fd { dup2(null, fd); close(null) }
        }
    }
}

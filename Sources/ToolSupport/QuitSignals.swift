// ToolSupport: signals — the one self-pipe: quit signals write a byte to a pipe that the main loop polls.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// What the handlers touch. Globals, because a signal handler is a C function and captures
// nothing; all are made before the first handler is installed, so a handler never runs their
// lazy initialization.
private let firstSignal = Atomic<Int32>(0)
private let exitOnSecondSignal = Atomic<Bool>(true)
private let exitStatusOnAlarm = Atomic<Int32>(0)
private let signalPipe: (read: Int32, write: Int32) = {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return (-1, -1) }
    for fd in fds {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }
    return (fds[0], fds[1])
}()

/// A quit signal: records the first one and writes a byte to the pipe (both async-signal-safe);
/// a second one while quitting ends the process at once, when asked for.
private func quitSignalHandler(_ sig: Int32) {
    if firstSignal.exchange(sig, ordering: .relaxed) != 0 && exitOnSecondSignal.load(ordering: .relaxed) { _exit(128 + sig) }
    var byte: UInt8 = 1
    _ = write(signalPipe.write, &byte, 1)
}

/// SIGALRM during ``QuitSignals/withDeadline(seconds:exitStatus:_:)``: the closing step hung.
private func deadlineHandler(_ sig: Int32) {
    _exit(exitStatusOnAlarm.load(ordering: .relaxed))
}

/// The quit signals of a tool, turned into something a `poll` main loop can wait for.
///
/// Handlers only record the signal and write a byte to a non-blocking pipe (the self-pipe
/// trick): any thread may take the signal (libjack's threads, say), and the main loop
/// (``MainLoop``) wakes from `poll` on ``fileDescriptor``, then stops the tool in order:
/// recorder, client, server. Nothing else happens in the handler.
public enum QuitSignals {
    /// Installs the handlers: each of `signals` quits. Also unblocks them (a parent may have
    /// left them blocked, and the mask survives exec) and ignores SIGPIPE (a reader that goes
    /// away must not kill a tool that is writing a file or serving JACK).
    /// - Parameters:
    ///   - signals: signal numbers, e.g. `[SIGINT, SIGTERM, SIGHUP]`.
    ///   - secondSignalExits: whether a second signal while quitting ends the process at once
    ///     with status 128 + signal (say, a close that hangs on a wedged server).
    /// - Thread: the main thread, once, before the JACK client opens.
    public static func install(_ signals: [Int32], secondSignalExits: Bool = true) {
        _ = signalPipe
        _ = firstSignal.load(ordering: .relaxed)
        exitOnSecondSignal.store(secondSignalExits, ordering: .relaxed)
        var set = sigset_t()
        sigemptyset(&set)
        for sig in signals {
            sigaddset(&set, sig)
            signal(sig, quitSignalHandler)
        }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        signal(SIGPIPE, SIG_IGN)
    }

    /// The signal that asked to quit, or 0 while none has. Thread: any.
    public static var received: Int32 { firstSignal.load(ordering: .relaxed) }

    /// Becomes readable when a quit signal arrives: poll it. -1 if the pipe could not be made
    /// (then poll with a short timeout and check ``received``). Thread: any.
    public static var fileDescriptor: Int32 { signalPipe.read }

    /// Runs `body` (closing the JACK client, stopping a server: calls that talk to a server,
    /// which may be wedged) and ends the process with `exitStatus` if it takes longer than
    /// `seconds`, rather than hang.
    /// - Parameters:
    ///   - seconds: 1… whole seconds (SIGALRM).
    ///   - exitStatus: the status the process would have exited with anyway.
    ///   - body: the closing calls.
    /// - Thread: the main thread.
    public static func withDeadline(seconds: UInt32, exitStatus: Int32, _ body: () -> Void) {
        exitStatusOnAlarm.store(exitStatus, ordering: .relaxed)
        signal(SIGALRM, deadlineHandler)
        // A parent may have left SIGALRM blocked (a test runner's threads block signals, and the
        // mask survives exec): blocked, the deadline would never come. This thread takes it.
        var alarmOnly = sigset_t()
        sigemptyset(&alarmOnly)
        sigaddset(&alarmOnly, SIGALRM)
        pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
        alarm(seconds)
        body()
        alarm(0)
    }
}

// CProcessSpawn: the forked side — the watchdog and the program it starts, from fork to exec,
// using only async-signal-safe calls (the parent has other threads, whose locks may be held in
// this copy of its memory).
#define _GNU_SOURCE
#include "spawn_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t ag_now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);   // async-signal-safe
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/// The program's side, from _Fork in the watchdog to exec. Never returns.
static void ag_program(const ag_fork_plan *plan, pid_t watchdog) {
    int failure = 0;
    // SIGTERM if the watchdog is killed outright (it never is in the ordinary course; see
    // ag_watchdog). If it went already, between the fork and here, stop rather than run orphaned.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) { failure = errno; goto fail; }
    if (getppid() != watchdog) _exit(127);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(plan->out[1], 1) < 0 || dup2(plan->err[1], 2) < 0) { failure = errno; goto fail; }
    // Every other descriptor this process left inheritable (its own, or its embedder's) stays
    // behind: a pipe end or socket kept open by the program could hold up someone else's EOF.
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int fd = 3; fd < plan->fd_limit; fd++) (void)fcntl(fd, F_SETFD, FD_CLOEXEC);   // before Linux 5.11
    }
    // The program keeps a read end of each of its output pipes, unread, across exec. Without
    // it, once this process is gone, the program's next write fails with EPIPE and SIGPIPE:
    // jackd 1.9.21 installs one-shot handlers when it starts shutting down, and a second
    // SIGPIPE kills it before it removes its registry entry (measured). A pipe always has a
    // reader this way; the watcher thread drains it while this process lives, so it cannot
    // fill up before then.
    if (fcntl(plan->out[0], F_SETFD, 0) != 0 || fcntl(plan->err[0], F_SETFD, 0) != 0) { failure = errno; goto fail; }
    // The watcher thread blocks every signal, and the watchdog too: the program gets an empty
    // mask, as a program started from a shell would.
    if (sigprocmask(SIG_SETMASK, &plan->empty, NULL) != 0) { failure = errno; goto fail; }
    execve(plan->c->path, plan->c->argv, environ);
    failure = errno;
fail:
    // The pipe is close-on-exec: the watcher reads EOF after a successful exec, this errno otherwise.
    (void)write(plan->report, &failure, sizeof failure);
    _exit(127);
}

/// Ends the watchdog the way the program ended: the same exit status, or the same signal.
static void ag_exit_like(const ag_fork_plan *plan, int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        (void)sigaction(sig, &plan->defaults, NULL);
        (void)kill(getpid(), sig);
        (void)sigprocmask(SIG_UNBLOCK, &one, NULL);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

/// The watchdog: the process this one forks, which forks the program and stays between them.
/// A copy of this multithreaded process that never execs, so only async-signal-safe calls
/// (sigtimedwait is one system call in glibc). Never returns.
///
/// Why not give the program PR_SET_PDEATHSIG directly: the kernel sends it the moment this
/// process starts dying, while this process's JACK clients are still connected (their
/// sockets close only when its last thread is gone), and once per thread the program is
/// handed on to while the threads go. jackd, told to stop then, writes to those clients'
/// sockets as they close, and the second SIGPIPE or SIGTERM of its shutdown kills it before it
/// removes its entry from jack2's registry of 8 servers (measured with jackd 1.9.21: 3 kills
/// out of 3). The watchdog waits until this process is wholly gone, gives the program a moment
/// to see its clients go, then sends it one SIGTERM.
void ag_watchdog(const ag_fork_plan *plan) {
    // SIGUSR1 when the watcher thread goes, which it does only when this process dies (it
    // lives as long as the watchdog: it waits for it). Too late already: stop.
    if (prctl(PR_SET_PDEATHSIG, SIGUSR1) != 0) _exit(127);
    if (getppid() != plan->parent) _exit(127);
    (void)prctl(PR_SET_NAME, "ag-watchdog");   // what ps and top show (comm), beside this process's command line
    // A process group of its own, which the program starts in: a terminal's ^C goes to this
    // process alone, which stops the server after its own clients have closed.
    (void)setpgid(0, 0);
    // Signal dispositions back to their defaults: ignored ones (graphthru ignores SIGTTOU,
    // SIGTTIN, SIGPIPE) would survive exec. None of this process's handlers may run here
    // either: every signal stays blocked (as in the watcher thread) and is taken with sigtimedwait.
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        (void)sigaction(sig, &plan->defaults, NULL);   // EINVAL for glibc's own (SIGCANCEL, SIGSETXID): fine
    }
    pid_t watchdog = getpid();
    // _Fork, not fork: no atfork handlers, whose locks may be held by threads this copy lacks.
    pid_t program = _Fork();
    if (program == 0) ag_program(plan, watchdog);
    if (program < 0) {
        int failure = errno;
        (void)write(plan->report, &failure, sizeof failure);
        _exit(127);
    }
    // Hold nothing of this process: its standard streams and every other descriptor (the
    // start report's write end among them, so the watcher reads EOF once the program has exec'd).
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) { (void)dup2(null, 0); (void)dup2(null, 1); (void)dup2(null, 2); }
    if (close_range(3, ~0U, 0) != 0) {
        for (int fd = 3; fd < plan->fd_limit; fd++) (void)close(fd);
    }

    enum { GRACE_MS = 300, ORPHAN_WAIT_MS = 3000, KILL_AFTER_MS = 5000, TICK_MS = 20 };
    int64_t dying_since = -1, gone_since = -1, term_sent_at = -1;
    bool killed = false;
    for (;;) {
        struct timespec tick = { 0, TICK_MS * 1000000L };
        siginfo_t info;
        int sig = sigtimedwait(&plan->watched, &info, dying_since >= 0 ? &tick : NULL);
        int status;
        pid_t reaped = waitpid(program, &status, WNOHANG);
        if (reaped == program) ag_exit_like(plan, status);
        if (reaped < 0 && errno == ECHILD) _exit(127);
        int64_t now = ag_now_ms();
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) {
            // From this process's stop(): passed on once (a second SIGTERM during jackd's
            // shutdown would kill it).
            if (term_sent_at < 0) { (void)kill(program, sig); term_sent_at = now; }
        } else if (sig == SIGUSR2) {
            // From this process's stop(), when SIGTERM was not enough.
            if (!killed) { (void)kill(program, SIGKILL); killed = true; }
        } else if (sig == SIGUSR1 && dying_since < 0) {
            dying_since = now;
        }
        if (dying_since < 0) continue;
        // Wholly gone: handed on to another reaper, so its last thread has exited and its
        // descriptors (the JACK clients' sockets) are closed.
        if (gone_since < 0 && getppid() != plan->parent) gone_since = now;
        if (term_sent_at < 0 && ((gone_since >= 0 && now - gone_since >= GRACE_MS) || now - dying_since >= ORPHAN_WAIT_MS)) {
            (void)kill(program, SIGTERM);
            term_sent_at = now;
        }
        if (term_sent_at >= 0 && !killed && now - term_sent_at >= KILL_AFTER_MS) {
            (void)kill(program, SIGKILL);
            killed = true;
        }
    }
}

// CProcessSpawn: starting a program as a child that cannot outlive this process (the JACK server of our own).
#ifndef AUDIOGRAPH_CPROCESSSPAWN_H
#define AUDIOGRAPH_CPROCESSSPAWN_H

// A child program that cannot outlive this process: how JACKServer runs jackd.
//
//   this process ── watcher thread ──fork──▶ watchdog ──_Fork──▶ program (exec)
//
// A watcher thread of the handle's own forks a watchdog, which forks and execs the program,
// then stays between the two doing nothing but wait; the watcher thread reads the program's
// stdout and stderr (keeping the last bytes of each, for the reason of a failure) and reaps
// the watchdog, which ends as the program does.
//
// When this process dies, however it dies (SIGKILL included), the kernel tells the watchdog
// (prctl PR_SET_PDEATHSIG): it waits until this process is wholly gone, gives the program
// 300 ms to see this process's connections close, sends it one SIGTERM and, 5 s later, SIGKILL.
// Why not PR_SET_PDEATHSIG on the program itself: see ag_watchdog in processspawn.c (jackd,
// stopped while its clients in this process are still closing, dies mid-shutdown and leaves
// its entry in jack2's registry). The program also has PR_SET_PDEATHSIG=SIGTERM, relative to
// the watchdog, for the day the watchdog is killed on its own.
//
// Why the watcher thread forks rather than the caller: PR_SET_PDEATHSIG fires when the
// *thread* that forked exits, not the process. A caller's thread may end long before the
// process does (a Dispatch or Swift-concurrency worker, a short-lived control thread), and the
// server would be stopped under the caller's feet. The watcher cannot end before the watchdog:
// it waits for it. So the signal comes exactly when the process goes away, however it goes.
//
// Nothing here is specific to JACK. Thread: every function here may be called from any
// thread, but one handle is driven by one thread at a time (spawn, wait/signal, release).

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// A running (or ended) child and its watcher thread. Opaque.
typedef struct audiograph_child audiograph_child;

/// Starts the program `argv[0]` (searched on `$PATH` unless it holds a `/`) with the arguments
/// `argv` (NULL-terminated) and this process's environment, under a watchdog, as a child that:
/// - gets one SIGTERM when this process ends, however it ends, once this process is wholly
///   gone (and SIGKILL 5 s later if it still runs);
/// - starts in a process group of its own, the watchdog's (a terminal's ^C reaches only this
///   process, which then stops the child in its own order);
/// - starts with an empty signal mask and every signal at its default action;
/// - inherits no file descriptor of this process but 0, 1 and 2 (every other one is made
///   close-on-exec in the child, whatever this process left inheritable);
/// - reads /dev/null; its stdout and stderr go to pipes drained by the watcher thread (the
///   child also holds, unread, a read end of each, at fds of 3 or more: if this process dies
///   first, the child's last words must not end it with SIGPIPE before it has cleaned up). When
///   `forward_fd` is 0 or more, every line is also written there with a "NAME: " prefix (NAME
///   is the program's file name), for example 2 (stderr) when diagnostics are asked for.
/// Returns NULL when the program cannot be found or started, with `*error_number` set to the
/// errno (ENOENT: not on `$PATH`); nothing is left running then.
/// Thread: any; creates a thread, allocates, forks.
audiograph_child *audiograph_child_spawn(const char *const *argv, int forward_fd, int *error_number);

/// The watchdog's process id (the program's own is not needed: signals go through the
/// watchdog). Thread: any.
int32_t audiograph_child_pid(const audiograph_child *child);

/// Waits up to `milliseconds` (0: not at all) for the child to end and be reaped; true once it
/// has (the program and its watchdog have both exited). Returns at once when it ends. Thread: any.
bool audiograph_child_wait(audiograph_child *child, int32_t milliseconds);

/// The program's wait status (as from waitpid: WIFEXITED, WEXITSTATUS, WIFSIGNALED, WTERMSIG;
/// the watchdog ends the same way) once it has ended; -1 while it runs or when it was reaped by
/// someone else. Thread: any.
int audiograph_child_status(audiograph_child *child);

/// Sends `signal` to the child if it has not been reaped yet (never to a recycled process id:
/// the watcher reaps it under the same lock), through the watchdog: it passes the first
/// SIGTERM, SIGINT, SIGHUP or SIGQUIT on to the program, and SIGKILL (as SIGUSR2 to the
/// watchdog) kills the program, after which the watchdog ends too. Thread: any.
void audiograph_child_signal(audiograph_child *child, int signal);

/// Copies the last output of `stream` (1: stdout, 2: stderr), at most 8 KiB and at most
/// `size` - 1 bytes (the newest ones), into `buffer`, NUL-terminated; returns the byte count.
/// Thread: any.
size_t audiograph_child_output(audiograph_child *child, int stream, char *buffer, size_t size);

/// Frees the handle. Call it once the child has ended (``audiograph_child_wait`` returned
/// true); if it has not, the watcher thread is left to reap it and free the handle itself
/// (this never blocks and never signals the child). Thread: any; the handle is gone after it.
void audiograph_child_release(audiograph_child *child);

#endif

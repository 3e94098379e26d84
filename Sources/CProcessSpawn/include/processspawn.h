#ifndef AUDIOGRAPH_CPROCESSSPAWN_H
#define AUDIOGRAPH_CPROCESSSPAWN_H

// A child program that cannot outlive this process: how JACKServer runs jackd.
//
// The child is forked by a watcher thread of its own, which lives exactly as long as the child:
// it forks, then reads the child's stdout and stderr (keeping the last bytes of each, for the
// reason of a failure) and reaps it. Between fork and exec the child asks the kernel for
// SIGTERM when its parent dies (prctl PR_SET_PDEATHSIG), so a parent killed by SIGKILL, or one
// that ends without stopping it, takes the child down too.
//
// Why a watcher thread rather than forking from the caller: PR_SET_PDEATHSIG fires when the
// *thread* that forked exits, not the process. A caller's thread may end long before the
// process does (a Dispatch or Swift-concurrency worker, a short-lived control thread), and the
// child would be killed under the caller's feet. The watcher cannot end before the child: it
// waits for it. So the signal comes exactly when the process goes away, however it goes.
//
// Nothing here is specific to JACK. Thread: every function here may be called from any
// thread, but one handle is driven by one thread at a time (spawn, wait/signal, release).

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// A running (or ended) child and its watcher thread. Opaque.
typedef struct audiograph_child audiograph_child;

/// Starts the program `argv[0]` (searched on `$PATH` unless it holds a `/`) with the arguments
/// `argv` (NULL-terminated) and this process's environment, as a child that:
/// - gets SIGTERM when this process ends, however it ends;
/// - runs in a process group of its own (a terminal's ^C reaches only this process, which then
///   stops the child in its own order);
/// - starts with an empty signal mask and every signal at its default action except SIGPIPE,
///   ignored (its output goes to pipes read by this process: if this process dies first, the
///   child's last words must fail with EPIPE rather than kill it before it has cleaned up);
/// - reads /dev/null; its stdout and stderr go to pipes drained by the watcher thread. When
///   `forward_fd` is 0 or more, every line is also written there with a "NAME: " prefix (NAME
///   is the program's file name), for example 2 (stderr) when diagnostics are asked for.
/// Returns NULL when the program cannot be found or started, with `*error_number` set to the
/// errno (ENOENT: not on `$PATH`); nothing is left running then.
/// Thread: any; creates a thread, allocates, forks.
audiograph_child *audiograph_child_spawn(const char *const *argv, int forward_fd, int *error_number);

/// The child's process id. Thread: any.
int32_t audiograph_child_pid(const audiograph_child *child);

/// Waits up to `milliseconds` (0: not at all) for the child to end and be reaped; true once it
/// has. Returns at once when it ends. Thread: any.
bool audiograph_child_wait(audiograph_child *child, int32_t milliseconds);

/// The child's wait status (as from waitpid: WIFEXITED, WEXITSTATUS, WIFSIGNALED, WTERMSIG)
/// once it has ended; -1 while it runs or when it was reaped by someone else. Thread: any.
int audiograph_child_status(audiograph_child *child);

/// Sends `signal` to the child if it has not been reaped yet (never to a recycled process id:
/// the watcher reaps it under the same lock). Thread: any.
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

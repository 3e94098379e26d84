// See include/processspawn.h.
#define _GNU_SOURCE
#include "processspawn.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { AG_TAIL = 8192 };
enum { AG_STARTING, AG_RUNNING, AG_ENDED };

struct audiograph_child {
    pthread_t watcher;
    pthread_mutex_t lock;
    pthread_cond_t changed;        // on CLOCK_MONOTONIC
    char *path;                    // the program, resolved on $PATH before the fork
    char **argv;                   // copies, NULL-terminated
    char *label;                   // "NAME: ", the prefix of forwarded lines
    int forward_fd;
    bool at_line_start[2];         // watcher only
    // Under lock:
    int phase;
    int start_error;               // errno of a failed start, 0 otherwise
    pid_t pid;
    int status;                    // wait status once ended, -1 unknown
    bool abandoned;                // released while running: the watcher frees the handle
    char tail[2][AG_TAIL];         // the last bytes of stdout [0] and stderr [1]
    size_t tail_length[2];
};

static void ag_free(audiograph_child *c) {
    if (c->argv != NULL) {
        for (char **a = c->argv; *a != NULL; a++) free(*a);
        free(c->argv);
    }
    free(c->path);
    free(c->label);
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/// `name` on $PATH (as execvp would search it), or a copy of `name` when it holds a '/'.
/// NULL with errno set when there is none. Resolved before the fork: execvp is not
/// async-signal-safe (it may allocate), execve is.
static char *ag_find_program(const char *name) {
    if (strchr(name, '/') != NULL) return strdup(name);
    const char *path = getenv("PATH");
    if (path == NULL || *path == 0) path = "/usr/local/bin:/usr/bin:/bin";
    size_t name_length = strlen(name);
    for (const char *p = path;; ) {
        const char *end = strchr(p, ':');
        size_t length = end != NULL ? (size_t)(end - p) : strlen(p);
        char *candidate = malloc(length + name_length + 3);
        if (candidate == NULL) return NULL;
        if (length == 0) { candidate[0] = '.'; length = 1; } else memcpy(candidate, p, length);
        candidate[length] = '/';
        memcpy(candidate + length + 1, name, name_length + 1);
        struct stat st;
        if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) return candidate;
        free(candidate);
        if (end == NULL) break;
        p = end + 1;
    }
    errno = ENOENT;
    return NULL;
}

/// A close-on-exec pipe whose two ends are 3 or more, so that the child's dup2 onto 0, 1 and 2
/// never meets one of them (it would keep its close-on-exec flag, and the stream would vanish).
static int ag_pipe(int fds[2]) {
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        if (fds[i] < 3) {
            int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
            if (moved < 0) { close(fds[0]); close(fds[1]); return -1; }
            close(fds[i]);
            fds[i] = moved;
        }
    }
    return 0;
}

static void ag_write_all(int fd, const char *data, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0) { if (errno == EINTR) continue; return; }
        data += w;
        n -= (size_t)w;
    }
}

/// Keeps the newest AG_TAIL bytes of a stream, and forwards its lines when asked. Watcher only.
static void ag_keep(audiograph_child *c, int stream, const char *data, size_t n) {
    if (c->forward_fd >= 0) {
        const char *p = data, *end = data + n;
        while (p < end) {
            if (c->at_line_start[stream]) ag_write_all(c->forward_fd, c->label, strlen(c->label));
            const char *newline = memchr(p, '\n', (size_t)(end - p));
            const char *stop = newline != NULL ? newline + 1 : end;
            ag_write_all(c->forward_fd, p, (size_t)(stop - p));
            c->at_line_start[stream] = newline != NULL;
            p = stop;
        }
    }
    pthread_mutex_lock(&c->lock);
    char *tail = c->tail[stream];
    size_t *length = &c->tail_length[stream];
    if (n >= AG_TAIL) {
        memcpy(tail, data + n - AG_TAIL, AG_TAIL);
        *length = AG_TAIL;
    } else {
        if (*length + n > AG_TAIL) {
            size_t drop = *length + n - AG_TAIL;
            memmove(tail, tail + drop, *length - drop);
            *length -= drop;
        }
        memcpy(tail + *length, data, n);
        *length += n;
    }
    pthread_mutex_unlock(&c->lock);
}

/// What the forked processes need, all made before the fork: after it they may not allocate.
typedef struct {
    const audiograph_child *c;
    pid_t parent;                  // this process
    struct sigaction defaults;     // SIG_DFL, empty mask
    sigset_t empty;
    sigset_t watched;              // what the watchdog waits for
    const int *out, *err;          // the output pipes
    int report;                    // write end of the start report pipe
    int fd_limit;                  // descriptors to mark close-on-exec where close_range is missing
} ag_fork_plan;

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
static void ag_watchdog(const ag_fork_plan *plan) {
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

static void ag_start_failed(audiograph_child *c, int error) {
    pthread_mutex_lock(&c->lock);
    c->start_error = error != 0 ? error : EIO;
    c->phase = AG_ENDED;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}

/// The watcher thread: forks, reports the start, drains the child's output, reaps it.
/// Runs with every signal blocked (the mask it was created with).
static void *ag_watch(void *argument) {
    audiograph_child *c = argument;
    int out[2], err[2], report[2];
    if (ag_pipe(out) != 0) { ag_start_failed(c, errno); return NULL; }
    if (ag_pipe(err) != 0) { int e = errno; close(out[0]); close(out[1]); ag_start_failed(c, e); return NULL; }
    if (ag_pipe(report) != 0) {
        int e = errno;
        close(out[0]); close(out[1]); close(err[0]); close(err[1]);
        ag_start_failed(c, e);
        return NULL;
    }
    // Everything the forked processes need is made here: after the fork they may not allocate.
    ag_fork_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.c = c;
    plan.parent = getpid();
    plan.defaults.sa_handler = SIG_DFL;
    sigemptyset(&plan.defaults.sa_mask);
    sigemptyset(&plan.empty);
    sigemptyset(&plan.watched);
    int watched[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++) sigaddset(&plan.watched, watched[i]);
    plan.out = out;
    plan.err = err;
    plan.report = report[1];
    struct rlimit files;
    plan.fd_limit = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 ? (int)files.rlim_cur : 65536;

    pid_t pid = fork();
    if (pid == 0) ag_watchdog(&plan);
    int fork_error = errno;
    close(out[1]);
    close(err[1]);
    close(report[1]);
    if (pid < 0) {
        close(out[0]); close(err[0]); close(report[0]);
        ag_start_failed(c, fork_error);
        return NULL;
    }
    int exec_error = 0;
    ssize_t n;
    do { n = read(report[0], &exec_error, sizeof exec_error); } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof exec_error) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        close(out[0]); close(err[0]);
        ag_start_failed(c, exec_error);
        return NULL;
    }
    pthread_mutex_lock(&c->lock);
    c->pid = pid;
    c->phase = AG_RUNNING;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);

    // Drain both streams until both close (the child exited). Once a second, also ask whether
    // the child has ended with a stream still open (a grandchild holding it): then stop
    // reading rather than wait for that grandchild.
    struct pollfd fds[2] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN } };
    char buffer[4096];
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        int ready = poll(fds, 2, 1000);
        if (ready < 0 && errno != EINTR) break;
        if (ready == 0) {
            siginfo_t info;
            memset(&info, 0, sizeof info);
            if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == pid) break;
            continue;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
            if (got > 0) { ag_keep(c, i, buffer, (size_t)got); continue; }
            if (got < 0 && errno == EINTR) continue;
            close(fds[i].fd);
            fds[i].fd = -1;
        }
    }
    for (int i = 0; i < 2; i++) if (fds[i].fd >= 0) close(fds[i].fd);

    // Wait without reaping, then reap under the lock: audiograph_child_signal checks the phase
    // under the same lock, so it never signals a process id the system has given to another.
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {}
    pthread_mutex_lock(&c->lock);
    int status = -1;
    pid_t reaped;
    do { reaped = waitpid(pid, &status, 0); } while (reaped < 0 && errno == EINTR);
    c->status = reaped == pid ? status : -1;
    c->phase = AG_ENDED;
    bool abandoned = c->abandoned;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    if (abandoned) ag_free(c);
    return NULL;
}

audiograph_child *audiograph_child_spawn(const char *const *argv, int forward_fd, int *error_number) {
    *error_number = 0;
    if (argv == NULL || argv[0] == NULL) { *error_number = EINVAL; return NULL; }
    audiograph_child *c = calloc(1, sizeof *c);
    if (c == NULL) { *error_number = ENOMEM; return NULL; }
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&c->changed, &attributes);
    pthread_condattr_destroy(&attributes);
    c->forward_fd = forward_fd;
    c->at_line_start[0] = c->at_line_start[1] = true;
    c->status = -1;
    c->phase = AG_STARTING;

    size_t count = 0;
    while (argv[count] != NULL) count++;
    c->argv = calloc(count + 1, sizeof *c->argv);
    if (c->argv == NULL) { *error_number = ENOMEM; ag_free(c); return NULL; }
    for (size_t i = 0; i < count; i++) {
        if ((c->argv[i] = strdup(argv[i])) == NULL) { *error_number = ENOMEM; ag_free(c); return NULL; }
    }
    c->path = ag_find_program(argv[0]);
    if (c->path == NULL) { *error_number = errno != 0 ? errno : ENOENT; ag_free(c); return NULL; }
    const char *base = strrchr(argv[0], '/');
    base = base != NULL ? base + 1 : argv[0];
    c->label = malloc(strlen(base) + 3);
    if (c->label == NULL) { *error_number = ENOMEM; ag_free(c); return NULL; }
    strcpy(c->label, base);
    strcat(c->label, ": ");

    // The watcher is created with every signal blocked: it must not take the process's signals
    // (their handlers belong to other threads' work), and the child it forks starts that way
    // too, so no inherited handler can run in the child before it resets them.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int created = pthread_create(&c->watcher, NULL, ag_watch, c);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (created != 0) { *error_number = created; ag_free(c); return NULL; }

    pthread_mutex_lock(&c->lock);
    while (c->phase == AG_STARTING) pthread_cond_wait(&c->changed, &c->lock);
    int start_error = c->start_error;
    pthread_mutex_unlock(&c->lock);
    if (start_error != 0) {
        pthread_join(c->watcher, NULL);
        ag_free(c);
        *error_number = start_error;
        return NULL;
    }
    return c;
}

int32_t audiograph_child_pid(const audiograph_child *child) {
    return (int32_t)child->pid;   // written once, before spawn returned
}

bool audiograph_child_wait(audiograph_child *child, int32_t milliseconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (milliseconds > 0) {
        deadline.tv_sec += milliseconds / 1000;
        deadline.tv_nsec += (long)(milliseconds % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec += 1; deadline.tv_nsec -= 1000000000L; }
    }
    pthread_mutex_lock(&child->lock);
    while (child->phase != AG_ENDED && milliseconds > 0) {
        if (pthread_cond_timedwait(&child->changed, &child->lock, &deadline) == ETIMEDOUT) break;
    }
    bool ended = child->phase == AG_ENDED;
    pthread_mutex_unlock(&child->lock);
    return ended;
}

int audiograph_child_status(audiograph_child *child) {
    pthread_mutex_lock(&child->lock);
    int status = child->phase == AG_ENDED ? child->status : -1;
    pthread_mutex_unlock(&child->lock);
    return status;
}

void audiograph_child_signal(audiograph_child *child, int signal) {
    pthread_mutex_lock(&child->lock);
    // The watchdog passes SIGTERM, SIGINT, SIGHUP and SIGQUIT on once, and turns SIGUSR2 into
    // SIGKILL for the program (a SIGKILL would end the watchdog alone, and the program is in a
    // process group of its own: jackd makes one).
    if (child->phase == AG_RUNNING) (void)kill(child->pid, signal == SIGKILL ? SIGUSR2 : signal);
    pthread_mutex_unlock(&child->lock);
}

size_t audiograph_child_output(audiograph_child *child, int stream, char *buffer, size_t size) {
    if (size == 0) return 0;
    if (stream != 1 && stream != 2) { buffer[0] = 0; return 0; }
    pthread_mutex_lock(&child->lock);
    size_t length = child->tail_length[stream - 1];
    size_t n = length < size - 1 ? length : size - 1;
    memcpy(buffer, child->tail[stream - 1] + length - n, n);
    pthread_mutex_unlock(&child->lock);
    buffer[n] = 0;
    return n;
}

void audiograph_child_release(audiograph_child *child) {
    pthread_t watcher = child->watcher;   // an abandoned handle may be freed once unlocked
    pthread_mutex_lock(&child->lock);
    bool ended = child->phase == AG_ENDED;
    if (!ended) child->abandoned = true;
    pthread_mutex_unlock(&child->lock);
    if (ended) {
        pthread_join(watcher, NULL);
        ag_free(child);
    } else {
        pthread_detach(watcher);
    }
}

// CProcessSpawn: the parent's side — the watcher thread that forks the watchdog, drains the
// program's output and reaps it, and the API of include/processspawn.h.
#define _GNU_SOURCE
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
#include "spawn_internal.h"

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

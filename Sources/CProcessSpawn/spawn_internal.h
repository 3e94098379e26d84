// CProcessSpawn's internals shared by its two files: the child handle, and what the forked
// processes need (made before the fork: after it they may not allocate).
#ifndef AUDIOGRAPH_SPAWN_INTERNAL_H
#define AUDIOGRAPH_SPAWN_INTERNAL_H
#include "processspawn.h"
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

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

/// The watchdog's life after the fork (forked.c): starts the program, waits for it or for
/// this process to die, then stops it cleanly. Only async-signal-safe calls. Never returns.
void ag_watchdog(const ag_fork_plan *plan);

#endif

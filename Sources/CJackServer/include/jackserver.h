#ifndef AUDIOGRAPH_CJACKSERVER_H
#define AUDIOGRAPH_CJACKSERVER_H

// An in-process JACK server through libjackserver's control API (jack/control.h, jack2).
//
// libjackserver exports the whole client API too (jack_client_open and friends, in-process
// variants). Linked into the same program as libjack, whichever library the loader finds first
// wins every such symbol: with libjackserver first, an ordinary client crashes (measured on
// jack2 1.9.21: jack_client_open segfaults when no in-process server runs). So libjackserver
// is loaded at run time with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): its own symbols stay its
// own, and the program's clients keep using libjack, talking to the in-process server as to
// any other.

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// A server started by audiograph_jackserver_start. Zero it before use.
typedef struct audiograph_jackserver {
    void *library;
    void *server;          // jackctl_server_t *
    bool started;
    bool opened;
    void *destroy;         // jackctl_server_destroy
    void *stop;            // jackctl_server_stop
    void *close;           // jackctl_server_close
} audiograph_jackserver;

/// Creates, opens and starts a server named `name` with the driver `driver` ("dummy", "alsa", …).
/// `rate` and `period` are set on the driver when non-zero (drivers with "rate"/"period"
/// parameters); `realtime` sets the server's "realtime" parameter. On failure returns false and
/// writes a one-line reason into `error` (`error_size` bytes); nothing stays running.
/// Thread: a control thread; loads a library, allocates, starts threads.
bool audiograph_jackserver_start(audiograph_jackserver *handle, const char *name, const char *driver,
                                 uint32_t rate, uint32_t period, bool realtime, char *error, size_t error_size);

/// Stops, closes and destroys the server; its clients are told it shut down. Safe to call
/// twice. Thread: a control thread, never a JACK callback.
void audiograph_jackserver_stop(audiograph_jackserver *handle);

#endif

// CJack: libjack's headers (client, thread priorities, metadata, ring buffer) and a shim for the variadic jack_client_open.
#ifndef AUDIOGRAPH_CJACK_SHIM_H
#define AUDIOGRAPH_CJACK_SHIM_H

#include <jack/jack.h>
#include <jack/types.h>
#include <jack/metadata.h>
#include <jack/ringbuffer.h>
#include <jack/thread.h>
#include <unistd.h>
#include <sys/syscall.h>

/// `jack_client_open` is variadic, which Swift cannot call; this fixed-arity wrapper passes the
/// server name only when `JackServerName` is set in `options` (jack.h, "jack_client_open").
static inline jack_client_t *audiograph_jack_client_open(const char *client_name,
                                                         jack_options_t options,
                                                         jack_status_t *status,
                                                         const char *server_name) {
    if (server_name != NULL && (options & JackServerName)) {
        return jack_client_open(client_name, options, status, server_name);
    }
    return jack_client_open(client_name, (jack_options_t)(options & ~JackServerName), status);
}

/// The metadata key for a port's display name, "http://jackaudio.org/metadata/pretty-name"
/// (metadata.h). An `extern const char *` that Swift 6 would treat as shared mutable state.
static inline const char *audiograph_jack_pretty_name_key(void) { return JACK_METADATA_PRETTY_NAME; }

/// The calling thread's kernel id (gettid(2), which Swift's Glibc module does not export): the
/// driver notes its JACK process thread's, to know when that thread has ended.
static inline int audiograph_thread_id(void) { return (int)syscall(SYS_gettid); }

#endif

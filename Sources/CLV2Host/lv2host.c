// CLV2Host: log:log and the worker extension for LV2 instances (see include/lv2host.h).
#include "lv2host.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jack/ringbuffer.h>

// MARK: - log:log

typedef struct {
    atomic_uint seq;                 // even: stable; odd: being written
    atomic_char text[AG_LOG_TEXT];
} ag_log_slot;

struct ag_lv2_log {
    LV2_Log_Log feature;             // first: its handle points back here
    char *plugin_uri;
    uint32_t urids[AG_LOG_TYPES];
    atomic_uint_fast64_t counts[AG_LOG_TYPES];
    ag_log_slot latest[AG_LOG_TYPES];
};

static int ag_log_type_index(const ag_lv2_log *log, LV2_URID type) {
    for (int i = 0; i < AG_LOG_TYPES; i++) {
        if (log->urids[i] == type) return i;
    }
    return AG_LOG_NOTE;
}

static int ag_log_vprintf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, va_list ap) {
    ag_lv2_log *log = (ag_lv2_log *)handle;
    if (log == NULL || fmt == NULL) return 0;
    char text[AG_LOG_TEXT];
    int written = vsnprintf(text, sizeof text, fmt, ap);
    if (written < 0) return written;
    size_t length = strnlen(text, sizeof text - 1);
    while (length > 0 && (text[length - 1] == '\n' || text[length - 1] == '\r')) text[--length] = 0;
    int index = ag_log_type_index(log, type);
    atomic_fetch_add_explicit(&log->counts[index], 1, memory_order_relaxed);
    // The slot: claimed by moving its sequence from even to odd; a writer that loses drops its text.
    ag_log_slot *slot = &log->latest[index];
    unsigned seq = atomic_load_explicit(&slot->seq, memory_order_relaxed);
    if ((seq & 1u) == 0 && atomic_compare_exchange_strong_explicit(&slot->seq, &seq, seq + 1, memory_order_acquire, memory_order_relaxed)) {
        atomic_thread_fence(memory_order_release);
        for (size_t i = 0; i <= length; i++) atomic_store_explicit(&slot->text[i], text[i], memory_order_relaxed);
        atomic_store_explicit(&slot->seq, seq + 2, memory_order_release);
    }
    if (index == AG_LOG_ERROR || index == AG_LOG_WARNING) {
        // One write(2): lines from several threads do not interleave; no stdio lock.
        char line[AG_LOG_TEXT + 512];
        int n = snprintf(line, sizeof line, "lv2 %s: %s: %s\n", log->plugin_uri,
                         index == AG_LOG_ERROR ? "error" : "warning", text);
        if (n > 0) {
            size_t size = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
            ssize_t ignored = write(STDERR_FILENO, line, size);
            (void)ignored;
        }
    }
    return written;
}

static int ag_log_printf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int result = ag_log_vprintf(handle, type, fmt, ap);
    va_end(ap);
    return result;
}

ag_lv2_log *ag_lv2_log_new(const char *plugin_uri, const uint32_t urids[AG_LOG_TYPES]) {
    ag_lv2_log *log = calloc(1, sizeof *log);
    if (log == NULL) return NULL;
    log->plugin_uri = strdup(plugin_uri ? plugin_uri : "");
    if (log->plugin_uri == NULL) { free(log); return NULL; }
    memcpy(log->urids, urids, sizeof log->urids);
    for (int i = 0; i < AG_LOG_TYPES; i++) {
        atomic_init(&log->counts[i], 0);
        atomic_init(&log->latest[i].seq, 0);
        for (int k = 0; k < AG_LOG_TEXT; k++) atomic_init(&log->latest[i].text[k], 0);
    }
    log->feature.handle = log;
    log->feature.printf = ag_log_printf;
    log->feature.vprintf = ag_log_vprintf;
    return log;
}

void ag_lv2_log_free(ag_lv2_log *log) {
    if (log == NULL) return;
    free(log->plugin_uri);
    free(log);
}

LV2_Log_Log *ag_lv2_log_feature(ag_lv2_log *log) { return &log->feature; }

uint64_t ag_lv2_log_count(const ag_lv2_log *log, int type) {
    if (type < 0 || type >= AG_LOG_TYPES) return 0;
    return atomic_load_explicit(&((ag_lv2_log *)log)->counts[type], memory_order_relaxed);
}

int ag_lv2_log_latest(const ag_lv2_log *log, int type, char *out, size_t size) {
    if (type < 0 || type >= AG_LOG_TYPES || out == NULL || size == 0) return 0;
    ag_log_slot *slot = &((ag_lv2_log *)log)->latest[type];
    size_t limit = size < AG_LOG_TEXT ? size : AG_LOG_TEXT;
    for (int attempt = 0; attempt < 64; attempt++) {
        unsigned before = atomic_load_explicit(&slot->seq, memory_order_acquire);
        if (before == 0) return 0;
        if (before & 1u) continue;
        for (size_t i = 0; i < limit; i++) out[i] = atomic_load_explicit(&slot->text[i], memory_order_relaxed);
        out[limit - 1] = 0;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&slot->seq, memory_order_relaxed) == before) return 1;
    }
    out[0] = 0;
    return 0;
}

// MARK: - Worker

struct ag_lv2_worker {
    LV2_Worker_Schedule schedule;    // first: its handle points back here
    jack_ringbuffer_t *requests;     // render → worker: uint32 size, then the bytes
    jack_ringbuffer_t *responses;    // worker → render
    void *work_buffer;               // the worker thread's copy of one request
    void *response_buffer;           // the render thread's copy of one response
    uint32_t capacity;               // largest message (bytes)
    sem_t wake;
    pthread_t thread;
    int started;
    atomic_int exit;
    LV2_Handle instance;
    const LV2_Worker_Interface *interface;
    atomic_uint_fast64_t scheduled, refused, worked, failed, responses_delivered, lost;
};

static LV2_Worker_Status ag_worker_write(jack_ringbuffer_t *ring, uint32_t size, const void *data) {
    if (jack_ringbuffer_write_space(ring) < sizeof size + size) return LV2_WORKER_ERR_NO_SPACE;
    jack_ringbuffer_write(ring, (const char *)&size, sizeof size);
    if (size > 0) jack_ringbuffer_write(ring, (const char *)data, size);
    return LV2_WORKER_SUCCESS;
}

// Render thread (the plugin's run()): copy and wake; no lock, no allocation.
static LV2_Worker_Status ag_worker_schedule(LV2_Worker_Schedule_Handle handle, uint32_t size, const void *data) {
    ag_lv2_worker *worker = (ag_lv2_worker *)handle;
    if (worker == NULL || !worker->started || size > worker->capacity || (size > 0 && data == NULL)) {
        if (worker) atomic_fetch_add_explicit(&worker->refused, 1, memory_order_relaxed);
        return worker && worker->started && size > worker->capacity ? LV2_WORKER_ERR_NO_SPACE : LV2_WORKER_ERR_UNKNOWN;
    }
    LV2_Worker_Status status = ag_worker_write(worker->requests, size, data);
    if (status != LV2_WORKER_SUCCESS) {
        atomic_fetch_add_explicit(&worker->refused, 1, memory_order_relaxed);
        return status;
    }
    atomic_fetch_add_explicit(&worker->scheduled, 1, memory_order_relaxed);
    sem_post(&worker->wake);
    return LV2_WORKER_SUCCESS;
}

// Worker thread (inside work()).
static LV2_Worker_Status ag_worker_respond(LV2_Worker_Respond_Handle handle, uint32_t size, const void *data) {
    ag_lv2_worker *worker = (ag_lv2_worker *)handle;
    if (size > worker->capacity || (size > 0 && data == NULL)) {
        atomic_fetch_add_explicit(&worker->lost, 1, memory_order_relaxed);
        return LV2_WORKER_ERR_NO_SPACE;
    }
    LV2_Worker_Status status = ag_worker_write(worker->responses, size, data);
    if (status != LV2_WORKER_SUCCESS) atomic_fetch_add_explicit(&worker->lost, 1, memory_order_relaxed);
    return status;
}

static void *ag_worker_main(void *argument) {
    ag_lv2_worker *worker = (ag_lv2_worker *)argument;
    for (;;) {
        while (sem_wait(&worker->wake) != 0 && errno == EINTR) {}
        if (atomic_load_explicit(&worker->exit, memory_order_acquire)) break;
        // One post per complete request (both writes made before the post).
        uint32_t size = 0;
        if (jack_ringbuffer_read_space(worker->requests) < sizeof size) continue;
        jack_ringbuffer_read(worker->requests, (char *)&size, sizeof size);
        if (size > 0) jack_ringbuffer_read(worker->requests, (char *)worker->work_buffer, size);
        LV2_Worker_Status status = worker->interface->work(worker->instance, ag_worker_respond, worker, size,
                                                           size > 0 ? worker->work_buffer : NULL);
        atomic_fetch_add_explicit(status == LV2_WORKER_SUCCESS ? &worker->worked : &worker->failed, 1, memory_order_relaxed);
    }
    return NULL;
}

ag_lv2_worker *ag_lv2_worker_new(uint32_t ring_bytes) {
    if (ring_bytes < 64) ring_bytes = 64;
    ag_lv2_worker *worker = calloc(1, sizeof *worker);
    if (worker == NULL) return NULL;
    worker->requests = jack_ringbuffer_create(ring_bytes);
    worker->responses = jack_ringbuffer_create(ring_bytes);
    worker->capacity = ring_bytes - sizeof(uint32_t) - 1;
    worker->work_buffer = malloc(ring_bytes);
    worker->response_buffer = malloc(ring_bytes);
    if (!worker->requests || !worker->responses || !worker->work_buffer || !worker->response_buffer || sem_init(&worker->wake, 0, 0) != 0) {
        if (worker->requests) jack_ringbuffer_free(worker->requests);
        if (worker->responses) jack_ringbuffer_free(worker->responses);
        free(worker->work_buffer);
        free(worker->response_buffer);
        free(worker);
        return NULL;
    }
    // The ring's pages resident: the render thread never takes a page fault on them.
    jack_ringbuffer_mlock(worker->requests);
    jack_ringbuffer_mlock(worker->responses);
    atomic_init(&worker->exit, 0);
    atomic_init(&worker->scheduled, 0); atomic_init(&worker->refused, 0); atomic_init(&worker->worked, 0);
    atomic_init(&worker->failed, 0); atomic_init(&worker->responses_delivered, 0); atomic_init(&worker->lost, 0);
    worker->schedule.handle = worker;
    worker->schedule.schedule_work = ag_worker_schedule;
    return worker;
}

LV2_Worker_Schedule *ag_lv2_worker_schedule(ag_lv2_worker *worker) { return &worker->schedule; }

int ag_lv2_worker_start(ag_lv2_worker *worker, LV2_Handle instance, const LV2_Worker_Interface *interface) {
    if (worker == NULL || interface == NULL || interface->work == NULL || interface->work_response == NULL) return EINVAL;
    if (worker->started) return EBUSY;
    worker->instance = instance;
    worker->interface = interface;
    int error = pthread_create(&worker->thread, NULL, ag_worker_main, worker);
    if (error != 0) return error;
    worker->started = 1;
    return 0;
}

void ag_lv2_worker_free(ag_lv2_worker *worker) {
    if (worker == NULL) return;
    if (worker->started) {
        atomic_store_explicit(&worker->exit, 1, memory_order_release);
        sem_post(&worker->wake);
        pthread_join(worker->thread, NULL);
    }
    sem_destroy(&worker->wake);
    jack_ringbuffer_free(worker->requests);
    jack_ringbuffer_free(worker->responses);
    free(worker->work_buffer);
    free(worker->response_buffer);
    free(worker);
}

void ag_lv2_worker_deliver(ag_lv2_worker *worker) {
    if (worker == NULL || !worker->started) return;
    uint32_t size = 0;
    // Only the responses complete now; each is header then body, written before the next.
    size_t available = jack_ringbuffer_read_space(worker->responses);
    while (available >= sizeof size) {
        jack_ringbuffer_peek(worker->responses, (char *)&size, sizeof size);
        if (available < sizeof size + size) break;
        jack_ringbuffer_read_advance(worker->responses, sizeof size);
        if (size > 0) jack_ringbuffer_read(worker->responses, (char *)worker->response_buffer, size);
        worker->interface->work_response(worker->instance, size, size > 0 ? worker->response_buffer : NULL);
        atomic_fetch_add_explicit(&worker->responses_delivered, 1, memory_order_relaxed);
        available -= sizeof size + size;
    }
}

void ag_lv2_worker_end_run(ag_lv2_worker *worker) {
    if (worker == NULL || !worker->started || worker->interface->end_run == NULL) return;
    worker->interface->end_run(worker->instance);
}

ag_lv2_worker_counts ag_lv2_worker_get_counts(const ag_lv2_worker *w) {
    ag_lv2_worker *worker = (ag_lv2_worker *)w;
    ag_lv2_worker_counts counts = {
        atomic_load_explicit(&worker->scheduled, memory_order_relaxed),
        atomic_load_explicit(&worker->refused, memory_order_relaxed),
        atomic_load_explicit(&worker->worked, memory_order_relaxed),
        atomic_load_explicit(&worker->failed, memory_order_relaxed),
        atomic_load_explicit(&worker->responses_delivered, memory_order_relaxed),
        atomic_load_explicit(&worker->lost, memory_order_relaxed),
    };
    return counts;
}

// CLV2Host: the LV2 host features Swift cannot write itself or should not run on the render
// thread's behalf in Swift — log:log (variadic printf) and the worker extension (a thread and two
// jack_ringbuffer FIFOs). Plain C, no allocation or lock on the render-thread paths.
#ifndef AUDIOGRAPH_LV2HOST_H
#define AUDIOGRAPH_LV2HOST_H

#include <stdint.h>
#include <stddef.h>
#include <lv2/core/lv2.h>
#include <lv2/log/log.h>
#include <lv2/worker/worker.h>
#include <lv2/state/state.h>
#include <lv2/urid/urid.h>

// MARK: - log:log (http://lv2plug.in/ns/ext/log)

/// The message types, as indices: Error, Warning, Note, Trace; anything else counts as Note.
enum { AG_LOG_ERROR = 0, AG_LOG_WARNING = 1, AG_LOG_NOTE = 2, AG_LOG_TRACE = 3, AG_LOG_TYPES = 4 };
/// Longest message kept (bytes, with the terminating NUL); longer ones are cut.
#define AG_LOG_TEXT 256

/// One host's log: what every instance of one plugin is given as log:log.
///
/// printf/vprintf format into a stack buffer (vsnprintf, no allocation for ordinary
/// conversions), count the message per type (atomic), and keep it as the type's latest message
/// (a sequence-locked slot of atomic bytes; a writer that finds the slot being written by
/// another thread drops its text but still counts). Error and Warning are also written to
/// standard error as one `write(2)` call, "lv2 <plugin URI>: error: <message>". Nothing here
/// locks or allocates, so every type may be logged from any thread; the spec allows only Trace
/// from run(), and only Trace stays off standard error (no system call).
typedef struct ag_lv2_log ag_lv2_log;

/// A log for `plugin_uri` (copied); `urids` are the URIDs of log:Error, Warning, Note, Trace.
/// NULL when out of memory. Thread: control thread.
ag_lv2_log *ag_lv2_log_new(const char *plugin_uri, const uint32_t urids[AG_LOG_TYPES]);
/// Frees the log; no instance given it may run or be alive. Thread: control thread.
void ag_lv2_log_free(ag_lv2_log *log);
/// The feature data (an LV2_Log_Log) to pass as http://lv2plug.in/ns/ext/log#log.
LV2_Log_Log *ag_lv2_log_feature(ag_lv2_log *log);
/// Messages of type `type` (AG_LOG_*) logged so far. Thread: any.
uint64_t ag_lv2_log_count(const ag_lv2_log *log, int type);
/// Copies the latest message of `type` into `out` (NUL-terminated, at most `size` bytes);
/// returns 0 when there is none or it was being written for every try. Thread: any.
int ag_lv2_log_latest(const ag_lv2_log *log, int type, char *out, size_t size);

// MARK: - Worker (http://lv2plug.in/ns/ext/worker)

/// One instance's worker: schedule_work (the LV2_Worker_Schedule feature) copies the request
/// into a lock-free ring (jack_ringbuffer) and wakes a worker thread (sem_post); the thread
/// calls the plugin's work(), whose `respond` copies into a second ring; the render thread
/// delivers the responses with work_response() before the next run (ag_lv2_worker_deliver)
/// and calls end_run() after every run (ag_lv2_worker_end_run).
typedef struct ag_lv2_worker ag_lv2_worker;

/// A worker whose rings hold `ring_bytes` each (rounded up to a power of two by libjack); not
/// started. NULL when out of memory. Thread: control thread.
ag_lv2_worker *ag_lv2_worker_new(uint32_t ring_bytes);
/// The feature data (an LV2_Worker_Schedule) to pass as http://lv2plug.in/ns/ext/worker#schedule.
LV2_Worker_Schedule *ag_lv2_worker_schedule(ag_lv2_worker *worker);
/// Starts the worker thread for `instance` and its `interface` (the plugin's
/// LV2_WORKER__interface extension data, which must have `work` and `work_response`).
/// Returns 0, or an errno value (the thread was not made). Thread: control thread.
int ag_lv2_worker_start(ag_lv2_worker *worker, LV2_Handle instance, const LV2_Worker_Interface *interface);
/// Stops and joins the worker thread (a request being worked on finishes first), then frees
/// everything. Thread: control thread, no run() of the instance in progress.
void ag_lv2_worker_free(ag_lv2_worker *worker);
/// Render thread, before run(): every response queued so far to work_response(). Lock-free.
void ag_lv2_worker_deliver(ag_lv2_worker *worker);
/// Render thread, after run(): end_run() when the plugin has one.
void ag_lv2_worker_end_run(ag_lv2_worker *worker);

/// What a worker counted. Thread: any.
typedef struct {
    uint64_t scheduled;   ///< requests schedule_work queued
    uint64_t refused;     ///< requests refused: no room in the ring, or not started (LV2_WORKER_ERR_NO_SPACE / _UNKNOWN)
    uint64_t worked;      ///< work() calls that returned LV2_WORKER_SUCCESS
    uint64_t failed;      ///< work() calls that returned an error
    uint64_t responses;   ///< responses delivered to work_response()
    uint64_t lost;        ///< responses that did not fit the response ring
} ag_lv2_worker_counts;
ag_lv2_worker_counts ag_lv2_worker_get_counts(const ag_lv2_worker *worker);

#endif

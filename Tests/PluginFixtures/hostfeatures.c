// Tests/PluginFixtures: LV2 plugins for the host features log:log, worker and state (see
// hostfeatures.lv2/plugin.ttl). Built by the tests with cc into a temporary bundle.
//   urn:audiograph:test:log     copies in → out; logs a Note and a Warning at instantiate, a Trace each run.
//   urn:audiograph:test:worker  out = in × applied; each run asks the worker for 10^(gain_db/20)
//                               (work() fails below −60 dB), work_response sets applied,
//                               end_run counts into end_runs.
//   urn:audiograph:test:state   out = in × gain; while learn is on, gain = value; gain is the
//                               state (atom:Float), saved non-portable while portable is off.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lv2/core/lv2.h>
#include <lv2/log/log.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>
#include <lv2/state/state.h>
#include <lv2/atom/atom.h>

typedef struct {
    int kind;
    const float *in;
    float *out;
    float *ports[5];
    LV2_Log_Log *log;
    LV2_URID trace, note, warning, atom_float, atom_string, key_gain, key_name;
    LV2_Worker_Schedule *schedule;
    float applied, end_runs, gain;
    double rate;
} Plugin;

static const void *find(const LV2_Feature *const *features, const char *uri) {
    for (int i = 0; features && features[i]; i++) if (!strcmp(features[i]->URI, uri)) return features[i]->data;
    return NULL;
}

static LV2_Handle instantiate(const LV2_Descriptor *d, double rate, const char *path, const LV2_Feature *const *features, int kind) {
    Plugin *p = calloc(1, sizeof *p);
    p->kind = kind;
    p->rate = rate;
    p->applied = 1;
    p->gain = 1;
    LV2_URID_Map *map = (LV2_URID_Map *)find(features, LV2_URID__map);
    p->log = (LV2_Log_Log *)find(features, LV2_LOG__log);
    p->schedule = (LV2_Worker_Schedule *)find(features, LV2_WORKER__schedule);
    if ((kind == 0 && (!p->log || !map)) || (kind == 1 && !p->schedule) || (kind == 2 && !map)) { free(p); return NULL; }
    if (map) {
        p->trace = map->map(map->handle, LV2_LOG__Trace);
        p->note = map->map(map->handle, LV2_LOG__Note);
        p->warning = map->map(map->handle, LV2_LOG__Warning);
        p->atom_float = map->map(map->handle, LV2_ATOM__Float);
        p->atom_string = map->map(map->handle, LV2_ATOM__String);
        p->key_gain = map->map(map->handle, "urn:audiograph:test:state#gain");
        p->key_name = map->map(map->handle, "urn:audiograph:test:state#name");
    }
    if (kind == 0) {
        p->log->printf(p->log->handle, p->note, "instantiated at %.0f Hz\n", rate);
        p->log->printf(p->log->handle, p->warning, "a warning for the test, %d of %d", 1, 1);
    }
    return p;
}
static LV2_Handle instantiate_log(const LV2_Descriptor *d, double r, const char *b, const LV2_Feature *const *f) { return instantiate(d, r, b, f, 0); }
static LV2_Handle instantiate_worker(const LV2_Descriptor *d, double r, const char *b, const LV2_Feature *const *f) { return instantiate(d, r, b, f, 1); }
static LV2_Handle instantiate_state(const LV2_Descriptor *d, double r, const char *b, const LV2_Feature *const *f) { return instantiate(d, r, b, f, 2); }

static void connect_port(LV2_Handle h, uint32_t port, void *data) {
    Plugin *p = h;
    if (port == 0) p->in = data;
    else if (port == 1) p->out = data;
    else if (port < 5) p->ports[port] = data;
}

static void run(LV2_Handle h, uint32_t n) {
    Plugin *p = h;
    float gain = 1;
    switch (p->kind) {
    case 0:
        p->log->printf(p->log->handle, p->trace, "run %u frames", n);
        break;
    case 1: {
        float db = p->ports[2] ? *p->ports[2] : 0;
        p->schedule->schedule_work(p->schedule->handle, sizeof db, &db);
        gain = p->applied;
        if (p->ports[3]) *p->ports[3] = p->applied;
        if (p->ports[4]) *p->ports[4] = p->end_runs;
        break;
    }
    case 2:
        if (p->ports[2] && *p->ports[2] > 0.5f && p->ports[3]) p->gain = *p->ports[3];
        gain = p->gain;
        break;
    }
    for (uint32_t i = 0; i < n; i++) p->out[i] = p->in[i] * gain;
}

static void cleanup(LV2_Handle h) { free(h); }

static LV2_Worker_Status work(LV2_Handle h, LV2_Worker_Respond_Function respond, LV2_Worker_Respond_Handle rh, uint32_t size, const void *data) {
    if (size != sizeof(float)) return LV2_WORKER_ERR_UNKNOWN;
    float db;
    memcpy(&db, data, sizeof db);
    if (db < -60) return LV2_WORKER_ERR_UNKNOWN;
    float linear = powf(10.0f, db / 20.0f);
    return respond(rh, sizeof linear, &linear);
}
static LV2_Worker_Status work_response(LV2_Handle h, uint32_t size, const void *body) {
    Plugin *p = h;
    if (size == sizeof(float)) memcpy(&p->applied, body, sizeof(float));
    return LV2_WORKER_SUCCESS;
}
static LV2_Worker_Status end_run(LV2_Handle h) {
    ((Plugin *)h)->end_runs += 1;
    return LV2_WORKER_SUCCESS;
}
static const LV2_Worker_Interface worker_interface = { work, work_response, end_run };

static LV2_State_Status save(LV2_Handle h, LV2_State_Store_Function store, LV2_State_Handle sh, uint32_t flags, const LV2_Feature *const *features) {
    Plugin *p = h;
    uint32_t f = LV2_STATE_IS_POD | ((p->ports[4] && *p->ports[4] < 0.5f) ? 0 : LV2_STATE_IS_PORTABLE);
    LV2_State_Status status = store(sh, p->key_gain, &p->gain, sizeof p->gain, p->atom_float, f);
    if (status != LV2_STATE_SUCCESS) return status;
    static const char name[] = "learned";
    return store(sh, p->key_name, name, sizeof name, p->atom_string, LV2_STATE_IS_POD | LV2_STATE_IS_PORTABLE);
}
static LV2_State_Status restore(LV2_Handle h, LV2_State_Retrieve_Function retrieve, LV2_State_Handle sh, uint32_t flags, const LV2_Feature *const *features) {
    Plugin *p = h;
    size_t size = 0;
    uint32_t type = 0, f = 0;
    const void *value = retrieve(sh, p->key_gain, &size, &type, &f);
    if (!value) return LV2_STATE_ERR_NO_PROPERTY;
    if (type != p->atom_float || size != sizeof(float)) return LV2_STATE_ERR_BAD_TYPE;
    memcpy(&p->gain, value, sizeof(float));
    return LV2_STATE_SUCCESS;
}
static const LV2_State_Interface state_interface = { save, restore };

static const void *extension_data(const char *uri) {
    if (!strcmp(uri, LV2_WORKER__interface)) return &worker_interface;
    if (!strcmp(uri, LV2_STATE__interface)) return &state_interface;
    return NULL;
}
static const void *no_extension_data(const char *uri) { return NULL; }

static const LV2_Descriptor descriptors[] = {
    { "urn:audiograph:test:log", instantiate_log, connect_port, NULL, run, NULL, cleanup, no_extension_data },
    { "urn:audiograph:test:worker", instantiate_worker, connect_port, NULL, run, NULL, cleanup, extension_data },
    { "urn:audiograph:test:state", instantiate_state, connect_port, NULL, run, NULL, cleanup, extension_data },
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index < 3 ? &descriptors[index] : NULL;
}

/* Tests/PluginFixtures: a LADSPA library of deliberately misbehaving plugins, compiled with cc at
   test time (PluginUnitTests). "nan_writer" writes NaN and +Inf among its samples; "refuses"
   fails to instantiate; "slow" copies its input after spinning ~2 ms per run. */
#include <ladspa.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

typedef struct { LADSPA_Data *in, *out; } Plugin;

static LADSPA_Handle make(const LADSPA_Descriptor *d, unsigned long rate) { (void)d; (void)rate; return calloc(1, sizeof(Plugin)); }
static LADSPA_Handle refuse(const LADSPA_Descriptor *d, unsigned long rate) { (void)d; (void)rate; return NULL; }
static void connect(LADSPA_Handle h, unsigned long port, LADSPA_Data *data) {
    Plugin *p = h;
    if (port == 0) p->in = data; else p->out = data;
}
static void nan_run(LADSPA_Handle h, unsigned long n) {
    Plugin *p = h;
    for (unsigned long i = 0; i < n; i++) p->out[i] = (i % 4 == 1) ? NAN : (i % 4 == 3) ? INFINITY : p->in[i];
}
static void slow_run(LADSPA_Handle h, unsigned long n) {
    Plugin *p = h;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t); while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000L);
    for (unsigned long i = 0; i < n; i++) p->out[i] = p->in[i];
}
static void cleanup(LADSPA_Handle h) { free(h); }

static const LADSPA_PortDescriptor kinds[2] = { LADSPA_PORT_INPUT | LADSPA_PORT_AUDIO, LADSPA_PORT_OUTPUT | LADSPA_PORT_AUDIO };
static const char *const names[2] = { "Input", "Output" };
static const LADSPA_PortRangeHint hints[2] = { {0, 0, 0}, {0, 0, 0} };

#define PLUGIN(ID, LABEL, INST, RUN) { ID, LABEL, LADSPA_PROPERTY_HARD_RT_CAPABLE, LABEL, "AudioGraph tests", "None", 2, kinds, \
    names, hints, NULL, INST, connect, NULL, RUN, NULL, NULL, NULL, cleanup }
static const LADSPA_Descriptor plugins[3] = {
    PLUGIN(990001, "nan_writer", make, nan_run),
    PLUGIN(990002, "refuses", refuse, nan_run),
    PLUGIN(990003, "slow", make, slow_run),
};

const LADSPA_Descriptor *ladspa_descriptor(unsigned long index) { return index < 3 ? &plugins[index] : NULL; }

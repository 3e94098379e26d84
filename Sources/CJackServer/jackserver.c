// See include/jackserver.h.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jack/control.h>
#include "jackserver.h"



typedef jackctl_server_t *(*ag_create2_t)(bool (*)(const char *), void (*)(const char *), void (*)(void));
typedef void (*ag_destroy_t)(jackctl_server_t *);
typedef bool (*ag_open_t)(jackctl_server_t *, jackctl_driver_t *);
typedef bool (*ag_server_t)(jackctl_server_t *);
typedef const JSList *(*ag_server_list_t)(jackctl_server_t *);
typedef const JSList *(*ag_driver_list_t)(jackctl_driver_t *);
typedef const char *(*ag_driver_name_t)(jackctl_driver_t *);
typedef const char *(*ag_parameter_name_t)(jackctl_parameter_t *);
typedef bool (*ag_set_value_t)(jackctl_parameter_t *, const union jackctl_parameter_value *);

// The server's last error message, for the reason of a failed open/start (jack2 reports the
// cause, e.g. "too many servers already active", only through its error function).
static char audiograph_jackserver_last_error[256];
static void audiograph_jackserver_silent(const char *message) {
    snprintf(audiograph_jackserver_last_error, sizeof audiograph_jackserver_last_error, "%s", message);
}
static void audiograph_jackserver_print(const char *message) {
    audiograph_jackserver_silent(message);
    fprintf(stderr, "jack: %s\n", message);
}

static jackctl_parameter_t *audiograph_jackserver_find(const JSList *list, const char *name,
                                                              const char *(*get_name)(jackctl_parameter_t *)) {
    for (; list != NULL; list = list->next) {
        if (strcmp(get_name((jackctl_parameter_t *)list->data), name) == 0) return (jackctl_parameter_t *)list->data;
    }
    return NULL;
}

/// Creates, opens and starts a server named `name` with the driver `driver` ("dummy", "alsa", …).
/// `rate` and `period` are set on the driver when non-zero (drivers with "rate"/"period"
/// parameters); `realtime` sets the server's "realtime" parameter. On failure returns false and
/// writes a one-line reason into `error` (`error_size` bytes); nothing stays loaded or running.
/// `handle` must be zeroed by the caller. Thread: a control thread; loads a library, allocates.
bool audiograph_jackserver_start(audiograph_jackserver *handle, const char *name, const char *driver,
                                               uint32_t rate, uint32_t period, bool realtime,
                                               char *error, size_t error_size) {
    void *library = dlopen("libjackserver.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (library == NULL) {
        snprintf(error, error_size, "cannot load libjackserver.so.0 (install jackd2): %s", dlerror());
        return false;
    }
#define AG_SYM(var, type, symbol) type var = (type)dlsym(library, symbol); \
    if (var == NULL) { snprintf(error, error_size, "libjackserver lacks %s", symbol); dlclose(library); return false; }
    AG_SYM(create2, ag_create2_t, "jackctl_server_create2")
    AG_SYM(destroy, ag_destroy_t, "jackctl_server_destroy")
    AG_SYM(open_server, ag_open_t, "jackctl_server_open")
    AG_SYM(start, ag_server_t, "jackctl_server_start")
    AG_SYM(stop, ag_server_t, "jackctl_server_stop")
    AG_SYM(close_server, ag_server_t, "jackctl_server_close")
    AG_SYM(get_drivers, ag_server_list_t, "jackctl_server_get_drivers_list")
    AG_SYM(server_parameters, ag_server_list_t, "jackctl_server_get_parameters")
    AG_SYM(driver_parameters, ag_driver_list_t, "jackctl_driver_get_parameters")
    AG_SYM(get_driver_name, ag_driver_name_t, "jackctl_driver_get_name")
    AG_SYM(parameter_name, ag_parameter_name_t, "jackctl_parameter_get_name")
    AG_SYM(set_value, ag_set_value_t, "jackctl_parameter_set_value")
#undef AG_SYM
    // The server's messages go through libjackserver's own copy of jack_error/jack_info (it is
    // loaded apart from libjack): silenced like libjack's unless AUDIOGRAPH_JACK_VERBOSE=1.
    typedef void (*ag_set_function_t)(void (*)(const char *));
    ag_set_function_t set_error = (ag_set_function_t)dlsym(library, "jack_set_error_function");
    ag_set_function_t set_info = (ag_set_function_t)dlsym(library, "jack_set_info_function");
    const char *verbose = getenv("AUDIOGRAPH_JACK_VERBOSE");
    void (*printer)(const char *) = (verbose != NULL && strcmp(verbose, "1") == 0) ? audiograph_jackserver_print : audiograph_jackserver_silent;
    if (set_error != NULL) set_error(printer);
    if (set_info != NULL) set_info(printer);
    audiograph_jackserver_last_error[0] = 0;
    jackctl_server_t *server = create2(NULL, NULL, NULL);
    if (server == NULL) { snprintf(error, error_size, "jackctl_server_create2 failed"); dlclose(library); return false; }
    union jackctl_parameter_value value;
    memset(&value, 0, sizeof value);
    strncpy(value.str, name, JACK_PARAM_STRING_MAX);
    jackctl_parameter_t *p = audiograph_jackserver_find(server_parameters(server), "name", parameter_name);
    if (p != NULL) set_value(p, &value);
    memset(&value, 0, sizeof value);
    value.b = realtime;
    p = audiograph_jackserver_find(server_parameters(server), "realtime", parameter_name);
    if (p != NULL) set_value(p, &value);
    jackctl_driver_t *chosen = NULL;
    size_t used = 0;
    char known[256] = "";
    for (const JSList *l = get_drivers(server); l != NULL; l = l->next) {
        const char *n = get_driver_name((jackctl_driver_t *)l->data);
        if (strcmp(n, driver) == 0) chosen = (jackctl_driver_t *)l->data;
        if (used + strlen(n) + 2 < sizeof known) { used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", used ? " " : "", n); }
    }
    if (chosen == NULL) {
        snprintf(error, error_size, "libjackserver has no driver '%s' (it has: %s)", driver, known);
        destroy(server); dlclose(library); return false;
    }
    if (rate != 0 && (p = audiograph_jackserver_find(driver_parameters(chosen), "rate", parameter_name)) != NULL) {
        memset(&value, 0, sizeof value); value.ui = rate; set_value(p, &value);
    }
    if (period != 0 && (p = audiograph_jackserver_find(driver_parameters(chosen), "period", parameter_name)) != NULL) {
        memset(&value, 0, sizeof value); value.ui = period; set_value(p, &value);
    }
    if (!open_server(server, chosen)) {
        snprintf(error, error_size, "the JACK server '%s' could not open driver '%s': %s", name, driver,
                 audiograph_jackserver_last_error[0] ? audiograph_jackserver_last_error : "no reason given (a server of that name may run, or the device is busy)");
        destroy(server); dlclose(library); return false;
    }
    if (!start(server)) {
        snprintf(error, error_size, "the JACK server '%s' could not start: %s", name,
                 audiograph_jackserver_last_error[0] ? audiograph_jackserver_last_error : "no reason given");
        close_server(server); destroy(server); dlclose(library); return false;
    }
    handle->library = library;
    handle->server = server;
    handle->started = true;
    handle->opened = true;
    handle->destroy = (void *)destroy;
    handle->stop = (void *)stop;
    handle->close = (void *)close_server;
    return true;
}

/// Stops, closes and destroys a server started by audiograph_jackserver_start; its clients are
/// told it shut down. Safe to call twice. Thread: a control thread, never a JACK callback.
void audiograph_jackserver_stop(audiograph_jackserver *handle) {
    if (handle->server == NULL) return;
    if (handle->started) ((ag_server_t)handle->stop)((jackctl_server_t *)handle->server);
    if (handle->opened) ((ag_server_t)handle->close)((jackctl_server_t *)handle->server);
    ((ag_destroy_t)handle->destroy)((jackctl_server_t *)handle->server);
    handle->server = NULL;
    handle->started = false;
    handle->opened = false;
    // libjackserver stays loaded: its threads are gone, but unloading C++ code with static
    // destructors that may still be registered (atexit) is not worth the risk.
}

// ladspa.h from Debian's ladspa-sdk (LGPL header, interface only; nothing of the SDK is linked)
// and dlopen/dlsym to load plugin libraries.
#include <ladspa.h>
#include <dlfcn.h>

// CSampleRate: libsamplerate's header, for conversion across rates.
#ifndef AUDIOGRAPH_CSAMPLERATE_SHIM_H
#define AUDIOGRAPH_CSAMPLERATE_SHIM_H
#include <samplerate.h>
#endif

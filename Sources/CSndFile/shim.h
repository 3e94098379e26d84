#ifndef AUDIOGRAPH_CSNDFILE_SHIM_H
#define AUDIOGRAPH_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif

// CSndFile: libsndfile's header, for the recorder and the file player.
#ifndef AUDIOGRAPH_CSNDFILE_SHIM_H
#define AUDIOGRAPH_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif

// CSoundTouch: a C face on SoundTouch's C++ class (soundtouch::SoundTouch, WSOLA time-stretch and
// rate transposer), so Swift can call it without C++ interop. Samples are 32-bit float,
// interleaved ([frame][channel]). Create, configure and destroy on a control thread; see each
// call for whether it may run on the render thread.
#ifndef CSOUNDTOUCH_H
#define CSOUNDTOUCH_H

#ifdef __cplusplus
extern "C" {
#endif

/// An opaque SoundTouch instance.
typedef struct csoundtouch csoundtouch;

/// Creates an instance for `channels` (1…16) interleaved channels at `sample_rate` Hz; NULL if
/// SoundTouch refuses them or memory runs out. Allocates.
csoundtouch *csoundtouch_create(unsigned channels, unsigned sample_rate);
/// Frees an instance (NULL is ignored).
void csoundtouch_destroy(csoundtouch *st);
/// Playback rate change with pitch following (SoundTouch setRate), 1 = unchanged.
void csoundtouch_set_rate(csoundtouch *st, double rate);
/// Tempo change without pitch change (SoundTouch setTempo), 1 = unchanged.
void csoundtouch_set_tempo(csoundtouch *st, double tempo);
/// Pitch shift in semitones (fractions allowed; SoundTouch setPitchSemiTones(double)).
void csoundtouch_set_pitch_semitones(csoundtouch *st, double semitones);
/// SoundTouch setSetting (SETTING_* ids from SoundTouch.h); returns 1 on success.
int csoundtouch_set_setting(csoundtouch *st, int setting, int value);
/// SoundTouch getSetting.
int csoundtouch_get_setting(const csoundtouch *st, int setting);
/// Appends `frames` interleaved frames.
void csoundtouch_put_samples(csoundtouch *st, const float *samples, unsigned frames);
/// Moves up to `max_frames` processed frames into `output` (interleaved); returns how many.
unsigned csoundtouch_receive_samples(csoundtouch *st, float *output, unsigned max_frames);
/// Processed frames ready to receive.
unsigned csoundtouch_num_samples(const csoundtouch *st);
/// Frames put but not yet processed.
unsigned csoundtouch_num_unprocessed_samples(const csoundtouch *st);
/// Pads the input with silence so every frame put comes out (end of stream).
void csoundtouch_flush(csoundtouch *st);
/// Drops everything buffered (history included).
void csoundtouch_clear(csoundtouch *st);

/// SETTING_OVERLAP_MS, SETTING_INITIAL_LATENCY and SETTING_NOMINAL_* as in SoundTouch.h.
enum {
    CSOUNDTOUCH_SETTING_USE_AA_FILTER = 0,
    CSOUNDTOUCH_SETTING_USE_QUICKSEEK = 2,
    CSOUNDTOUCH_SETTING_SEQUENCE_MS = 3,
    CSOUNDTOUCH_SETTING_SEEKWINDOW_MS = 4,
    CSOUNDTOUCH_SETTING_OVERLAP_MS = 5,
    CSOUNDTOUCH_SETTING_NOMINAL_INPUT_SEQUENCE = 6,
    CSOUNDTOUCH_SETTING_NOMINAL_OUTPUT_SEQUENCE = 7,
    CSOUNDTOUCH_SETTING_INITIAL_LATENCY = 8
};

#ifdef __cplusplus
}
#endif
#endif

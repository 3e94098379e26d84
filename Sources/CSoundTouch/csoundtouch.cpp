// CSoundTouch: each C function forwards to one soundtouch::SoundTouch member (SoundTouch 2.3,
// float samples). No exceptions cross the boundary: creation catches them and returns NULL.
#include "csoundtouch.h"
#include <SoundTouch.h>
#include <new>

struct csoundtouch {
    soundtouch::SoundTouch st;
};

extern "C" {

csoundtouch *csoundtouch_create(unsigned channels, unsigned sample_rate) {
    try {
        csoundtouch *s = new csoundtouch();
        s->st.setChannels(channels);
        s->st.setSampleRate(sample_rate);
        return s;
    } catch (...) {
        return nullptr;
    }
}

void csoundtouch_destroy(csoundtouch *st) { delete st; }
void csoundtouch_set_rate(csoundtouch *st, double rate) { st->st.setRate(rate); }
void csoundtouch_set_tempo(csoundtouch *st, double tempo) { st->st.setTempo(tempo); }
void csoundtouch_set_pitch_semitones(csoundtouch *st, double semitones) { st->st.setPitchSemiTones(semitones); }
int csoundtouch_set_setting(csoundtouch *st, int setting, int value) { return st->st.setSetting(setting, value) ? 1 : 0; }
int csoundtouch_get_setting(const csoundtouch *st, int setting) {
    return const_cast<soundtouch::SoundTouch &>(st->st).getSetting(setting);
}
void csoundtouch_put_samples(csoundtouch *st, const float *samples, unsigned frames) { st->st.putSamples(samples, frames); }
unsigned csoundtouch_receive_samples(csoundtouch *st, float *output, unsigned max_frames) {
    return st->st.receiveSamples(output, max_frames);
}
unsigned csoundtouch_num_samples(const csoundtouch *st) { return st->st.numSamples(); }
unsigned csoundtouch_num_unprocessed_samples(const csoundtouch *st) { return st->st.numUnprocessedSamples(); }
void csoundtouch_flush(csoundtouch *st) { st->st.flush(); }
void csoundtouch_clear(csoundtouch *st) { st->st.clear(); }

}

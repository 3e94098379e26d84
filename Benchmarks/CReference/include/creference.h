// Benchmark: the plain-C reference's entry points (see creference.c).
#ifndef AUDIOGRAPH_CREFERENCE_H
#define AUDIOGRAPH_CREFERENCE_H

/// The benchmark's plain-C reference: the standard graph's arithmetic (low-pass biquad, two-input
/// sum, gain) as tight loops over caller-owned buffers, with no graph around it.

/// RBJ Audio EQ Cookbook low-pass coefficients, computed in double and rounded to float, exactly
/// as LowPassFilterUnit does: out = {b0, b1, b2, a1, a2}.
void creference_lowpass_coefficients(double cutoff, double resonance_db, double sample_rate, float out[5]);

/// One slice of the standard graph for `channels` channels of `frames` frames:
///   tmp = biquad(in[c])   (direct form I; state[c] = {x1, x2, y1, y2}; channels in pairs,
///                          two recurrences per loop iteration, as the engine's filter does)
///   out[c] = (tmp + silent[c]) * gain
/// `in`, `out`, `silent` are [channel] arrays of frame buffers; `tmp` holds `frames` floats.
void creference_render(const float *const *in, float *const *out, const float *const *silent,
                       float *tmp, int channels, int frames,
                       const float coefficients[5], float *state, float gain);

#endif

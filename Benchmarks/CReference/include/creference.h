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

/// The filters track's kernels (biquad family, N-band EQ, delay, sample delay), the same
/// arithmetic in the same order as the engine's, so the outputs are bit-identical.

/// An RBJ Audio EQ Cookbook design computed exactly as BiquadCoefficients64.design does (double,
/// normalized by a0): response 0 low-pass, 1 high-pass, 2 band-pass, 3 notch, 4 all-pass,
/// 5 peaking, 6 low shelf, 7 high shelf; `width` is Q, or octaves when `width_is_octaves`.
/// out = {b0, b1, b2, a1, a2}.
void creference_biquad_design(int response, double frequency, double width, int width_is_octaves,
                              double gain_db, double sample_rate, double out[5]);

/// One slice of a biquad for `channels` channels: direct form I with the recursion in double,
/// float in and out (outputs below 1e-30 in magnitude written as 0), channels in pairs;
/// state[4c…4c+3] = {x1, x2, y1, y2} of channel c, set below 1e-30 to 0 after the slice.
/// `in` may equal `out` (in place).
void creference_biquad64(const float *const *in, float *const *out, int channels, int frames,
                         const double c[5], double *state);

/// One slice of a feedback delay per channel (DelayLine.feedback at a steady delay): d = line
/// read `delay` frames back (linear interpolation), line[w] = x + feedback·LP(d) (below 1e-30: 0),
/// out = dry·x + wet·d. lines: `channels` rings of mask + 1 floats; *write advances by `frames`;
/// lp_state[4c…] the loop low-pass's {x1, x2, y1, y2} in double.
void creference_feedback_delay(const float *const *in, float *const *out, int channels, int frames,
                               float *lines, int mask, int *write, double delay, float feedback,
                               float dry, float wet, const double lp[5], double *lp_state);

/// One slice of a whole-frame delay per channel: the slice copied into the ring, then the
/// frames `delay` back copied out (two memcpy each, around the wrap).
void creference_sample_delay(const float *const *in, float *const *out, int channels, int frames,
                             float *lines, int mask, int *write, int delay);

#endif

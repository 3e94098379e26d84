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

/// The convolution reverb's arithmetic (ConvolutionReverbUnit's PartitionedConvolution at 100 %
/// wet, 0 dB): uniformly partitioned overlap-save with a direct-form head of `block` frames,
/// KissFFT for the 2·block-point transforms. Channel c is convolved with response channel
/// c mod response_channels. The same operations in the same order as the engine's, so the
/// outputs are bit-identical: the head as 16 lanes (two 8-lane accumulators) summed lane by
/// lane, then in order from −0; the partitions' complex multiply-adds newest input first.
typedef struct creference_convolver creference_convolver;

/// A convolver for `response` (`[response_channels][frames]`) on `channels` channels; NULL if
/// memory runs out. `block`: a power of two ≥ 16.
creference_convolver *creference_convolver_new(const float *const *response, int response_channels, int frames,
                                               int channels, int block);
/// Convolves `frames` frames of `in` into `out` (`[channel]` arrays), any count.
void creference_convolver_process(creference_convolver *convolver, const float *const *in, float *const *out, int frames);
void creference_convolver_free(creference_convolver *convolver);

#endif

// Benchmark: the plain-C reference's entry points (see creference.c).
#ifndef AUDIOGRAPH_CREFERENCE_H
#define AUDIOGRAPH_CREFERENCE_H

/// The benchmark's plain-C reference: the standard graph's arithmetic (low-pass biquad, two-input
/// sum, gain) as tight loops over caller-owned buffers, with no graph around it.

/// Turns on the CPU's flush-to-zero and denormals-are-zero modes for the calling thread (x86
/// MXCSR FTZ | DAZ; nothing elsewhere) and returns the previous mode for
/// creference_denormals_restore. graphbench times every C reference in this mode: the engine
/// keeps its recursive filters out of subnormal numbers by flushing their memory, and without
/// the mode the lanes a vectorised reference loop leaves unused decay into subnormals after
/// about 900 frames and send every vector operation down the slow path (the reference then ran
/// 3–4× slower per frame at 1024-frame slices than at 256). Results of normal-range arithmetic
/// are unchanged (the checksums show it).
unsigned creference_denormals_flush(void);

/// Restores the mode creference_denormals_flush returned.
void creference_denormals_restore(unsigned previous);

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

/// The dynamics processor's arithmetic (DynamicsKernel with its parameters steady): per frame,
/// the largest |in[c][f]| drives a smooth branching peak detector (attack/release coefficients);
/// a level outside [low, high] (linear) goes through the soft-knee curve in dB (logf, expf), one
/// inside gets `makeup`. `curve` = {threshold, ratio, expansion threshold, expansion ratio, knee,
/// makeup dB}. `*envelope` carries the detector across calls. `gains` holds `frames` floats.
void creference_dynamics(const float *const *in, float *const *out, int channels, int frames,
                         float *envelope, float attack, float release, float low, float high,
                         float makeup, const float curve[6], float *gains);

/// The look-ahead limiter's arithmetic (LookAheadLimiter.process with steady parameters):
/// pre-gain, a delay line of `lookahead` frames, a sliding minimum (monotonic deque) and a
/// moving average over `attack` frames of the gain each frame needs, the release smoother, the
/// cap. `state` is creference_limiter_size(channels, capacity) bytes from creference_limiter_init.
unsigned long creference_limiter_size(int channels, int capacity);
void creference_limiter_init(void *state, int channels, int capacity, int lookahead, int attack);
void creference_limiter(void *state, const float *const *in, float *const *out, int frames,
                        float pregain, float ceiling, float release);

/// A wavetable oscillator (OscillatorKernel with a steady frequency): out[f] = the table at the
/// phase, linearly interpolated (4096 points + a guard point); phase += increment, wrapped.
void creference_wavetable(float *out, int frames, const float *table, double *phase, double increment);

/// PCG32 (XSH RR, increment 109) uniform samples through Paul Kellet's pink filter, as NoiseKernel:
/// `rng` the generator's state, `pink` the filter's 7 values.
void creference_pink(float *out, int frames, unsigned long long *rng, float pink[7]);

/// The constant source: out[f] = value.
void creference_fill(float *out, int frames, float value);
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

/// A LADSPA plugin called directly: `channels` instances of the mono plugin `label` from the
/// library `path` at `rate` Hz, every control input at `control` (ladspa.h, dlopen); NULL when
/// it cannot be loaded or made. The hosting benchmark's reference.
typedef struct creference_ladspa creference_ladspa;
creference_ladspa *creference_ladspa_new(const char *path, const char *label, unsigned long rate, int channels, float control);
/// One slice: per channel, connect_port for the input and output, then run.
void creference_ladspa_process(creference_ladspa *plugin, const float *const *in, float *const *out, int frames);
void creference_ladspa_free(creference_ladspa *plugin);

#endif

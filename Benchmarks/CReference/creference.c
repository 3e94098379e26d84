// Benchmark: the plain-C reference — the standard graph's arithmetic and each catalogue kernel's, as tight loops, for graphbench's ratios.
#include "creference.h"
#include <math.h>
#include <string.h>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
unsigned creference_denormals_flush(void) {
    unsigned previous = _mm_getcsr();
    _mm_setcsr(previous | 0x8040);  /* FTZ (bit 15) | DAZ (bit 6) */
    return previous;
}
void creference_denormals_restore(unsigned previous) { _mm_setcsr(previous); }
#else
unsigned creference_denormals_flush(void) { return 0; }
void creference_denormals_restore(unsigned previous) { (void)previous; }
#endif

void creference_lowpass_coefficients(double cutoff, double resonance_db, double sample_rate, float out[5]) {
    double f = cutoff < 10 ? 10 : cutoff;
    if (f > 0.49 * sample_rate) f = 0.49 * sample_rate;
    double q = pow(10, resonance_db / 20) * 0.7071067811865476;
    double w0 = 2 * M_PI * f / sample_rate;
    double cosw = cos(w0), sinw = sin(w0);
    double alpha = sinw / (2 * q);
    double a0 = 1 + alpha;
    out[0] = (float)((1 - cosw) / 2 / a0);
    out[1] = (float)((1 - cosw) / a0);
    out[2] = out[0];
    out[3] = (float)(-2 * cosw / a0);
    out[4] = (float)((1 - alpha) / a0);
}

void creference_render(const float *const *in, float *const *out, const float *const *silent,
                       float *tmp, int channels, int frames,
                       const float c[5], float *state, float gain) {
    const float b0 = c[0], b1 = c[1], b2 = c[2], a1 = c[3], a2 = c[4];
    int ch = 0;
    /* Channels in pairs, as the engine does: two independent recurrences per iteration. */
    for (; ch + 1 < channels; ch += 2) {
        float *za = state + 4 * ch, *zb = za + 4;
        float ax1 = za[0], ax2 = za[1], ay1 = za[2], ay2 = za[3];
        float bx1 = zb[0], bx2 = zb[1], by1 = zb[2], by2 = zb[3];
        const float *sa = in[ch], *sb = in[ch + 1];
        const float *zeroa = silent[ch], *zerob = silent[ch + 1];
        float *da = out[ch], *db = out[ch + 1];
        for (int f = 0; f < frames; f++) {
            float xa = sa[f], xb = sb[f];
            float ya = b0 * xa + b1 * ax1 + b2 * ax2 - a1 * ay1 - a2 * ay2;
            float yb = b0 * xb + b1 * bx1 + b2 * bx2 - a1 * by1 - a2 * by2;
            ax2 = ax1; ax1 = xa; ay2 = ay1; ay1 = ya;
            bx2 = bx1; bx1 = xb; by2 = by1; by1 = yb;
            tmp[f] = ya;
            db[f] = yb;
        }
        for (int f = 0; f < frames; f++) da[f] = (tmp[f] + zeroa[f]) * gain;
        for (int f = 0; f < frames; f++) db[f] = (db[f] + zerob[f]) * gain;
        za[0] = ax1; za[1] = ax2; za[2] = ay1; za[3] = ay2;
        zb[0] = bx1; zb[1] = bx2; zb[2] = by1; zb[3] = by2;
    }
    for (; ch < channels; ch++) {
        float *z = state + 4 * ch;
        float x1 = z[0], x2 = z[1], y1 = z[2], y2 = z[3];
        const float *src = in[ch];
        for (int f = 0; f < frames; f++) {
            float x = src[f];
            float y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
            x2 = x1; x1 = x;
            y2 = y1; y1 = y;
            tmp[f] = y;
        }
        z[0] = x1; z[1] = x2; z[2] = y1; z[3] = y2;
        const float *zero = silent[ch];
        float *dst = out[ch];
        for (int f = 0; f < frames; f++) dst[f] = (tmp[f] + zero[f]) * gain;
    }
}

/* The convolution reverb's arithmetic, as PartitionedConvolution (Sources/AudioGraph/DSP) does it. */
#include <kissfft/kiss_fftr.h>
#include <stdlib.h>
#include <string.h>

struct creference_convolver {
    int block, bins, channels, response_channels, slots, position, newest;
    kiss_fftr_cfg forward, inverse;
    float *head;            /* [response channel][block], reversed */
    kiss_fft_cpx *spectra;  /* [response channel][slots][bins], scaled by 1/(2·block) */
    float *history;         /* [channel][2·block] */
    kiss_fft_cpx *delay;    /* [channel][slots][bins] */
    float *tail;            /* [channel][block] */
    kiss_fft_cpx *acc;      /* [bins] */
    float *scratch;         /* [2·block] */
};

creference_convolver *creference_convolver_new(const float *const *response, int response_channels, int frames,
                                               int channels, int block) {
    creference_convolver *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    int b = block, bins = b + 1, partitions = (frames + b - 1) / b, slots = partitions - 1;
    c->block = b; c->bins = bins; c->channels = channels; c->response_channels = response_channels; c->slots = slots;
    c->forward = kiss_fftr_alloc(2 * b, 0, NULL, NULL);
    c->inverse = kiss_fftr_alloc(2 * b, 1, NULL, NULL);
    c->head = calloc((size_t)response_channels * b, sizeof(float));
    c->spectra = calloc((size_t)response_channels * (slots > 0 ? slots : 1) * bins, sizeof(kiss_fft_cpx));
    c->history = calloc((size_t)channels * 2 * b, sizeof(float));
    c->delay = calloc((size_t)channels * (slots > 0 ? slots : 1) * bins, sizeof(kiss_fft_cpx));
    c->tail = calloc((size_t)channels * b, sizeof(float));
    c->acc = calloc((size_t)bins, sizeof(kiss_fft_cpx));
    c->scratch = calloc((size_t)2 * b, sizeof(float));
    if (!c->forward || !c->inverse || !c->head || !c->spectra || !c->history || !c->delay || !c->tail || !c->acc || !c->scratch) {
        creference_convolver_free(c);
        return NULL;
    }
    const float scale = 1.0f / (float)(2 * b);
    for (int k = 0; k < response_channels; k++) {
        const float *h = response[k];
        for (int i = 0; i < b && i < frames; i++) c->head[k * b + (b - 1 - i)] = h[i];
        for (int part = 0; part < slots; part++) {
            memset(c->scratch, 0, sizeof(float) * 2 * b);
            int start = (part + 1) * b;
            for (int i = 0; i < b && start + i < frames; i++) c->scratch[i] = h[start + i] * scale;
            kiss_fftr(c->forward, c->scratch, c->spectra + ((size_t)k * slots + part) * bins);
        }
    }
    return c;
}

void creference_convolver_free(creference_convolver *c) {
    if (!c) return;
    free(c->forward); free(c->inverse);
    free(c->head); free(c->spectra); free(c->history); free(c->delay); free(c->tail); free(c->acc); free(c->scratch);
    free(c);
}

/* The next block's tail: the last `block` samples of IFFT(Σ_k X[newest − k] · H_k). */
static void convolver_tail(creference_convolver *c) {
    const int b = c->block, bins = c->bins, slots = c->slots;
    for (int ch = 0; ch < c->channels; ch++) {
        memset(c->acc, 0, sizeof(kiss_fft_cpx) * bins);
        const float *x0 = (const float *)(c->delay + (size_t)ch * slots * bins);
        const float *h0 = (const float *)(c->spectra + (size_t)(ch % c->response_channels) * slots * bins);
        float *a = (float *)c->acc;
        int slot = c->newest;
        for (int k = 0; k < slots; k++) {
            const float *x = x0 + 2 * (size_t)slot * bins, *h = h0 + 2 * (size_t)k * bins;
            for (int i = 0; i < bins; i++) {
                float xr = x[2 * i], xi = x[2 * i + 1], hr = h[2 * i], hi = h[2 * i + 1];
                a[2 * i] += xr * hr - xi * hi;
                a[2 * i + 1] += xr * hi + xi * hr;
            }
            slot = slot == 0 ? slots - 1 : slot - 1;
        }
        kiss_fftri(c->inverse, c->acc, c->scratch);
        memcpy(c->tail + (size_t)ch * b, c->scratch + b, sizeof(float) * b);
    }
}

void creference_convolver_process(creference_convolver *c, const float *const *in, float *const *out, int frames) {
    const int b = c->block;
    int done = 0;
    while (done < frames) {
        int t = c->position, n = frames - done < b - t ? frames - done : b - t;
        for (int ch = 0; ch < c->channels; ch++)
            memcpy(c->history + (size_t)ch * 2 * b + b + t, in[ch] + done, sizeof(float) * n);
        for (int ch = 0; ch < c->channels; ch++) {
            float *o = out[ch] + done;
            memcpy(o, c->tail + (size_t)ch * b + t, sizeof(float) * n);
            const float *taps = c->head + (size_t)(ch % c->response_channels) * b;
            const float *hist = c->history + (size_t)ch * 2 * b;
            for (int j = 0; j < n; j++) {
                const float *w = hist + t + j + 1;
                float lanes[16] = {0};
                for (int i = 0; i < b; i += 16)
                    for (int l = 0; l < 16; l++) lanes[l] += w[i + l] * taps[i + l];
                float sum = -0.0f;
                for (int l = 0; l < 8; l++) sum += lanes[l] + lanes[l + 8];
                o[j] += sum;
            }
        }
        if (t + n == b) {
            if (c->slots > 0) {
                c->newest = c->newest + 1 == c->slots ? 0 : c->newest + 1;
                for (int ch = 0; ch < c->channels; ch++)
                    kiss_fftr(c->forward, c->history + (size_t)ch * 2 * b, c->delay + ((size_t)ch * c->slots + c->newest) * c->bins);
                convolver_tail(c);
            }
            for (int ch = 0; ch < c->channels; ch++) {
                float *h = c->history + (size_t)ch * 2 * b;
                memcpy(h, h + b, sizeof(float) * b);
            }
            c->position = 0;
        } else {
            c->position = t + n;
        }
        done += n;
    }
}

/* The catalogue's dynamics and generator kernels, each the same arithmetic as its Swift kernel
   in the same order (see the header), so checksums can be compared. */

static float curve_gain(const float c[6], float x) {
    const float t = c[0], ratio = c[1], e = c[2], re = c[3], w = c[4], half = c[4] / 2;
    float g = 0;
    float over_t = x - t;
    if (over_t > half) {
        g = (1 / ratio - 1) * over_t;
    } else if (over_t >= -half) {
        float d = over_t + half;
        g = (1 / ratio - 1) * d * d / (2 * w);
    }
    float over_e = x - e;
    if (over_e < -half) {
        g += (re - 1) * over_e;
    } else if (over_e <= half) {
        float d = over_e - half;
        g -= (re - 1) * d * d / (2 * w);
    }
    return g;
}

void creference_dynamics(const float *const *in, float *const *out, int channels, int frames,
                         float *envelope, float attack, float release, float low, float high,
                         float makeup, const float curve[6], float *gains) {
    const float db_per_neper = 8.685889638065035f;
    float env = *envelope;
    for (int start = 0; start < frames; start += 64) {
        int count = frames - start < 64 ? frames - start : 64;
        for (int f = 0; f < count; f++) gains[f] = 0;
        for (int c = 0; c < channels; c++) {
            const float *src = in[c] + start;
            for (int f = 0; f < count; f++) { float a = fabsf(src[f]); if (a > gains[f]) gains[f] = a; }
        }
        for (int f = 0; f < count; f++) {
            float a = gains[f] > env ? attack : release;
            env = a * env + (1 - a) * gains[f];
            if (env >= low && env <= high) {
                gains[f] = makeup;
            } else {
                float level = db_per_neper * logf(env > 1e-10f ? env : 1e-10f);
                gains[f] = expf((curve_gain(curve, level) + curve[5]) / db_per_neper);
            }
        }
        for (int c = 0; c < channels; c++) {
            const float *src = in[c] + start;
            float *dst = out[c] + start;
            for (int f = 0; f < count; f++) dst[f] = src[f] * gains[f];
        }
    }
    if (env < 1e-10f) env = 0;
    *envelope = env;
}

struct limiter {
    int channels, capacity, lookahead, attack;
    long position, head, tail, reduced;
    double sum;
    float reduction;
};

unsigned long creference_limiter_size(int channels, int capacity) {
    return sizeof(struct limiter) + (unsigned long)capacity * ((channels + 3) * sizeof(float) + sizeof(long));
}

#define LIMITER_AUDIO(s) ((float *)((struct limiter *)(s) + 1))
void creference_limiter_init(void *state, int channels, int capacity, int lookahead, int attack) {
    struct limiter *s = state;
    s->channels = channels; s->capacity = capacity; s->lookahead = lookahead; s->attack = attack;
    s->position = 0; s->head = 0; s->tail = 0; s->reduced = 0; s->sum = attack; s->reduction = 0;
    float *audio = LIMITER_AUDIO(s), *needed = audio + channels * capacity, *minima = needed + capacity;
    for (int i = 0; i < channels * capacity; i++) audio[i] = 0;
    for (int i = 0; i < capacity; i++) { needed[i] = 1; minima[i] = 1; }
    /* The deque for the first window: all ones, so one entry (the newest) survives. */
    float *values = minima + capacity;
    long *frames = (long *)(values + capacity);
    long last = -1 - lookahead + attack - 1;
    values[0] = 1; frames[0] = last; s->tail = 1;
}

void creference_limiter(void *state, const float *const *in, float *const *out, int count,
                        float pregain, float ceiling_in, float release) {
    struct limiter *s = state;
    const long mask = s->capacity - 1, capacity = s->capacity, d = s->lookahead, a = s->attack;
    const int channels = s->channels;
    float *audio = LIMITER_AUDIO(s), *needed = audio + channels * capacity, *minima = needed + capacity;
    float *values = minima + capacity;
    long *dq = (long *)(values + capacity);
    const float ceiling = ceiling_in * (1 - 1.0f / 1048576);
    long n = s->position, head = s->head, tail = s->tail, reduced = s->reduced;
    double sum = s->sum, inverse_a = 1 / (double)a;
    float reduction = s->reduction;
    for (int f = 0; f < count; f++) {
        long w = n & mask;
        float peak = 0;
        for (int c = 0; c < channels; c++) {
            float y = in[c][f] * pregain;
            audio[c * capacity + w] = y;
            float m = fabsf(y);
            if (m > peak) peak = m;
        }
        needed[w] = peak > ceiling ? ceiling / peak : 1;
        long q = n - d + a - 1;
        float v = needed[q & mask];
        while (tail > head && values[(tail - 1) & mask] >= v) tail--;
        values[tail & mask] = v; dq[tail & mask] = q; tail++;
        while (dq[head & mask] <= q - a) head++;
        float h = values[head & mask];
        float leaving = minima[(n - a) & mask];
        if (leaving < 1) reduced--;
        if (h < 1) reduced++;
        minima[w] = h;
        float average = 1;
        if (reduced == 0) {
            sum = (double)a;
        } else {
            sum += (double)h - (double)leaving;
            float avg = (float)(sum * inverse_a);
            average = avg < 1 ? avg : 1;
        }
        float wanted = 1 - average;
        if (wanted > reduction) {
            reduction = wanted;
        } else {
            reduction = wanted + (reduction - wanted) * release;
            if (reduction < 1e-7f) reduction = 0;
        }
        float envelope = 1 - reduction;
        long m = (n - d) & mask;
        float o = 0;
        for (int c = 0; c < channels; c++) { float x = fabsf(audio[c * capacity + m]); if (x > o) o = x; }
        float g = envelope;
        if (o > ceiling) { float cap = ceiling / o; if (cap < g) g = cap; }
        for (int c = 0; c < channels; c++) out[c][f] = audio[c * capacity + m] * g;
        n++;
    }
    s->position = n; s->head = head; s->tail = tail; s->reduced = reduced; s->sum = sum; s->reduction = reduction;
}

void creference_wavetable(float *out, int frames, const float *table, double *phase_io, double increment) {
    double phase = *phase_io;
    for (int f = 0; f < frames; f++) {
        double x = phase * 4096;
        int i = (int)x;
        if (i > 4095) i = 4095;
        float frac = (float)(x - (double)i);
        float a = table[i], b = table[i + 1];
        out[f] = a + frac * (b - a);
        phase += increment;
        if (phase >= 1) phase -= 1;
    }
    *phase_io = phase;
}

void creference_pink(float *out, int frames, unsigned long long *rng, float p[7]) {
    unsigned long long state = *rng;
    float b0 = p[0], b1 = p[1], b2 = p[2], b3 = p[3], b4 = p[4], b5 = p[5], b6 = p[6];
    for (int f = 0; f < frames; f++) {
        unsigned long long old = state;
        state = old * 6364136223846793005ULL + 109;
        unsigned int xorshifted = (unsigned int)(((old >> 18) ^ old) >> 27);
        unsigned int rotation = (unsigned int)(old >> 59);
        unsigned int bits = (xorshifted >> rotation) | (xorshifted << ((0u - rotation) & 31));
        float white = (float)((int)bits >> 8) * (1.0f / 8388608);
        b0 = 0.99886f * b0 + white * 0.0555179f;
        b1 = 0.99332f * b1 + white * 0.0750759f;
        b2 = 0.96900f * b2 + white * 0.1538520f;
        b3 = 0.86650f * b3 + white * 0.3104856f;
        b4 = 0.55000f * b4 + white * 0.5329522f;
        b5 = -0.7616f * b5 - white * 0.0168980f;
        float pink = b0 + b1 + b2 + b3 + b4 + b5 + b6 + white * 0.5362f;
        b6 = white * 0.115926f;
        out[f] = pink * 0.32759737f;
    }
    *rng = state;
    p[0] = b0; p[1] = b1; p[2] = b2; p[3] = b3; p[4] = b4; p[5] = b5; p[6] = b6;
}

void creference_fill(float *out, int frames, float value) {
    for (int f = 0; f < frames; f++) out[f] = value;
}

/* The filters track: the engine's Float64 biquad, its cookbook designs, its delay lines. */

void creference_biquad_design(int response, double frequency, double width, int width_is_octaves,
                              double gain_db, double sample_rate, double out[5]) {
    double fs = sample_rate;
    double f = frequency < 10 ? 10 : frequency;
    if (f > 0.49 * fs) f = 0.49 * fs;
    double w0 = 2 * M_PI * f / fs;
    double cosw = cos(w0), sinw = sin(w0);
    double alpha;
    if (width_is_octaves) {
        double x = 0.34657359027997264 * width * w0 / sinw;
        alpha = sinw * (exp(x) - exp(-x)) / 2;
    } else {
        alpha = sinw / (2 * width);
    }
    if (alpha > 1000) alpha = 1000;
    double b0, b1, b2, a1, a2, a0, a, r;
    switch (response) {
    case 0: a0 = 1 + alpha; b0 = (1 - cosw) / 2 / a0; b1 = (1 - cosw) / a0; b2 = b0; a1 = -2 * cosw / a0; a2 = (1 - alpha) / a0; break;
    case 1: a0 = 1 + alpha; b0 = (1 + cosw) / 2 / a0; b1 = -(1 + cosw) / a0; b2 = b0; a1 = -2 * cosw / a0; a2 = (1 - alpha) / a0; break;
    case 2: a0 = 1 + alpha; b0 = alpha / a0; b1 = 0; b2 = -alpha / a0; a1 = -2 * cosw / a0; a2 = (1 - alpha) / a0; break;
    case 3: a0 = 1 + alpha; a1 = -2 * cosw / a0; b0 = 1 / a0; b1 = a1; b2 = 1 / a0; a2 = (1 - alpha) / a0; break;
    case 4: a0 = 1 + alpha; a1 = -2 * cosw / a0; b0 = (1 - alpha) / a0; b1 = a1; b2 = 1; a2 = (1 - alpha) / a0; break;
    case 5:
        a = pow(10, gain_db / 40); a0 = 1 + alpha / a; a1 = -2 * cosw / a0;
        b0 = (1 + alpha * a) / a0; b1 = a1; b2 = (1 - alpha * a) / a0; a2 = (1 - alpha / a) / a0; break;
    case 6:
        a = pow(10, gain_db / 40); r = 2 * pow(10, gain_db / 80) * alpha;
        a0 = (a + 1) + (a - 1) * cosw + r;
        b0 = a * ((a + 1) - (a - 1) * cosw + r) / a0; b1 = 2 * a * ((a - 1) - (a + 1) * cosw) / a0;
        b2 = a * ((a + 1) - (a - 1) * cosw - r) / a0; a1 = -2 * ((a - 1) + (a + 1) * cosw) / a0;
        a2 = ((a + 1) + (a - 1) * cosw - r) / a0; break;
    default:
        a = pow(10, gain_db / 40); r = 2 * pow(10, gain_db / 80) * alpha;
        a0 = (a + 1) - (a - 1) * cosw + r;
        b0 = a * ((a + 1) + (a - 1) * cosw + r) / a0; b1 = -2 * a * ((a - 1) + (a + 1) * cosw) / a0;
        b2 = a * ((a + 1) + (a - 1) * cosw - r) / a0; a1 = 2 * ((a - 1) - (a + 1) * cosw) / a0;
        a2 = ((a + 1) - (a - 1) * cosw - r) / a0; break;
    }
    out[0] = b0; out[1] = b1; out[2] = b2; out[3] = a1; out[4] = a2;
}

static inline double flush64(double v) { return fabs(v) < 1e-30 ? 0 : v; }

void creference_biquad64(const float *const *in, float *const *out, int channels, int frames,
                         const double c[5], double *state) {
    const double b0 = c[0], b1 = c[1], b2 = c[2], a1 = c[3], a2 = c[4];
    int ch = 0;
    /* Channels in pairs, as the engine does: two independent recurrences per iteration. */
    for (; ch + 1 < channels; ch += 2) {
        double *za = state + 4 * ch, *zb = za + 4;
        double ax1 = za[0], ax2 = za[1], ay1 = za[2], ay2 = za[3];
        double bx1 = zb[0], bx2 = zb[1], by1 = zb[2], by2 = zb[3];
        const float *sa = in[ch], *sb = in[ch + 1];
        float *da = out[ch], *db = out[ch + 1];
        for (int f = 0; f < frames; f++) {
            double xa = sa[f], xb = sb[f];
            double ya = b0 * xa + b1 * ax1 + b2 * ax2 - a1 * ay1 - a2 * ay2;
            double yb = b0 * xb + b1 * bx1 + b2 * bx2 - a1 * by1 - a2 * by2;
            ax2 = ax1; ax1 = xa; ay2 = ay1; ay1 = ya;
            bx2 = bx1; bx1 = xb; by2 = by1; by1 = yb;
            da[f] = fabs(ya) < 1e-30 ? 0 : (float)ya;
            db[f] = fabs(yb) < 1e-30 ? 0 : (float)yb;
        }
        za[0] = flush64(ax1); za[1] = flush64(ax2); za[2] = flush64(ay1); za[3] = flush64(ay2);
        zb[0] = flush64(bx1); zb[1] = flush64(bx2); zb[2] = flush64(by1); zb[3] = flush64(by2);
    }
    for (; ch < channels; ch++) {
        double *z = state + 4 * ch;
        double x1 = z[0], x2 = z[1], y1 = z[2], y2 = z[3];
        const float *src = in[ch];
        float *dst = out[ch];
        for (int f = 0; f < frames; f++) {
            double x = src[f];
            double y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
            x2 = x1; x1 = x; y2 = y1; y1 = y;
            dst[f] = fabs(y) < 1e-30 ? 0 : (float)y;
        }
        z[0] = flush64(x1); z[1] = flush64(x2); z[2] = flush64(y1); z[3] = flush64(y2);
    }
}

void creference_feedback_delay(const float *const *in, float *const *out, int channels, int frames,
                               float *lines, int mask, int *write, double delay, float feedback,
                               float dry, float wet, const double lp[5], double *lp_state) {
    const double b0 = lp[0], b1 = lp[1], b2 = lp[2], a1 = lp[3], a2 = lp[4];
    int whole = (int)delay;
    float fraction = (float)(delay - (double)whole);
    for (int ch = 0; ch < channels; ch++) {
        float *line = lines + (size_t)ch * (size_t)(mask + 1);
        double *z = lp_state + 4 * ch;
        double x1 = z[0], x2 = z[1], y1 = z[2], y2 = z[3];
        const float *src = in[ch];
        float *dst = out[ch];
        int w = *write;
        for (int f = 0; f < frames; f++) {
            float x = src[f];
            int r = (w - whole) & mask;
            float near = line[r], far = line[(r - 1) & mask];
            float delayed = near + fraction * (far - near);
            double d = delayed;
            double y = b0 * d + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
            x2 = x1; x1 = d; y2 = y1; y1 = y;
            float v = x + feedback * (float)y;
            line[w] = fabsf(v) < 1e-30f ? 0 : v;
            dst[f] = dry * x + wet * delayed;
            w = (w + 1) & mask;
        }
        z[0] = flush64(x1); z[1] = flush64(x2); z[2] = flush64(y1); z[3] = flush64(y2);
    }
    *write = (*write + frames) & mask;
}

void creference_sample_delay(const float *const *in, float *const *out, int channels, int frames,
                             float *lines, int mask, int *write, int delay) {
    int capacity = mask + 1;
    for (int ch = 0; ch < channels; ch++) {
        float *line = lines + (size_t)ch * (size_t)capacity;
        int w = *write;
        int first = frames < capacity - w ? frames : capacity - w;
        memcpy(line + w, in[ch], (size_t)first * sizeof(float));
        if (first < frames) memcpy(line, in[ch] + first, (size_t)(frames - first) * sizeof(float));
        int r = (w - delay) & mask;
        first = frames < capacity - r ? frames : capacity - r;
        memcpy(out[ch], line + r, (size_t)first * sizeof(float));
        if (first < frames) memcpy(out[ch] + first, line, (size_t)(frames - first) * sizeof(float));
    }
    *write = (*write + frames) & mask;
}

// A LADSPA plugin called directly (the plugin-hosting benchmark's reference).
#include <dlfcn.h>
#include <ladspa.h>

struct creference_ladspa {
    const LADSPA_Descriptor *descriptor;
    LADSPA_Handle handles[64];
    int channels;
    unsigned long audio_in, audio_out;
    LADSPA_Data controls[64];
};

creference_ladspa *creference_ladspa_new(const char *path, const char *label, unsigned long rate, int channels, float control) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library || channels < 1 || channels > 64) return NULL;
    LADSPA_Descriptor_Function function = (LADSPA_Descriptor_Function)dlsym(library, "ladspa_descriptor");
    if (!function) return NULL;
    const LADSPA_Descriptor *d = NULL;
    for (unsigned long i = 0; (d = function(i)) != NULL; i++) if (strcmp(d->Label, label) == 0) break;
    if (!d || d->PortCount > 64) return NULL;
    creference_ladspa *p = calloc(1, sizeof *p);
    p->descriptor = d;
    p->channels = channels;
    for (unsigned long port = 0; port < d->PortCount; port++) {
        LADSPA_PortDescriptor kind = d->PortDescriptors[port];
        if (LADSPA_IS_PORT_AUDIO(kind) && LADSPA_IS_PORT_INPUT(kind)) p->audio_in = port;
        if (LADSPA_IS_PORT_AUDIO(kind) && LADSPA_IS_PORT_OUTPUT(kind)) p->audio_out = port;
        p->controls[port] = control;
    }
    for (int c = 0; c < channels; c++) {
        p->handles[c] = d->instantiate(d, rate);
        for (unsigned long port = 0; port < d->PortCount; port++)
            if (LADSPA_IS_PORT_CONTROL(d->PortDescriptors[port])) d->connect_port(p->handles[c], port, &p->controls[port]);
        if (d->activate) d->activate(p->handles[c]);
    }
    return p;
}

void creference_ladspa_process(creference_ladspa *p, const float *const *in, float *const *out, int frames) {
    const LADSPA_Descriptor *d = p->descriptor;
    for (int c = 0; c < p->channels; c++) {
        d->connect_port(p->handles[c], p->audio_in, (LADSPA_Data *)in[c]);
        d->connect_port(p->handles[c], p->audio_out, out[c]);
        d->run(p->handles[c], (unsigned long)frames);
    }
}

void creference_ladspa_free(creference_ladspa *p) {
    if (!p) return;
    for (int c = 0; c < p->channels; c++) {
        if (p->descriptor->deactivate) p->descriptor->deactivate(p->handles[c]);
        p->descriptor->cleanup(p->handles[c]);
    }
    free(p);
}

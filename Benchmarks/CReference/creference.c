// Benchmark: the plain-C reference — the standard graph's arithmetic as tight loops, for graphbench's ratios.
#include "creference.h"
#include <math.h>
#include <string.h>

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

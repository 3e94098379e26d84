// Benchmark: the plain-C reference — the standard graph's arithmetic as tight loops, for graphbench's ratios.
#include "creference.h"
#include <math.h>

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

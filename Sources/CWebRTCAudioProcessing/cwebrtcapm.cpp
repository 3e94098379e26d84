// CWebRTCAudioProcessing: each C function forwards to webrtc::AudioProcessing 0.3 (the float,
// planar StreamConfig interface). No exceptions cross the boundary: creation catches them and
// returns NULL.
#include "cwebrtcapm.h"
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <new>

struct cwebrtc_apm {
    webrtc::AudioProcessing *apm = nullptr;
    webrtc::StreamConfig capture;
    webrtc::StreamConfig reverse;
    int delay_ms = 0;
};

extern "C" {

cwebrtc_apm *cwebrtc_apm_create(int sample_rate, int capture_channels, int reverse_channels, int *error) {
    int status = CWEBRTC_APM_CREATION_FAILED;
    cwebrtc_apm *s = nullptr;
    try {
        // 10 ms must be a whole number of frames; the float interface takes any such rate and
        // resamples inside to a native one (8, 16, 32, 48 kHz).
        if (sample_rate <= 0 || sample_rate % 100 != 0) {
            status = CWEBRTC_APM_BAD_SAMPLE_RATE;
        } else if (capture_channels < 1 || reverse_channels < 1) {
            status = CWEBRTC_APM_BAD_NUMBER_CHANNELS;
        } else {
            webrtc::Config config;
            // Off by default here: the experimental AGC steers an analog (device) volume,
            // which a graph does not have. Its default in 0.3's Config is on.
            config.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
            s = new cwebrtc_apm();
            s->apm = webrtc::AudioProcessing::Create(config);
            if (!s->apm) throw std::bad_alloc();
            s->capture = webrtc::StreamConfig(sample_rate, capture_channels, false);
            s->reverse = webrtc::StreamConfig(sample_rate, reverse_channels, false);
            webrtc::ProcessingConfig processing = {{s->capture, s->capture, s->reverse, s->reverse}};
            status = s->apm->Initialize(processing);
            if (status == webrtc::AudioProcessing::kNoError) {
                if (error) *error = 0;
                return s;
            }
        }
    } catch (...) {
        status = CWEBRTC_APM_CREATION_FAILED;
    }
    cwebrtc_apm_destroy(s);
    if (error) *error = status;
    return nullptr;
}

void cwebrtc_apm_destroy(cwebrtc_apm *s) {
    if (!s) return;
    delete s->apm;
    delete s;
}

int cwebrtc_apm_frames_per_chunk(const cwebrtc_apm *s) { return static_cast<int>(s->capture.num_frames()); }
int cwebrtc_apm_processing_rate(const cwebrtc_apm *s) { return s->apm->proc_sample_rate_hz(); }

int cwebrtc_apm_set_echo_cancellation(cwebrtc_apm *s, int enabled, int suppression_level) {
    if (suppression_level < 0 || suppression_level > 2) return CWEBRTC_APM_BAD_PARAMETER;
    webrtc::EchoCancellation *ec = s->apm->echo_cancellation();
    int r = ec->set_suppression_level(static_cast<webrtc::EchoCancellation::SuppressionLevel>(suppression_level));
    if (r != 0) return r;
    if (enabled) {
        if ((r = ec->enable_drift_compensation(false)) != 0) return r;
        if ((r = ec->enable_metrics(true)) != 0) return r;
        if ((r = ec->enable_delay_logging(true)) != 0) return r;
    }
    return ec->Enable(enabled != 0);
}

int cwebrtc_apm_set_noise_suppression(cwebrtc_apm *s, int enabled, int level) {
    if (level < 0 || level > 3) return CWEBRTC_APM_BAD_PARAMETER;
    webrtc::NoiseSuppression *ns = s->apm->noise_suppression();
    int r = ns->set_level(static_cast<webrtc::NoiseSuppression::Level>(level));
    if (r != 0) return r;
    return ns->Enable(enabled != 0);
}

int cwebrtc_apm_set_gain_control(cwebrtc_apm *s, int enabled, int mode, int target_level_dbfs,
                                 int compression_gain_db, int limiter) {
    if (mode != webrtc::GainControl::kAdaptiveDigital && mode != webrtc::GainControl::kFixedDigital)
        return CWEBRTC_APM_BAD_PARAMETER;
    webrtc::GainControl *agc = s->apm->gain_control();
    int r;
    if ((r = agc->set_mode(static_cast<webrtc::GainControl::Mode>(mode))) != 0) return r;
    if ((r = agc->set_target_level_dbfs(target_level_dbfs)) != 0) return r;
    if ((r = agc->set_compression_gain_db(compression_gain_db)) != 0) return r;
    if ((r = agc->enable_limiter(limiter != 0)) != 0) return r;
    return agc->Enable(enabled != 0);
}

int cwebrtc_apm_set_voice_detection(cwebrtc_apm *s, int enabled) { return s->apm->voice_detection()->Enable(enabled != 0); }
int cwebrtc_apm_set_high_pass_filter(cwebrtc_apm *s, int enabled) { return s->apm->high_pass_filter()->Enable(enabled != 0); }
int cwebrtc_apm_set_level_estimator(cwebrtc_apm *s, int enabled) { return s->apm->level_estimator()->Enable(enabled != 0); }

int cwebrtc_apm_set_delay_agnostic(cwebrtc_apm *s, int enabled) {
    if (!s) return CWEBRTC_APM_NULL_POINTER;
    try {
        webrtc::Config config;
        config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(enabled != 0));
        config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(enabled != 0));
        config.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
        s->apm->SetExtraOptions(config);
    } catch (...) {
        return CWEBRTC_APM_UNSPECIFIED_ERROR;
    }
    return CWEBRTC_APM_NO_ERROR;
}

void cwebrtc_apm_set_stream_delay_ms(cwebrtc_apm *s, int delay_ms) { s->delay_ms = delay_ms; }

int cwebrtc_apm_process_reverse(cwebrtc_apm *s, float *const *channels) {
    // In place, as PulseAudio's echo-cancel module calls it (src == dest): the library copies
    // the frame back unchanged unless a reverse-stream component (intelligibility, not used
    // here) is on.
    return s->apm->ProcessReverseStream(channels, s->reverse, s->reverse, channels);
}

int cwebrtc_apm_process_capture(cwebrtc_apm *s, float *const *channels) {
    if (s->apm->echo_cancellation()->is_enabled()) {
        int r = s->apm->set_stream_delay_ms(s->delay_ms);
        if (r != 0 && r != webrtc::AudioProcessing::kBadStreamParameterWarning) return r;
    }
    return s->apm->ProcessStream(channels, s->capture, s->capture, channels);
}

void cwebrtc_apm_get_metrics(cwebrtc_apm *s, cwebrtc_apm_metrics *m) {
    m->erle_instant_db = m->erle_average_db = m->erl_instant_db = m->erl_average_db = -1000;
    m->stream_has_echo = -1;
    m->delay_median_ms = m->delay_std_ms = -1;
    m->fraction_poor_delays = -1;
    m->speech_probability = -1;
    m->stream_has_voice = -1;
    m->rms_dbfs = 1;
    webrtc::EchoCancellation *ec = s->apm->echo_cancellation();
    if (ec->is_enabled()) {
        m->stream_has_echo = ec->stream_has_echo() ? 1 : 0;
        webrtc::EchoCancellation::Metrics metrics;
        if (ec->GetMetrics(&metrics) == 0) {
            m->erle_instant_db = metrics.echo_return_loss_enhancement.instant;
            m->erle_average_db = metrics.echo_return_loss_enhancement.average;
            m->erl_instant_db = metrics.echo_return_loss.instant;
            m->erl_average_db = metrics.echo_return_loss.average;
        }
        int median = -1, std = -1;
        float poor = -1;
        if (ec->GetDelayMetrics(&median, &std, &poor) == 0) {
            m->delay_median_ms = median;
            m->delay_std_ms = std;
            m->fraction_poor_delays = poor;
        }
    }
    webrtc::NoiseSuppression *ns = s->apm->noise_suppression();
    if (ns->is_enabled()) m->speech_probability = ns->speech_probability();
    webrtc::VoiceDetection *vad = s->apm->voice_detection();
    if (vad->is_enabled()) m->stream_has_voice = vad->stream_has_voice() ? 1 : 0;
    webrtc::LevelEstimator *le = s->apm->level_estimator();
    if (le->is_enabled()) m->rms_dbfs = -le->RMS();
}

}

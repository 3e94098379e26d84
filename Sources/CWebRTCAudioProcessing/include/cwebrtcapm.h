// CWebRTCAudioProcessing: a C face on webrtc::AudioProcessing from webrtc-audio-processing 0.3
// (Debian libwebrtc-audio-processing-dev; the WebRTC audio processing module of about 2016, the
// one PulseAudio's and PipeWire's echo-cancel modules were written against), so Swift can call it
// without C++ interop. Samples are 32-bit float, planar (`[channel][frame]`), nominally −1…1,
// in 10 ms frames (sample_rate / 100 frames per channel). Only what 0.3 offers is here: the
// AEC's metrics, the noise suppressor's speech probability, the VAD's decision, the level
// estimator's RMS and the delay estimator's figures. 0.3 has no getter for the digital AGC's
// gain. Create, configure and destroy on a control thread; the two process calls and the
// metric reads belong to one thread at a time (the library's own rule: stream calls never
// concurrent with ProcessStream).
#ifndef CWEBRTCAPM_H
#define CWEBRTCAPM_H

#ifdef __cplusplus
extern "C" {
#endif

/// An opaque webrtc::AudioProcessing instance plus the settings the shim applies per frame.
typedef struct cwebrtc_apm cwebrtc_apm;

/// webrtc::AudioProcessing::Error, as the calls below return them.
enum {
    CWEBRTC_APM_NO_ERROR = 0,
    CWEBRTC_APM_UNSPECIFIED_ERROR = -1,
    CWEBRTC_APM_CREATION_FAILED = -2,
    CWEBRTC_APM_UNSUPPORTED_COMPONENT = -3,
    CWEBRTC_APM_UNSUPPORTED_FUNCTION = -4,
    CWEBRTC_APM_NULL_POINTER = -5,
    CWEBRTC_APM_BAD_PARAMETER = -6,
    CWEBRTC_APM_BAD_SAMPLE_RATE = -7,
    CWEBRTC_APM_BAD_DATA_LENGTH = -8,
    CWEBRTC_APM_BAD_NUMBER_CHANNELS = -9,
    CWEBRTC_APM_FILE_ERROR = -10,
    CWEBRTC_APM_STREAM_PARAMETER_NOT_SET = -11,
    CWEBRTC_APM_NOT_ENABLED = -12,
    /// A stream parameter out of range was clamped (set_stream_delay_ms outside 0…500 ms).
    CWEBRTC_APM_BAD_STREAM_PARAMETER_WARNING = -13
};

/// Creates an instance for `capture_channels` microphone channels and `reverse_channels`
/// far-end (reverse) channels at `sample_rate` Hz for both (a multiple of 100 Hz, so that 10 ms
/// is whole frames: BAD_SAMPLE_RATE otherwise; rates other than 8, 16, 32 and 48 kHz the
/// library resamples inside to the next native rate, 48 kHz at most), every component off, the
/// experimental (analog-volume) AGC off. Returns NULL and the library's error in `*error`
/// (may be NULL) when it refuses the configuration or memory runs out. Allocates.
cwebrtc_apm *cwebrtc_apm_create(int sample_rate, int capture_channels, int reverse_channels, int *error);
/// Frees an instance (NULL is ignored).
void cwebrtc_apm_destroy(cwebrtc_apm *apm);

/// Frames per channel in one 10 ms frame at the instance's rate.
int cwebrtc_apm_frames_per_chunk(const cwebrtc_apm *apm);
/// The rate the library processes the capture stream at inside (a native rate: 8, 16, 32 or 48 kHz).
int cwebrtc_apm_processing_rate(const cwebrtc_apm *apm);

/// Acoustic echo cancellation (EchoCancellation, "AEC"; not the mobile AECM): on or off, and the
/// suppressor's aggressiveness 0 low, 1 moderate, 2 high. Enabling turns its metrics and delay
/// logging on. Returns an error code.
int cwebrtc_apm_set_echo_cancellation(cwebrtc_apm *apm, int enabled, int suppression_level);
/// Noise suppression (NoiseSuppression): on or off; level 0 low (6 dB), 1 moderate (10 dB),
/// 2 high (15 dB), 3 very high (20 dB). Returns an error code.
int cwebrtc_apm_set_noise_suppression(cwebrtc_apm *apm, int enabled, int level);
/// Automatic gain control (GainControl) in a digital mode: mode 1 adaptive digital, 2 fixed
/// digital (0, adaptive analog, needs a device volume and is refused here with BAD_PARAMETER);
/// `target_level_dbfs` 0…31 (the target peak envelope at −target dBFS);
/// `compression_gain_db` 0…90; `limiter` 0/1. Returns an error code.
int cwebrtc_apm_set_gain_control(cwebrtc_apm *apm, int enabled, int mode, int target_level_dbfs,
                                 int compression_gain_db, int limiter);
/// Voice activity detection (VoiceDetection): on or off. Returns an error code.
int cwebrtc_apm_set_voice_detection(cwebrtc_apm *apm, int enabled);
/// The high-pass filter (HighPassFilter, about 80 Hz): on or off. Returns an error code.
int cwebrtc_apm_set_high_pass_filter(cwebrtc_apm *apm, int enabled);
/// The level estimator (LevelEstimator): on or off. Returns an error code.
int cwebrtc_apm_set_level_estimator(cwebrtc_apm *apm, int enabled);

/// The echo canceller's extended filter (a longer adaptive filter, about 128 ms at 16 kHz
/// processing) and delay-agnostic mode (it estimates the far-end-to-echo delay itself from the
/// signals, so a wrong or unknown hint does not stop it converging): WebRTC's ExtendedFilter and
/// DelayAgnostic options, both on or both off (the library's default: off). The settings
/// PipeWire's echo-cancel module uses. Control thread. Returns an error code.
int cwebrtc_apm_set_delay_agnostic(cwebrtc_apm *apm, int enabled);

/// The delay hint in ms (0…500): the time from a far-end frame given to
/// `cwebrtc_apm_process_reverse` to its echo in a frame given to `cwebrtc_apm_process_capture`.
/// Kept by the shim and passed to set_stream_delay_ms before every capture frame.
void cwebrtc_apm_set_stream_delay_ms(cwebrtc_apm *apm, int delay_ms);

/// Gives one 10 ms far-end frame (`[reverse_channels][frames_per_chunk]`) to the echo canceller
/// (ProcessReverseStream in place; the library writes the frame back unchanged). Returns an
/// error code.
int cwebrtc_apm_process_reverse(cwebrtc_apm *apm, float *const *channels);
/// Processes one 10 ms microphone frame in place (`[capture_channels][frames_per_chunk]`):
/// set_stream_delay_ms with the hint, then ProcessStream. Returns an error code (the hint's
/// clamping warning is not reported here).
int cwebrtc_apm_process_capture(cwebrtc_apm *apm, float *const *channels);

/// What the library reports after the last capture frame. A field is -1000 (dB) or -1 when the
/// component it comes from is off or has nothing yet.
typedef struct {
    /// Echo return loss enhancement in dB (the AEC's own estimate): instantaneous and average.
    int erle_instant_db, erle_average_db;
    /// Echo return loss in dB (far end to microphone): instantaneous and average.
    int erl_instant_db, erl_average_db;
    /// 1 if the last frame might contain echo, 0 if almost certainly not, -1 AEC off.
    int stream_has_echo;
    /// The delay estimator's median and standard deviation in ms, and the fraction of poor
    /// estimates (0…1), -1 when unknown.
    int delay_median_ms, delay_std_ms;
    float fraction_poor_delays;
    /// The noise suppressor's speech probability for the last frame, 0…1; -1 NS off.
    float speech_probability;
    /// 1 voice, 0 none, -1 VAD off.
    int stream_has_voice;
    /// The level estimator's RMS since the last read, in dBFS (−127…0); 1 when off. Reading resets it.
    int rms_dbfs;
} cwebrtc_apm_metrics;

/// Reads the metrics (EchoCancellation::GetMetrics, GetDelayMetrics, NoiseSuppression
/// speech_probability, VoiceDetection stream_has_voice, LevelEstimator RMS).
void cwebrtc_apm_get_metrics(cwebrtc_apm *apm, cwebrtc_apm_metrics *metrics);

#ifdef __cplusplus
}
#endif
#endif

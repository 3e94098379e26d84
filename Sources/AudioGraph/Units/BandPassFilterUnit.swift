// Units: the band-pass filter unit (kAudioUnitSubType_BandPassFilter, AUBandpass).

/// A second-order band-pass filter: the `kAudioUnitSubType_BandPassFilter` (AUBandpass) analogue.
///
/// Design: the RBJ Audio EQ Cookbook band-pass biquad with a constant 0 dB peak gain (Robert
/// Bristow-Johnson): 0 dB at the centre, −3.01 dB at the band edges, 6 dB/octave outside.
/// Bandwidth is the distance between the −3 dB frequencies in cents (1200 to the octave),
/// measured on the digital filter (the cookbook's α = sin(w0)·sinh(ln(2)/2 · BW · w0/sin(w0))).
/// A centre-frequency change glides; see ``BiquadFilterUnit`` for how changes, memory and
/// denormals are handled.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class BandPassFilterUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kBandpassParam_*`.
    public enum Parameter {
        /// CenterFrequency (`kBandpassParam_CenterFrequency`): Hz, 20…sampleRate/2, default 5000.
        /// The design frequency is capped at 0.49 × sampleRate.
        public static let centerFrequency: AudioUnitParameterID = 0
        /// Bandwidth (`kBandpassParam_Bandwidth`): cents, 100…12000, default 600 (half an octave).
        public static let bandwidth: AudioUnitParameterID = 1
    }

    /// Creates a stereo filter with the default centre (5000 Hz) and bandwidth (600 cents).
    public init() {
        super.init(type: .bandPassFilter, design: BiquadDesign(.bandPass, .cents), shapeSlot: 1, gainSlot: -1)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.centerFrequency, name: "CenterFrequency", scope: .global, unit: .hertz,
                                minValue: 20, maxValue: nyquistPlaceholder, defaultValue: 5000, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.bandwidth, name: "Bandwidth", scope: .global, unit: .cents,
                                minValue: 100, maxValue: 12_000, defaultValue: 600, clampsToRange: true)]
    }
}

// Units: the parametric EQ unit (kAudioUnitSubType_ParametricEQ, AUParametricEQ).

/// One peaking EQ band: the `kAudioUnitSubType_ParametricEQ` (AUParametricEQ) analogue.
///
/// Design: the RBJ Audio EQ Cookbook peaking EQ (Robert Bristow-Johnson): Gain dB at the centre,
/// 0 dB far from it, α = sin(w0)/(2Q). Centre and gain changes glide; a Q change takes effect
/// at the next slice; see ``BiquadFilterUnit`` for how changes, memory and denormals are
/// handled. At 0 dB gain the filter is exactly flat (its numerator equals its denominator).
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class ParametricEQUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kParametricEQParam_*`.
    public enum Parameter {
        /// CenterFrequency (`kParametricEQParam_CenterFreq`): Hz, 20…sampleRate/2, default 2000.
        /// The design frequency is capped at 0.49 × sampleRate.
        public static let centerFrequency: AudioUnitParameterID = 0
        /// Q (`kParametricEQParam_Q`): 0.1…20, default 1 (Apple's header says "Hz"; it is a ratio).
        public static let q: AudioUnitParameterID = 1
        /// Gain (`kParametricEQParam_Gain`): dB, −20…20, default 0.
        public static let gain: AudioUnitParameterID = 2
    }

    /// Creates a stereo band with the default centre (2000 Hz), Q (1) and gain (0 dB: flat).
    public init() {
        super.init(type: .parametricEQ, design: BiquadDesign(.peaking, .q), shapeSlot: 1, gainSlot: 2)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.centerFrequency, name: "CenterFrequency", scope: .global, unit: .hertz,
                                minValue: 20, maxValue: nyquistPlaceholder, defaultValue: 2000, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.q, name: "Q", scope: .global, unit: .generic,
                                minValue: 0.1, maxValue: 20, defaultValue: 1, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.gain, name: "Gain", scope: .global, unit: .decibels,
                                minValue: -20, maxValue: 20, defaultValue: 0, clampsToRange: true)]
    }
}

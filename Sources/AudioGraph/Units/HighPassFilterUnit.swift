// Units: the high-pass filter unit (kAudioUnitSubType_HighPassFilter, AUHipass).

/// A second-order (12 dB/octave) high-pass filter: the `kAudioUnitSubType_HighPassFilter`
/// (AUHipass) analogue, the mirror of ``LowPassFilterUnit``.
///
/// Design: the RBJ Audio EQ Cookbook high-pass biquad (Robert Bristow-Johnson), run in direct
/// form I per channel. Resonance sets the gain at the cutoff: Q = 10^(resonance/20) / √2, so
/// 0 dB resonance is a Butterworth response, −3.01 dB at the cutoff. A cutoff change glides;
/// see ``BiquadFilterUnit`` for how changes, memory and denormals are handled.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class HighPassFilterUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kHipassParam_*`.
    public enum Parameter {
        /// CutoffFrequency (`kHipassParam_CutoffFrequency`): Hz, 10…sampleRate/2, default 6900.
        /// The design frequency is capped at 0.49 × sampleRate.
        public static let cutoffFrequency: AudioUnitParameterID = 0
        /// Resonance (`kHipassParam_Resonance`): dB, −20…40, default 0.
        public static let resonance: AudioUnitParameterID = 1
    }

    /// Creates a stereo filter with the default cutoff (6900 Hz) and resonance (0 dB).
    public init() {
        super.init(type: .highPassFilter, design: BiquadDesign(.highPass, .resonance), shapeSlot: 1, gainSlot: -1)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.cutoffFrequency, name: "CutoffFrequency", scope: .global, unit: .hertz,
                                minValue: 10, maxValue: nyquistPlaceholder, defaultValue: 6900, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.resonance, name: "Resonance", scope: .global, unit: .decibels,
                                minValue: -20, maxValue: 40, defaultValue: 0, clampsToRange: true)]
    }
}

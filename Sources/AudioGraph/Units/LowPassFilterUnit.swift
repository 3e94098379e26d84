// Units: the low-pass filter unit (kAudioUnitSubType_LowPassFilter).

/// A second-order (12 dB/octave) low-pass filter: the `kAudioUnitSubType_LowPassFilter` analogue.
///
/// Design: the RBJ Audio EQ Cookbook low-pass biquad (Robert Bristow-Johnson), run in direct
/// form I per channel (`Biquad`). Direct form I keeps the past inputs and outputs as its state, so a new
/// set of coefficients continues from the same signal without the transient that transposed
/// forms show when coefficients change. Resonance sets the gain at the cutoff: Q = 10^(resonance/20) / √2,
/// so 0 dB resonance is a Butterworth response, −3.01 dB at the cutoff. A cutoff change glides
/// (τ = 5 ms in log-frequency); a resonance change takes effect at the next slice; the filter
/// memory is kept, so changes never reset the signal. The kernel is every
/// ``BiquadFilterUnit``'s.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class LowPassFilterUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kLowPassParam_*`.
    public enum Parameter {
        /// CutoffFrequency: Hz, 10…sampleRate/2, default 6900. The design frequency is capped
        /// at 0.49 × sampleRate so the filter stays stable at the top of the range.
        public static let cutoffFrequency: AudioUnitParameterID = 0
        /// Resonance: dB, −20…40, default 0.
        public static let resonance: AudioUnitParameterID = 1
    }

    /// Creates a stereo filter with the default cutoff (6900 Hz) and resonance (0 dB).
    public init() {
        super.init(type: .lowPassFilter, design: BiquadDesign(.lowPass, .resonance, precision: .float32), shapeSlot: 1, gainSlot: -1)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.cutoffFrequency, name: "CutoffFrequency", scope: .global, unit: .hertz,
                                minValue: 10, maxValue: nyquistPlaceholder, defaultValue: 6900, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.resonance, name: "Resonance", scope: .global, unit: .decibels,
                                minValue: -20, maxValue: 40, defaultValue: 0, clampsToRange: true)]
    }
}

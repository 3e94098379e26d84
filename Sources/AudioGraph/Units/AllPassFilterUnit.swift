// Units: the all-pass filter unit (ours: no Apple counterpart; Web Audio's "allpass").

/// A second-order all-pass filter: unity gain at every frequency, a phase that turns through
/// 360° around the centre (180° at it) — for phasers and phase alignment. Apple has no all-pass
/// unit; this one is ours, with ``ParametricEQUnit``'s first two parameters (AUParametricEQ's
/// frequency and Q ranges and defaults) and Web Audio's "allpass" response.
///
/// Design: the RBJ Audio EQ Cookbook all-pass (Robert Bristow-Johnson), α = sin(w0)/(2Q): the
/// larger Q, the faster the phase turns around the centre. A centre-frequency change glides;
/// see ``BiquadFilterUnit`` for how changes, memory and denormals are handled.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class AllPassFilterUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0); AUParametricEQ's first two.
    public enum Parameter {
        /// CenterFrequency: Hz, 20…sampleRate/2, default 2000 (as `kParametricEQParam_CenterFreq`).
        /// The design frequency is capped at 0.49 × sampleRate.
        public static let centerFrequency: AudioUnitParameterID = 0
        /// Q: 0.1…20, default 1 (as `kParametricEQParam_Q`).
        public static let q: AudioUnitParameterID = 1
    }

    /// Creates a stereo all-pass with the default centre (2000 Hz) and Q (1).
    public init() {
        super.init(type: .allPassFilter, design: BiquadDesign(.allPass, .q), shapeSlot: 1, gainSlot: -1)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.centerFrequency, name: "CenterFrequency", scope: .global, unit: .hertz,
                                minValue: 20, maxValue: nyquistPlaceholder, defaultValue: 2000, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.q, name: "Q", scope: .global, unit: .generic,
                                minValue: 0.1, maxValue: 20, defaultValue: 1, clampsToRange: true)]
    }
}

// Units: the low-shelf filter unit (kAudioUnitSubType_LowShelfFilter, AULowShelf).

/// A second-order low shelf: the `kAudioUnitSubType_LowShelfFilter` (AULowShelf) analogue.
///
/// Design: the RBJ Audio EQ Cookbook low shelf (Robert Bristow-Johnson) with shelf slope S = 1,
/// the steepest slope without overshoot: Gain dB below the cutoff, 0 dB above it, and half the
/// gain (in dB) at the cutoff, the shelf's midpoint. Cutoff and gain changes glide; see
/// ``BiquadFilterUnit`` for how changes, memory and denormals are handled.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class LowShelfFilterUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kAULowShelfParam_*`.
    public enum Parameter {
        /// CutoffFrequency (`kAULowShelfParam_CutoffFrequency`): Hz, 10…200, default 80 — the
        /// shelf's midpoint.
        public static let cutoffFrequency: AudioUnitParameterID = 0
        /// Gain (`kAULowShelfParam_Gain`): dB, −40…40, default 0.
        public static let gain: AudioUnitParameterID = 1
    }

    /// Creates a stereo shelf with the default cutoff (80 Hz) and gain (0 dB: flat).
    public init() {
        super.init(type: .lowShelfFilter, design: BiquadDesign(.lowShelf, .butterworth), shapeSlot: -1, gainSlot: 1)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.cutoffFrequency, name: "CutoffFrequency", scope: .global, unit: .hertz,
                                minValue: 10, maxValue: 200, defaultValue: 80, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.gain, name: "Gain", scope: .global, unit: .decibels,
                                minValue: -40, maxValue: 40, defaultValue: 0, clampsToRange: true)]
    }
}

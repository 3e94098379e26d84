// Units: the high-shelf filter unit (kAudioUnitSubType_HighShelfFilter, AUHighShelf).

/// A second-order high shelf: the `kAudioUnitSubType_HighShelfFilter` (AUHighShelf) analogue.
///
/// Design: the RBJ Audio EQ Cookbook high shelf (Robert Bristow-Johnson) with shelf slope S = 1,
/// the steepest slope without overshoot: Gain dB above the cutoff, 0 dB below it, and half the
/// gain (in dB) at the cutoff, the shelf's midpoint. Cutoff and gain changes glide; see
/// ``BiquadFilterUnit`` for how changes, memory and denormals are handled.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class HighShelfFilterUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kHighShelfParam_*`.
    public enum Parameter {
        /// CutoffFrequency (`kHighShelfParam_CutOffFrequency`): Hz, 10000…sampleRate/2, default
        /// 10000 — the shelf's midpoint. The design frequency is capped at 0.49 × sampleRate (so
        /// at rates below 20 kHz the shelf sits there).
        public static let cutoffFrequency: AudioUnitParameterID = 0
        /// Gain (`kHighShelfParam_Gain`): dB, −40…40, default 0.
        public static let gain: AudioUnitParameterID = 1
    }

    /// Creates a stereo shelf with the default cutoff (10 kHz) and gain (0 dB: flat).
    public init() {
        super.init(type: .highShelfFilter, design: BiquadDesign(.highShelf, .butterworth), shapeSlot: -1, gainSlot: 1)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.cutoffFrequency, name: "CutoffFrequency", scope: .global, unit: .hertz,
                                minValue: 10_000, maxValue: nyquistPlaceholder, defaultValue: 10_000, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.gain, name: "Gain", scope: .global, unit: .decibels,
                                minValue: -40, maxValue: 40, defaultValue: 0, clampsToRange: true)]
    }
}

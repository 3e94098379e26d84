// Units: the notch filter unit (ours: no Apple unit of its own; AUNBandEQ's BandStop band).

/// A second-order notch (band-stop) filter. Apple has no notch unit (AUNBandEQ's BandStop band
/// is one); this one is ours, with ``BandPassFilterUnit``'s parameter layout (AUBandpass's IDs,
/// ranges and defaults) and Web Audio's "notch" response.
///
/// Design: the RBJ Audio EQ Cookbook notch (Robert Bristow-Johnson): a zero on the unit circle
/// at the centre (silence there), 0 dB far from it, −3.01 dB at the band edges. Bandwidth is
/// the distance between the −3 dB frequencies in cents, measured on the digital filter. A
/// centre-frequency change glides; see ``BiquadFilterUnit`` for how changes, memory and
/// denormals are handled.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class NotchFilterUnit: BiquadFilterUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0); AUBandpass's layout.
    public enum Parameter {
        /// CenterFrequency: Hz, 20…sampleRate/2, default 5000 (as `kBandpassParam_CenterFrequency`).
        /// The design frequency is capped at 0.49 × sampleRate.
        public static let centerFrequency: AudioUnitParameterID = 0
        /// Bandwidth: cents, 100…12000, default 600 (as `kBandpassParam_Bandwidth`).
        public static let bandwidth: AudioUnitParameterID = 1
    }

    /// Creates a stereo notch with the default centre (5000 Hz) and bandwidth (600 cents).
    public init() {
        super.init(type: .notchFilter, design: BiquadDesign(.notch, .cents), shapeSlot: 1, gainSlot: -1)
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.centerFrequency, name: "CenterFrequency", scope: .global, unit: .hertz,
                                minValue: 20, maxValue: nyquistPlaceholder, defaultValue: 5000, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.bandwidth, name: "Bandwidth", scope: .global, unit: .cents,
                                minValue: 100, maxValue: 12_000, defaultValue: 600, clampsToRange: true)]
    }
}

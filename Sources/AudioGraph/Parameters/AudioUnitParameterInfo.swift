// Parameters: what a parameter is — its unit, range, default (AudioUnitParameterInfo).

/// What a parameter's number means. Mirrors `AudioUnitParameterUnit`.
public enum AudioUnitParameterUnit: Sendable {
    /// A linear gain factor, 1 = unity (`kAudioUnitParameterUnit_LinearGain`).
    case linearGain
    /// 0 = off, 1 = on (`kAudioUnitParameterUnit_Boolean`).
    case boolean
    /// −1 = full left … 1 = full right (`kAudioUnitParameterUnit_Pan`).
    case pan
    /// Hertz (`kAudioUnitParameterUnit_Hertz`).
    case hertz
    /// Decibels (`kAudioUnitParameterUnit_Decibels`).
    case decibels
    /// Seconds (`kAudioUnitParameterUnit_Seconds`).
    case seconds
    /// Percent, 0…100 (`kAudioUnitParameterUnit_Percent`).
    case percent
    /// A ratio, e.g. an expansion ratio of 2 for 2:1 (`kAudioUnitParameterUnit_Rate`).
    case rate
    /// Cents, 1/100 of an equal-tempered semitone (`kAudioUnitParameterUnit_Cents`).
    case cents
    /// One of a list of choices, numbered from 0 (`kAudioUnitParameterUnit_Indexed`).
    case indexed
    /// A plain number with no unit (`kAudioUnitParameterUnit_Generic`).
    case generic
    /// Octaves, e.g. a bandwidth (`kAudioUnitParameterUnit_Octaves`).
    case octaves
    /// Sample frames at the unit's rate (`kAudioUnitParameterUnit_SampleFrames`).
    case sampleFrames
    /// A percentage for an equal-power crossfade: 0 = all of the first signal, 100 = all of
    /// the second, the sum of the squared gains 1 (`kAudioUnitParameterUnit_EqualPowerCrossfade`).
    case equalPowerCrossfade
}

/// Describes one parameter: where it lives, its range and default. Mirrors `AudioUnitParameterInfo`.
public struct AudioUnitParameterInfo: Sendable {
    /// The parameter's ID within its unit type.
    public let id: AudioUnitParameterID
    /// A short human-readable name, e.g. "Cutoff".
    public let name: String
    /// The scope its values live in; one value per element of that scope.
    public let scope: AudioUnitScope
    /// What the number means.
    public let unit: AudioUnitParameterUnit
    /// Lowest value; for a sample-rate dependent bound (low-pass Cutoff) the value at the unit's current rate.
    public let minValue: Float
    /// Highest value; see `minValue`.
    public let maxValue: Float
    /// The value a new unit starts with.
    public let defaultValue: Float
    /// `true`: out-of-range values are clamped to `minValue…maxValue` and the clamped value reads
    /// back. `false`: any finite value is stored as given (the range is only advisory, e.g. mixer Volume).
    public let clampsToRange: Bool
    /// `true` for a value the unit publishes (a meter, such as the dynamics processor's
    /// CompressionAmount): readable from any thread, refused by every set and schedule call.
    /// Mirrors `kAudioUnitParameterFlag_IsReadable` without `kAudioUnitParameterFlag_IsWritable`.
    public let isReadOnly: Bool

    /// Describes a parameter (for a ``RenderCallbackUnit``'s own parameters).
    /// - Parameters: as the properties of the same names; `minValue` ≤ `defaultValue` ≤ `maxValue`, all finite.
    public init(id: AudioUnitParameterID, name: String, scope: AudioUnitScope = .global, unit: AudioUnitParameterUnit,
                minValue: Float, maxValue: Float, defaultValue: Float, clampsToRange: Bool = true, isReadOnly: Bool = false) {
        self.id = id; self.name = name; self.scope = scope; self.unit = unit
        self.minValue = minValue; self.maxValue = maxValue; self.defaultValue = defaultValue
        self.clampsToRange = clampsToRange
        self.isReadOnly = isReadOnly
    }
}

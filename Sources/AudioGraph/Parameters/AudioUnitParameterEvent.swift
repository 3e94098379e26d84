// Parameters: the scheduled parameter event (AudioUnitParameterEvent) an app queues.

/// A parameter change scheduled sample-accurately: the `AudioUnitParameterEvent` analogue
/// (immediate and ramped events), plus an exponential approach like Web Audio's
/// `setTargetAtTime`.
///
/// `bufferOffset` counts frames, at the unit's sample rate, from the start of the next slice the
/// unit renders (`AudioUnitScheduleParameters`' `bufferOffset`); it may reach past that slice,
/// up to ``maximumBufferOffset``. Thread: a plain value.
public struct AudioUnitParameterEvent: Sendable, Equatable {
    /// What the event does from its start frame.
    public enum Kind: Sendable, Equatable {
        /// The value jumps to `value` at the start frame (no smoothing: the frame before has the
        /// old value, the start frame the new one).
        case immediate(value: Float)
        /// A straight line from the value at the start frame (or `from`) to `to`, reaching it
        /// `durationFrames` frames later (`kParameterEvent_Ramped`; Web Audio's
        /// `linearRampToValueAtTime`). 1…``AudioUnitParameterEvent/maximumDurationFrames``.
        case linearRamp(from: Float? = nil, to: Float, durationFrames: Int)
        /// An exponential approach: `v(t) = target + (v₀ − target)·e^(−t/timeConstant)`, t in
        /// seconds from the start frame (Web Audio's `setTargetAtTime`). It ends, exactly at
        /// `target`, once within 10⁻⁶ of it. `timeConstant` > 0 seconds, ≤ 60.
        case target(Float, timeConstant: Double)
    }

    /// The parameter's ID, as for ``AudioUnit/setParameter(_:_:scope:element:)``.
    public var id: AudioUnitParameterID
    /// The scope the parameter lives in.
    public var scope: AudioUnitScope
    /// The element of that scope, 0…elementCount−1.
    public var element: AudioUnitElement
    /// Frames from the start of the unit's next slice, 0…``maximumBufferOffset``.
    public var bufferOffset: Int
    /// What the event does from its start frame.
    public var kind: Kind

    /// The farthest ahead an event may start: 10 s at 48 kHz.
    public static let maximumBufferOffset = 480_000
    /// The longest linear ramp: 60 s at 48 kHz.
    public static let maximumDurationFrames = 2_880_000

    /// Creates an event.
    public init(id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement = 0,
                bufferOffset: Int = 0, _ kind: Kind) {
        self.id = id; self.scope = scope; self.element = element; self.bufferOffset = bufferOffset; self.kind = kind
    }
}

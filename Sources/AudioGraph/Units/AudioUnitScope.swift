// Units: scopes and elements, the address of every property and parameter.

/// Where a property or parameter lives on a unit. Mirrors `AudioUnitScope`
/// (`kAudioUnitScope_Global` = 0, `_Input` = 1, `_Output` = 2).
public enum AudioUnitScope: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    /// Mirrors `kAudioUnitScope_Global`: the unit as a whole; only element 0 exists.
    case global = 0
    /// Mirrors `kAudioUnitScope_Input`: the input elements (buses) that audio is pulled into.
    case input = 1
    /// Mirrors `kAudioUnitScope_Output`: the output elements (buses) that audio is rendered from.
    case output = 2

    /// `global`, `input` or `output`.
    public var description: String {
        switch self { case .global: "global"; case .input: "input"; case .output: "output" }
    }
}

/// An element (bus) number within a scope, counted from 0. Mirrors `AudioUnitElement`.
public typealias AudioUnitElement = UInt32

// Units: property IDs (Apple's numbers), connections and property values.

/// A property identifier. Values mirror `AudioUnitPropertyID` constants in Apple's
/// `AudioUnitProperties.h`, so ported code keeps its numbers.
public struct AudioUnitPropertyID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric ID, identical to Apple's.
    public let rawValue: UInt32
    /// Wraps a numeric property ID.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Mirrors `kAudioUnitProperty_MakeConnection` (1): input scope; value ``AudioUnitPropertyValue/connection(_:)``.
    public static let makeConnection = AudioUnitPropertyID(rawValue: 1)
    /// Mirrors `kAudioUnitProperty_SampleRate` (2): input/output scope; value `.float64` Hz.
    public static let sampleRate = AudioUnitPropertyID(rawValue: 2)
    /// Mirrors `kAudioUnitProperty_StreamFormat` (8): input/output scope; value `.streamFormat`.
    public static let streamFormat = AudioUnitPropertyID(rawValue: 8)
    /// Mirrors `kAudioUnitProperty_ElementCount` (11): any scope; value `.uint32`.
    public static let elementCount = AudioUnitPropertyID(rawValue: 11)
    /// Mirrors `kAudioUnitProperty_Latency` (12): global, read-only; value `.float64` seconds.
    public static let latency = AudioUnitPropertyID(rawValue: 12)
    /// Mirrors `kAudioUnitProperty_MaximumFramesPerSlice` (14): global; value `.uint32` frames, default 1024.
    public static let maximumFramesPerSlice = AudioUnitPropertyID(rawValue: 14)
    /// Mirrors `kAudioUnitProperty_TailTime` (20): global, read-only; value `.float64` seconds.
    public static let tailTime = AudioUnitPropertyID(rawValue: 20)
    /// Mirrors `kAudioUnitProperty_SetRenderCallback` (23): input scope; value `.renderCallback`.
    public static let setRenderCallback = AudioUnitPropertyID(rawValue: 23)
    /// Mirrors `kAudioUnitProperty_ShouldAllocateBuffer` (51): input/output scope; value `.uint32` 0/1.
    public static let shouldAllocateBuffer = AudioUnitPropertyID(rawValue: 51)
    /// Mirrors `kAudioOutputUnitProperty_EnableIO` (2003): IO unit, input scope element 1 or output
    /// scope element 0; value `.uint32` 0/1.
    public static let enableIO = AudioUnitPropertyID(rawValue: 2003)
    /// Mirrors `kAudioOutputUnitProperty_SetInputCallback` (2005): IO unit, global scope element 0;
    /// value `.inputCallback`.
    public static let setInputCallback = AudioUnitPropertyID(rawValue: 2005)
    /// Mirrors `kAUVoiceIOProperty_BypassVoiceProcessing` (2100): ``VoiceProcessingIOUnit``
    /// only, global scope, element 0; value `.uint32` 0/1, default 0; settable while rendering
    /// (a 10 ms crossfade, no gap).
    public static let bypassVoiceProcessing = AudioUnitPropertyID(rawValue: 2100)
    /// Mirrors `kAUVoiceIOProperty_VoiceProcessingEnableAGC` (2101): ``VoiceProcessingIOUnit``
    /// only, global scope, element 0; value `.uint32` 0/1, default 1 (Apple's); settable while rendering.
    public static let voiceProcessingEnableAGC = AudioUnitPropertyID(rawValue: 2101)
    /// Mirrors `kAUVoiceIOProperty_MuteOutput` (2104): ``VoiceProcessingIOUnit`` only, global
    /// scope, element 0; value `.uint32` 0/1, default 0: element 1's output (the processed
    /// microphone) is silence, ramped over 10 ms; processing goes on. Settable while rendering.
    public static let muteOutput = AudioUnitPropertyID(rawValue: 2104)
    /// Mirrors `kAUNBandEQProperty_NumberOfBands` (2200): ``NBandEQUnit`` only, global scope;
    /// value `.uint32` bands, 1…16; written only while uninitialized.
    public static let nBandEQNumberOfBands = AudioUnitPropertyID(rawValue: 2200)
    /// Mirrors `kAUNBandEQProperty_MaxNumberOfBands` (2201): ``NBandEQUnit`` only, global
    /// scope, read-only; value `.uint32` (16).
    public static let nBandEQMaxNumberOfBands = AudioUnitPropertyID(rawValue: 2201)

    /// The Apple constant name without its prefix, or the number.
    public var description: String {
        switch rawValue {
        case 1: "MakeConnection"; case 2: "SampleRate"; case 8: "StreamFormat"; case 11: "ElementCount"
        case 12: "Latency"; case 14: "MaximumFramesPerSlice"; case 20: "TailTime"; case 23: "SetRenderCallback"
        case 51: "ShouldAllocateBuffer"; case 2003: "EnableIO"; case 2005: "SetInputCallback"
        case 2100: "BypassVoiceProcessing"; case 2101: "VoiceProcessingEnableAGC"; case 2104: "MuteOutput"
        case 2200: "NumberOfBands"; case 2201: "MaxNumberOfBands"
        default: "property \(rawValue)"
        }
    }
}

/// A parameter identifier within a unit (`AudioUnitParameterID`). Each unit type documents its own.
public typealias AudioUnitParameterID = UInt32

/// A connection source for ``AudioUnitPropertyID/makeConnection``: which unit and output element
/// feed the input element the property is set on. Mirrors `AudioUnitConnection`.
public struct AudioUnitConnection: Sendable {
    /// The unit whose output feeds the destination; must be in the same graph.
    public let sourceUnit: AudioUnit?
    /// Output element of `sourceUnit`.
    public let sourceOutputElement: AudioUnitElement
    /// Creates a connection; a `nil` source disconnects.
    public init(sourceUnit: AudioUnit?, sourceOutputElement: AudioUnitElement) {
        self.sourceUnit = sourceUnit
        self.sourceOutputElement = sourceOutputElement
    }
}

/// A property value. Each property documents which case it takes; the wrong case gives
/// ``AudioUnitError/invalidPropertyValue``. Replaces the untyped `void *` + size of
/// `AudioUnitGetProperty`/`AudioUnitSetProperty`.
public enum AudioUnitPropertyValue: Sendable {
    /// A stream format (StreamFormat).
    case streamFormat(StreamFormat)
    /// An unsigned integer (ElementCount, MaximumFramesPerSlice, EnableIO, ShouldAllocateBuffer).
    case uint32(UInt32)
    /// A floating-point value (SampleRate in Hz, Latency and TailTime in seconds).
    case float64(Double)
    /// A render callback, or `nil` to remove it (SetRenderCallback).
    case renderCallback(RenderCallback?)
    /// An input-ready callback, or `nil` to remove it (SetInputCallback).
    case inputCallback(InputCallback?)
    /// A connection (MakeConnection).
    case connection(AudioUnitConnection)
}

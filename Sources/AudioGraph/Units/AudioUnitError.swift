// Units: AudioUnitError, the OSStatus codes every call throws.

/// The errors every AudioGraph call can throw, one case per AudioUnit / AUGraph `OSStatus` code.
///
/// Raw values are the exact codes from Apple's `AUComponent.h` and `AUGraph.h`
/// (`kAudioUnitErr_*`, `kAUGraphErr_*`), so code ported from AUGraph can compare numbers.
/// Every throwing call documents which cases it throws and leaves the graph and its units
/// exactly as they were when it throws.
public enum AudioUnitError: Int32, Error, Sendable, CaseIterable, CustomStringConvertible {
    /// Mirrors `kAudioUnitErr_InvalidProperty` (−10879): the unit has no such property.
    case invalidProperty = -10879
    /// Mirrors `kAudioUnitErr_InvalidParameter` (−10878): no such parameter, or a value that
    /// cannot be clamped (NaN, infinity).
    case invalidParameter = -10878
    /// Mirrors `kAudioUnitErr_InvalidElement` (−10877): the element number does not exist in that scope.
    case invalidElement = -10877
    /// Mirrors `kAudioUnitErr_NoConnection` (−10876): the element has no connection to disconnect.
    case noConnection = -10876
    /// Mirrors `kAudioUnitErr_FailedInitialization` (−10875).
    case failedInitialization = -10875
    /// Mirrors `kAudioUnitErr_TooManyFramesToProcess` (−10874): a slice larger than
    /// MaximumFramesPerSlice.
    case tooManyFramesToProcess = -10874
    /// Mirrors `kAudioUnitErr_InvalidFile` (−10871).
    case invalidFile = -10871
    /// Mirrors `kAudioUnitErr_FormatNotSupported` (−10868): an inconsistent or unsupported stream format.
    case formatNotSupported = -10868
    /// Mirrors `kAudioUnitErr_Uninitialized` (−10867): the call needs an initialized unit or graph.
    case uninitialized = -10867
    /// Mirrors `kAudioUnitErr_InvalidScope` (−10866): the property or parameter does not exist in that scope.
    case invalidScope = -10866
    /// Mirrors `kAudioUnitErr_PropertyNotWritable` (−10865).
    case propertyNotWritable = -10865
    /// Mirrors `kAudioUnitErr_CannotDoInCurrentContext` (−10863): for example an edit from the render thread.
    case cannotDoInCurrentContext = -10863
    /// Mirrors `kAudioUnitErr_InvalidPropertyValue` (−10851): a value of the wrong kind or out of bounds.
    case invalidPropertyValue = -10851
    /// Mirrors `kAudioUnitErr_Initialized` (−10849): the change is only allowed while uninitialized.
    case initialized = -10849
    /// Mirrors `kAUGraphErr_NodeNotFound` (−10860): the node is not (or no longer) in the graph.
    case nodeNotFound = -10860
    /// Mirrors `kAUGraphErr_InvalidConnection` (−10861): the connection would form a cycle, or the
    /// input element is already fed.
    case invalidConnection = -10861
    /// Mirrors `kAUGraphErr_OutputNodeErr` (−10862): the graph has no IO node, or a second one was added.
    case outputNodeErr = -10862
    /// Mirrors `kAUGraphErr_InvalidAudioUnit` (−10864): the unit already belongs to a graph.
    case invalidAudioUnit = -10864

    /// The `OSStatus` value, identical to Apple's.
    public var osStatus: Int32 { rawValue }

    /// What went wrong and what to do about it, in one sentence.
    public var description: String {
        switch self {
        case .invalidProperty: return "invalidProperty (-10879): the unit has no such property; check the property ID against the unit type"
        case .invalidParameter: return "invalidParameter (-10878): no such parameter on this unit, a value outside the range it takes, a value that is NaN or infinite, or a read-only parameter (a meter such as CompressionAmount)"
        case .invalidElement: return "invalidElement (-10877): no such element in that scope (read ElementCount first), or an IO unit's device side: its input element 1 is the device's input and cannot be fed, its output element 0 goes to the device and feeds nothing"
        case .noConnection: return "noConnection (-10876): that input element has no connection or callback to remove"
        case .failedInitialization: return "failedInitialization (-10875): the unit could not allocate its render resources"
        case .tooManyFramesToProcess: return "tooManyFramesToProcess (-10874): the slice is larger than MaximumFramesPerSlice; raise it while uninitialized"
        case .invalidFile: return "invalidFile (-10871): the file cannot be read or written"
        case .formatNotSupported: return "formatNotSupported (-10868): the stream format is inconsistent or not supported here; use StreamFormat.float32 or .int16"
        case .uninitialized: return "uninitialized (-10867): initialize the graph first"
        case .invalidScope: return "invalidScope (-10866): that property or parameter does not live in this scope"
        case .propertyNotWritable: return "propertyNotWritable (-10865): the property is read-only here (device side, or fed by a connection)"
        case .cannotDoInCurrentContext: return "cannotDoInCurrentContext (-10863): not allowed from this thread or in this state"
        case .invalidPropertyValue: return "invalidPropertyValue (-10851): the value has the wrong kind or is out of bounds"
        case .initialized: return "initialized (-10849): this change is only allowed while uninitialized; call uninitialize() first"
        case .nodeNotFound: return "nodeNotFound (-10860): the node is not in the graph (removed, or from another graph)"
        case .invalidConnection: return "invalidConnection (-10861): the connection would make a cycle or the input element is already fed; disconnect it first"
        case .outputNodeErr: return "outputNodeErr (-10862): a graph needs exactly one IO node"
        case .invalidAudioUnit: return "invalidAudioUnit (-10864): the unit already belongs to a graph, or no component matches the description"
        }
    }
}

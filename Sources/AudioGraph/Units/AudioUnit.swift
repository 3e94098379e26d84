// Units: the AudioUnit base class — type, formats, elements, overridable behaviour.

/// The kinds of processing unit the engine provides. Mirrors the `AudioComponentDescription`
/// subtypes an AUGraph app asks for.
public enum AudioUnitType: String, Sendable, CaseIterable {
    /// The device unit (`kAudioUnitSubType_RemoteIO` / `HALOutput`): element 1 = device input, element 0 = device output.
    case io
    /// `kAudioUnitSubType_MultiChannelMixer`: sums any number of input elements into one output.
    case multichannelMixer
    /// `kAudioUnitSubType_LowPassFilter`: a second-order low-pass filter.
    case lowPassFilter
    /// A gain gate with a click-free ramped Mute parameter (no Apple counterpart).
    case muteGate
    /// Your own processing in Swift (``RenderCallbackUnit``); the AUv3 `internalRenderBlock` analogue.
    case renderCallback
    /// `kAudioUnitSubType_AudioFilePlayer`: streams a file from disk (``AudioFilePlayerUnit``).
    case audioFilePlayer
    /// `kAudioUnitSubType_Splitter`: one input copied to several output elements (``SplitterUnit``).
    case splitter
    /// Web Audio's ChannelSplitterNode: each input channel to its own mono output element (``ChannelSplitterUnit``).
    case channelSplitter
    /// `kAudioUnitSubType_Merger` / Web Audio's ChannelMergerNode: input elements' channels side by side in one output (``MergerUnit``).
    case merger
    /// A convolution reverb (Web Audio's ConvolverNode, PipeWire's convolver; ``ConvolutionReverbUnit``).
    case convolutionReverb
    /// `kAudioUnitSubType_DynamicsProcessor`: a compressor/expander (``DynamicsProcessorUnit``).
    case dynamicsProcessor
    /// `kAudioUnitSubType_PeakLimiter`: a look-ahead peak limiter (``PeakLimiterUnit``).
    case peakLimiter
    /// A band-limited oscillator, Web Audio's `OscillatorNode` (``OscillatorUnit``); no Apple counterpart.
    case oscillator
    /// White or pink noise (``NoiseUnit``); no Apple counterpart.
    case noise
    /// A constant value, Web Audio's `ConstantSourceNode` (``ConstantSourceUnit``); no Apple counterpart.
    case constantSource
    /// `kAudioUnitSubType_HighPassFilter` (AUHipass): ``HighPassFilterUnit``.
    case highPassFilter
    /// `kAudioUnitSubType_BandPassFilter` (AUBandpass): ``BandPassFilterUnit``.
    case bandPassFilter
    /// `kAudioUnitSubType_LowShelfFilter` (AULowShelf): ``LowShelfFilterUnit``.
    case lowShelfFilter
    /// `kAudioUnitSubType_HighShelfFilter` (AUHighShelf): ``HighShelfFilterUnit``.
    case highShelfFilter
    /// `kAudioUnitSubType_ParametricEQ` (AUParametricEQ): ``ParametricEQUnit``.
    case parametricEQ
    /// A notch (band-stop) biquad, ``NotchFilterUnit`` (no Apple unit of its own; AUNBandEQ's BandStop band).
    case notchFilter
    /// An all-pass biquad, ``AllPassFilterUnit`` (no Apple counterpart; Web Audio's "allpass").
    case allPassFilter
    /// `kAudioUnitSubType_NBandEQ` (AUNBandEQ): ``NBandEQUnit``.
    case nBandEQ
    /// `kAudioUnitSubType_Delay` (AUDelay): ``DelayUnit``.
    case delay
    /// `kAudioUnitSubType_SampleDelay` (AUSampleDelay): ``SampleDelayUnit``.
    case sampleDelay
    /// `kAudioUnitSubType_Varispeed` (AUVarispeed): ``VarispeedUnit``.
    case varispeed
    /// `kAudioUnitSubType_NewTimePitch` (AUNewTimePitch): ``TimePitchUnit``.
    case timePitch
}

/// A processing unit with scoped, numbered elements, properties and parameters: the `AudioUnit`
/// analogue.
///
/// Create one of the concrete units (``IOUnit``, ``MultichannelMixerUnit``, ``LowPassFilterUnit``,
/// ``MuteGateUnit``) and add it to an ``AudioGraph``. Properties are read and written by
/// (property, scope, element), parameters by (id, scope, element), with the exact AudioUnit error
/// codes for bad calls. A call that throws changes nothing.
///
/// Thread: properties from a control thread (one at a time); parameters from any thread
/// (lock-free, picked up by the render thread at the next slice).
/// Subclassing: `open` only so ``RenderCallbackUnit`` can be (its initializers are the only
/// ones other modules can reach; hosted plugins subclass it).
/// SAFETY (`@unchecked Sendable`): properties are control-thread calls (documented); parameters are atomics and a lock-free queue; the render thread sees only the plan's pointers.
open class AudioUnit: @unchecked Sendable, CustomStringConvertible {
    /// The unit's type.
    public let type: AudioUnitType

    // Application-visible formats per element (index = element).
    var inputFormats: [StreamFormat]
    var outputFormats: [StreamFormat]
    // Formats the application set itself; the others follow the graph's sample rate.
    var explicitFormats: Set<FormatKey> = []
    var shouldAllocateBuffer: [FormatKey: Bool] = [:]
    var maximumFramesPerSlice: UInt32 = 1024
    /// Whether the unit has render resources (set when its graph initializes it).
    public internal(set) var isInitialized = false

    // Graph membership (control thread).
    weak var graph: AudioGraph?
    var node: AUNode?
    // Callbacks stored while the unit is outside a graph; handed to the graph on addNode.
    var detachedRenderCallbacks: [AudioUnitElement: RenderCallback] = [:]

    // Parameters: groups of per-element values; bank slots are laid out group by group.
    var bank: ParameterBank
    // Render-thread state owned by the unit, kept across plan rebuilds (filter memory, ramps).
    var kernel: KernelStorage?
    // Observers (taps, meters) of the output elements, and a kernel's render context; the plan points here.
    let renderLinks = UnitRenderLinks()

    struct FormatKey: Hashable { let scope: AudioUnitScope; let element: AudioUnitElement }

    /// The unit type's parameters, split by scope once, so parameter calls never allocate.
    struct ParameterTable {
        let all: [AudioUnitParameterInfo]
        let input: [AudioUnitParameterInfo]
        let output: [AudioUnitParameterInfo]
        let global: [AudioUnitParameterInfo]
        init(_ all: [AudioUnitParameterInfo]) {
            self.all = all
            input = all.filter { $0.scope == .input }
            output = all.filter { $0.scope == .output }
            global = all.filter { $0.scope == .global }
        }
    }
    // A var only for units whose parameter list follows a property set while uninitialized (NBandEQ's band count).
    var parameters: ParameterTable

    init(type: AudioUnitType, inputFormats: [StreamFormat], outputFormats: [StreamFormat],
         parameterDefinitions: [AudioUnitParameterInfo]? = nil) {
        self.parameters = ParameterTable(parameterDefinitions ?? Self.parameterDefinitions)
        self.type = type
        self.inputFormats = inputFormats
        self.outputFormats = outputFormats
        self.bank = ParameterBank(values: [])
        self.bank = ParameterBank(values: defaultParameterValues(inputElements: inputFormats.count))
    }

    /// For example `multichannelMixer (node 3)`.
    public var description: String {
        if let node { return "\(type.rawValue) (node \(node.rawValue))" }
        return type.rawValue
    }

    // MARK: - Overridable behaviour (internal)

    /// Parameters per scope; input-scope and output-scope ones exist once per element.
    class var parameterDefinitions: [AudioUnitParameterInfo] { [] }

    /// Unit-specific properties (IO: EnableIO, SetInputCallback).
    func getUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> AudioUnitPropertyValue {
        throw .invalidProperty
    }

    /// Writes a unit-specific property (the IO unit's).
    func setUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, _ value: AudioUnitPropertyValue) throws(AudioUnitError) {
        throw .invalidProperty
    }

    /// Whether input element 0 and output element 0 always share one format (filters, gates).
    var linksInputAndOutputFormats: Bool { false }

    /// Whether connecting to the input element one past the last adds that element (mixers:
    /// AVAudioMixerNode's `nextAvailableInputBus` behaviour), even while initialized.
    var growsInputsByConnection: Bool { false }

    /// Whether the element count of `scope` may be changed (mixer inputs).
    func canSetElementCount(_ scope: AudioUnitScope) -> Bool { false }

    /// Whether (scope, element) is a device side whose format the app cannot write (IO unit).
    func isDeviceSide(_ scope: AudioUnitScope, _ element: AudioUnitElement) -> Bool { false }

    /// Unit-specific format rules beyond ``StreamFormat/validate()``: a unit renders Float32
    /// non-interleaved at its output format (any rate and channel count); its inputs take any
    /// valid format, which the graph converts to the output's rate and channel count.
    func checkFormat(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) {
        if scope == .output { guard format.isCanonical else { throw .formatNotSupported } }
    }

    /// The channel count the kernel reads on input element `element` (connections are converted
    /// to it): the output's, except for units whose inputs keep their own (a merger's).
    func processingChannels(ofInput element: Int, outputChannels: Int) -> Int { outputChannels }

    /// Whether the kernel takes an input of `inputChannels` as it is (no conversion) when the
    /// output has `outputChannels` and the rates match.
    func acceptsInputChannels(_ inputChannels: Int, outputChannels: Int) -> Bool {
        inputChannels == outputChannels
    }

    /// The largest latency the unit's input conversions add, in seconds (set when a plan is applied).
    var conversionLatency: Double = 0

    /// Latency the unit's own processing adds, in seconds: how much later than its input a
    /// feature of the signal appears at its output (a limiter's look-ahead, a block-based
    /// process's block). 0 for units that do not delay. Read on the control thread when a plan
    /// is built: paths through the unit count it, and the Latency property reports it with the
    /// conversions'. A unit whose latency changes must ask its graph for an update.
    var processingLatency: Double { 0 }

    /// Seconds the unit's tail lasts after its input stops (a reverb's decay, a delay's
    /// repeats): the TailTime property. 0 for units without a tail.
    var tailTime: Double { 0 }

    /// The parameter's upper bound at the unit's current sample rate.
    func maxValue(of info: AudioUnitParameterInfo) -> Float { info.maxValue }

    /// The sample rate the unit currently runs at (its first output format's).
    var currentSampleRate: Double {
        // No `??`: its autoclosures allocate in unoptimized builds (parameter calls read this).
        if !outputFormats.isEmpty { return outputFormats[0].sampleRate }
        if !inputFormats.isEmpty { return inputFormats[0].sampleRate }
        return 48_000
    }

    // MARK: - Elements

    /// Number of elements in a scope: 1 for global, else the unit's input or output element count.
    /// Mirrors reading `kAudioUnitProperty_ElementCount`.
    public func elementCount(_ scope: AudioUnitScope) -> UInt32 {
        switch scope {
        case .global: return 1
        case .input: return UInt32(inputFormats.count)
        case .output: return UInt32(outputFormats.count)
        }
    }

    func checkElement(_ scope: AudioUnitScope, _ element: AudioUnitElement) throws(AudioUnitError) {
        guard element < elementCount(scope) else { throw .invalidElement }
    }

    // MARK: - Render resources

    /// The kernel kind the render plan dispatches on.
    var kernelKind: KernelKind { .passthrough }

    /// Bytes of kernel state (the unit's typed state struct and what follows it) needed for the
    /// given resolved formats; 0 for none.
    func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { 0 }

    /// Bytes of kernel state at the rate the plan runs the unit at (Hz; the unit's own format
    /// may follow the graph's rate instead): what the plan builder asks. Units whose state
    /// depends on the rate (a delay line sized in seconds) override this; the default is
    /// ``kernelStateSize(inputChannels:outputChannels:)``.
    func kernelStateSize(inputChannels: [Int], outputChannels: Int, sampleRate: Double) -> Int {
        kernelStateSize(inputChannels: inputChannels, outputChannels: outputChannels)
    }

    /// Sets a fresh kernel state to where the current parameters put it, so a new unit does not
    /// ramp from zero on its first slice.
    /// The memory arrives zeroed (a valid state for every kernel that does not override this).
    func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {}

    /// Frees what ``prepareKernelState(_:inputCount:)`` allocated outside the state memory (a C
    /// library's instance), when the storage is freed (control thread, after the last plan
    /// using it). nil for kernels whose state is all in the memory (the default).
    var kernelStateRelease: (@Sendable (UnsafeMutableRawPointer) -> Void)? { nil }

    /// Refuses a parameter value the unit cannot take, beyond the checks every parameter gets
    /// (finite, writable): the time-pitch units refuse values outside their ranges. Any thread;
    /// must not allocate or lock. The default accepts.
    func checkParameterValue(_ info: AudioUnitParameterInfo, _ value: Float) throws(AudioUnitError) {}

    /// Called after ``setParameter(_:_:scope:element:)`` stored a value, so a unit can update a
    /// linked parameter (varispeed's rate and cents). Same thread rules as setParameter.
    func parameterDidChange(_ id: AudioUnitParameterID, _ value: Float) {}

    func renderCallback(element: AudioUnitElement) -> RenderCallback? {
        if let graph, let node { return graph.pendingRenderCallback(node, element) }
        return detachedRenderCallbacks[element]
    }
}

/// Zero-initialized memory for a unit's render-thread state (filter memory, current gains),
/// typed by the unit's kernel (`LowPassState`, `MixerState`, …). Allocated on a control thread,
/// read and written only by the render thread while a plan that references it is published,
/// freed on a control thread.
/// SAFETY (`@unchecked Sendable`): an immutable pointer and size; the memory is touched by one
/// thread at a time (the control thread before publication, then only the render thread).
final class KernelStorage: @unchecked Sendable {
    /// Size in bytes.
    let byteCount: Int
    /// 16-byte aligned, zeroed at allocation.
    let bytes: UnsafeMutableRawPointer
    init(byteCount: Int) {
        self.byteCount = byteCount
        bytes = .allocate(byteCount: max(16, byteCount), alignment: 16)
        bytes.initializeMemory(as: UInt8.self, repeating: 0, count: max(16, byteCount))
    }
    /// Frees what the unit allocated outside the memory (``AudioUnit/kernelStateRelease``).
    var release: (@Sendable (UnsafeMutableRawPointer) -> Void)?
    deinit {
        release?(bytes)
        bytes.deallocate()
    }
}

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
public class AudioUnit: @unchecked Sendable, CustomStringConvertible {
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
    let parameters: ParameterTable

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

    /// Whether the kernel takes an input of `inputChannels` as it is (no conversion) when the
    /// output has `outputChannels` and the rates match.
    func acceptsInputChannels(_ inputChannels: Int, outputChannels: Int) -> Bool {
        inputChannels == outputChannels
    }

    /// The largest latency the unit's input conversions add, in seconds (set when a plan is applied).
    var conversionLatency: Double = 0

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

    // MARK: - Properties

    /// Reads a property. Mirrors `AudioUnitGetProperty`.
    /// - Parameters:
    ///   - id: the property; see ``AudioUnitPropertyID`` for each one's scope and value kind.
    ///   - scope: where to read it.
    ///   - element: 0…elementCount(scope)−1 (0 for global).
    /// - Returns: the value, in the case documented for the property.
    /// - Throws: ``AudioUnitError/invalidProperty`` (unknown or not on this unit),
    ///   ``AudioUnitError/invalidScope``, ``AudioUnitError/invalidElement``.
    /// - Thread: control thread.
    public func getProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> AudioUnitPropertyValue {
        switch id {
        case .streamFormat:
            return .streamFormat(try streamFormat(scope: scope, element: element))
        case .sampleRate:
            return .float64(try streamFormat(scope: scope, element: element).sampleRate)
        case .elementCount:
            return .uint32(elementCount(scope))
        case .latency:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            return .float64(conversionLatency)
        case .tailTime:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            return .float64(0)
        case .maximumFramesPerSlice:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            return .uint32(maximumFramesPerSlice)
        case .shouldAllocateBuffer:
            guard scope != .global else { throw .invalidScope }
            try checkElement(scope, element)
            return .uint32(shouldAllocateBuffer[FormatKey(scope: scope, element: element)] ?? true ? 1 : 0)
        case .setRenderCallback:
            guard scope == .input else { throw .invalidScope }
            try checkElement(scope, element)
            return .renderCallback(renderCallback(element: element))
        default:
            return try getUnitProperty(id, scope: scope, element: element)
        }
    }

    /// Unit-specific properties (IO: EnableIO, SetInputCallback).
    func getUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> AudioUnitPropertyValue {
        throw .invalidProperty
    }

    func setUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, _ value: AudioUnitPropertyValue) throws(AudioUnitError) {
        throw .invalidProperty
    }

    /// Writes a property. Mirrors `AudioUnitSetProperty`.
    ///
    /// Rules (shared/REFERENCE.md): StreamFormat, SampleRate, MaximumFramesPerSlice, ElementCount,
    /// ShouldAllocateBuffer and EnableIO change only while uninitialized; writing a value equal to
    /// the current one is a successful no-op in any state; an input element fed by a connection
    /// and the IO unit's device sides are read-only. SetRenderCallback and MakeConnection on a unit
    /// in a graph are queued as graph edits and take effect at the graph's next `update()`.
    /// - Parameters:
    ///   - id: the property; see ``AudioUnitPropertyID`` for scope and value kind.
    ///   - scope: where to write it.
    ///   - element: 0…elementCount(scope)−1 (0 for global).
    ///   - value: the new value, in the case documented for the property.
    /// - Throws: ``AudioUnitError/invalidProperty``, ``AudioUnitError/invalidScope``,
    ///   ``AudioUnitError/invalidElement``, ``AudioUnitError/invalidPropertyValue`` (wrong kind or
    ///   bounds), ``AudioUnitError/formatNotSupported``, ``AudioUnitError/propertyNotWritable``,
    ///   ``AudioUnitError/initialized``, and for callbacks and connections the graph edit errors.
    /// - Thread: control thread.
    public func setProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, _ value: AudioUnitPropertyValue) throws(AudioUnitError) {
        try graph?.checkControlThread()
        switch id {
        case .streamFormat:
            guard case .streamFormat(let format) = value else { throw .invalidPropertyValue }
            try setStreamFormat(format, scope: scope, element: element)
        case .sampleRate:
            guard case .float64(let rate) = value else { throw .invalidPropertyValue }
            let current = try streamFormat(scope: scope, element: element)
            try setStreamFormat(try current.withSampleRate(rate), scope: scope, element: element)
        case .elementCount:
            guard case .uint32(let count) = value else { throw .invalidPropertyValue }
            try setElementCount(count, scope: scope)
        case .latency, .tailTime:
            guard scope == .global else { throw .invalidScope }
            throw .propertyNotWritable
        case .maximumFramesPerSlice:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            guard case .uint32(let frames) = value, frames >= 1, frames <= 65_536 else { throw .invalidPropertyValue }
            if frames == maximumFramesPerSlice { return }
            guard !isInitialized else { throw .initialized }
            maximumFramesPerSlice = frames
        case .shouldAllocateBuffer:
            guard scope != .global else { throw .invalidScope }
            try checkElement(scope, element)
            guard case .uint32(let flag) = value, flag <= 1 else { throw .invalidPropertyValue }
            let key = FormatKey(scope: scope, element: element)
            if (shouldAllocateBuffer[key] ?? true) == (flag == 1) { return }
            guard !isInitialized else { throw .initialized }
            shouldAllocateBuffer[key] = flag == 1
        case .setRenderCallback:
            guard scope == .input else { throw .invalidScope }
            try checkElement(scope, element)
            guard case .renderCallback(let callback) = value else { throw .invalidPropertyValue }
            if let graph, let node {
                if let callback { try graph.setNodeInputCallback(node, inputElement: element, callback) }
                else { try graph.disconnectNodeInput(node, inputElement: element) }
            } else {
                detachedRenderCallbacks[element] = callback
            }
        case .makeConnection:
            guard scope == .input else { throw .invalidScope }
            try checkElement(scope, element)
            guard case .connection(let connection) = value else { throw .invalidPropertyValue }
            guard let graph, let node else { throw .uninitialized }
            if let source = connection.sourceUnit {
                guard source.graph === graph, let sourceNode = source.node else { throw .nodeNotFound }
                try graph.connectNodeInput(sourceNode, sourceOutputElement: connection.sourceOutputElement,
                                           node, destinationInputElement: element)
            } else {
                try graph.disconnectNodeInput(node, inputElement: element)
            }
        default:
            try setUnitProperty(id, scope: scope, element: element, value)
        }
    }

    /// The stream format of one element side. Typed form of reading `.streamFormat`.
    /// - Throws: ``AudioUnitError/invalidScope`` (global), ``AudioUnitError/invalidElement``.
    /// - Thread: control thread.
    public func streamFormat(scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> StreamFormat {
        try checkElement(scope, element)
        switch scope {
        case .global: throw .invalidScope
        case .input: return inputFormats[Int(element)]
        case .output: return outputFormats[Int(element)]
        }
    }

    /// Sets the stream format of one element side. Typed form of writing `.streamFormat`.
    ///
    /// For the low-pass filter and mute gate, whose input and output always match, setting either
    /// side sets both.
    /// - Parameters:
    ///   - format: a valid Float32 non-interleaved format (other layouts: formatNotSupported).
    ///   - scope: `.input` or `.output`.
    ///   - element: 0…elementCount(scope)−1.
    /// - Throws: ``AudioUnitError/invalidScope``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/formatNotSupported``, ``AudioUnitError/propertyNotWritable`` (device side,
    ///   or an input fed by a connection), ``AudioUnitError/initialized``.
    /// - Thread: control thread.
    public func setStreamFormat(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) {
        try graph?.checkControlThread()
        let current = try streamFormat(scope: scope, element: element)
        try format.validate()
        if isDeviceSide(scope, element) { throw .propertyNotWritable }
        if scope == .input, let graph, let node, graph.isInputConnected(node, element) { throw .propertyNotWritable }
        if format == current {
            explicitFormats.insert(FormatKey(scope: scope, element: element))
            return
        }
        guard !isInitialized else { throw .initialized }
        try checkFormat(format, scope: scope, element: element)
        applyFormat(format, scope: scope, element: element)
    }

    /// Whether input element 0 and output element 0 always share one format (filters, gates).
    var linksInputAndOutputFormats: Bool { false }

    /// Stores a checked format (on both sides for units that link them).
    func applyFormat(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) {
        let sides: [AudioUnitScope] = linksInputAndOutputFormats ? [.input, .output] : [scope]
        for side in sides {
            // A linked output renders the input's rate and channels, as Float32 non-interleaved.
            let stored = side == scope ? format : format.canonical
            if side == .input { inputFormats[Int(element)] = stored } else { outputFormats[Int(element)] = stored }
            explicitFormats.insert(FormatKey(scope: side, element: element))
        }
    }

    func setElementCount(_ count: UInt32, scope: AudioUnitScope) throws(AudioUnitError) {
        if count == elementCount(scope) { return }
        guard canSetElementCount(scope) else { throw .propertyNotWritable }
        guard count <= 1024 else { throw .invalidPropertyValue }
        guard !isInitialized else { throw .initialized }
        // A connected element may not disappear.
        if let graph, let node, count < elementCount(scope) {
            for element in count..<elementCount(scope) where graph.isInputConnected(node, element) {
                throw .invalidPropertyValue
            }
        }
        resizeInputs(Int(count))
    }

    /// Whether connecting to the input element one past the last adds that element (mixers:
    /// AVAudioMixerNode's `nextAvailableInputBus` behaviour), even while initialized.
    var growsInputsByConnection: Bool { false }

    /// Sets the input element count, keeping the formats and parameter values of elements that
    /// stay (new ones copy the first input's format, or the output's). Control thread.
    func resizeInputs(_ count: Int) {
        let template = inputFormats.first ?? outputFormats[0]
        let old = bank
        if count < inputFormats.count { inputFormats.removeLast(inputFormats.count - count) }
        while inputFormats.count < count { inputFormats.append(template) }
        bank = ParameterBank(values: defaultParameterValues(inputElements: inputFormats.count))
        // Keep the values of elements that still exist.
        let oldInputs = (old.count - parameters.output.count * outputFormats.count - parameters.global.count) / max(1, parameters.input.count)
        for info in parameters.all {
            let elements = info.scope == .input ? min(inputFormats.count, oldInputs) : Int(elementCount(info.scope))
            for element in 0..<elements {
                if let from = slot(info, element: element, inputElements: oldInputs),
                   let to = slot(info, element: element, inputElements: inputFormats.count) {
                    bank.store(to, old.load(from))
                }
            }
        }
    }

    // MARK: - Parameters

    /// Bank layout: input-scope parameters (element-major), then output-scope ones for each
    /// output element, then global ones.
    func slot(_ info: AudioUnitParameterInfo, element: Int, inputElements: Int) -> Int? {
        // Plain index loops rather than firstIndex(where:): fewer allocations in unoptimized
        // builds. Optimized builds allocate nothing here either way (RealTimeSafetyTests).
        let p = parameters
        switch info.scope {
        case .input:
            guard element < inputElements, let i = AudioUnit.index(of: info.id, in: p.input) else { return nil }
            return element * p.input.count + i
        case .output:
            guard element < outputFormats.count, let i = AudioUnit.index(of: info.id, in: p.output) else { return nil }
            return inputElements * p.input.count + element * p.output.count + i
        case .global:
            guard element == 0, let i = AudioUnit.index(of: info.id, in: p.global) else { return nil }
            return inputElements * p.input.count + outputFormats.count * p.output.count + i
        }
    }

    private static func index(of id: AudioUnitParameterID, in list: [AudioUnitParameterInfo]) -> Int? {
        var i = 0
        while i < list.count {
            if list[i].id == id { return i }
            i += 1
        }
        return nil
    }

    func defaultParameterValues(inputElements: Int) -> [Float] {
        var values: [Float] = []
        for _ in 0..<inputElements { values += parameters.input.map(\.defaultValue) }
        for _ in 0..<outputFormats.count { values += parameters.output.map(\.defaultValue) }
        values += parameters.global.map(\.defaultValue)
        return values
    }

    /// The parameters that exist in a scope (once per element of that scope).
    /// Thread: any.
    public func parameterList(scope: AudioUnitScope) -> [AudioUnitParameterInfo] {
        parameters.all.filter { $0.scope == scope }.map(withCurrentBounds)
    }

    /// Describes one parameter. Mirrors reading `kAudioUnitProperty_ParameterInfo`.
    /// - Throws: ``AudioUnitError/invalidParameter`` (no such ID on this unit),
    ///   ``AudioUnitError/invalidScope`` (the ID exists, in another scope).
    /// - Thread: any.
    public func parameterInfo(_ id: AudioUnitParameterID, scope: AudioUnitScope) throws(AudioUnitError) -> AudioUnitParameterInfo {
        withCurrentBounds(try definition(id, scope: scope))
    }

    /// The stored definition, found without allocating.
    private func definition(_ id: AudioUnitParameterID, scope: AudioUnitScope) throws(AudioUnitError) -> AudioUnitParameterInfo {
        var known = false
        var i = 0
        let all = parameters.all
        while i < all.count {
            if all[i].id == id {
                if all[i].scope == scope { return all[i] }
                known = true
            }
            i += 1
        }
        throw known ? .invalidScope : .invalidParameter
    }

    private func withCurrentBounds(_ info: AudioUnitParameterInfo) -> AudioUnitParameterInfo {
        AudioUnitParameterInfo(id: info.id, name: info.name, scope: info.scope, unit: info.unit,
                               minValue: info.minValue, maxValue: maxValue(of: info),
                               defaultValue: info.defaultValue, clampsToRange: info.clampsToRange)
    }

    private func resolveSlot(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> (AudioUnitParameterInfo, Int) {
        let info = try definition(id, scope: scope)
        try checkElement(scope, element)
        guard let slot = slot(info, element: Int(element), inputElements: inputFormats.count) else { throw .invalidElement }
        return (info, slot)
    }

    /// Reads a parameter. Mirrors `AudioUnitGetParameter`.
    /// - Parameters:
    ///   - id: the unit type's parameter ID (see each unit's `Parameter` enum).
    ///   - scope: the scope the parameter lives in.
    ///   - element: 0…elementCount(scope)−1.
    /// - Returns: the stored value, after any clamping.
    /// - Throws: ``AudioUnitError/invalidParameter``, ``AudioUnitError/invalidScope``, ``AudioUnitError/invalidElement``.
    /// - Thread: any; lock-free, allocation-free (safe in a render callback). Not concurrently
    ///   with ElementCount changes, which are control-thread calls made while uninitialized.
    public func parameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement = 0) throws(AudioUnitError) -> Float {
        let (_, slot) = try resolveSlot(id, scope: scope, element: element)
        return bank.load(slot)
    }

    /// Sets a parameter; the render thread picks it up at the start of the next slice, and units
    /// glide to it rather than jump (the mixer across that slice, the low-pass filter's cutoff
    /// with a 5 ms time constant, the mute gate over its RampTime), so changes never click.
    /// Mirrors `AudioUnitSetParameter` with a buffer offset of 0. Re-setting the current value
    /// changes nothing. For sample-accurate steps and ramps see ``scheduleParameters(_:)``.
    ///
    /// Values outside the documented range are clamped (and the clamped value reads back) for
    /// parameters with `clampsToRange`; others store any finite value.
    /// - Parameters:
    ///   - id: the unit type's parameter ID.
    ///   - value: in the parameter's unit; finite.
    ///   - scope: the scope the parameter lives in.
    ///   - element: 0…elementCount(scope)−1.
    /// - Throws: ``AudioUnitError/invalidParameter`` (unknown ID, NaN or infinite value),
    ///   ``AudioUnitError/invalidScope``, ``AudioUnitError/invalidElement``.
    /// - Thread: any; lock-free, allocation-free, never blocks (safe in a render callback). Not
    ///   concurrently with ElementCount changes, which are control-thread calls made while uninitialized.
    public func setParameter(_ id: AudioUnitParameterID, _ value: Float, scope: AudioUnitScope, element: AudioUnitElement = 0) throws(AudioUnitError) {
        let (info, slot) = try resolveSlot(id, scope: scope, element: element)
        let v = try checkedValue(value, info)
        bank.store(slot, v)
        // A ramp running on this parameter stops: the value just set wins.
        if bank.automation.used.load(ordering: .relaxed) {
            _ = bank.automation.enqueue(ParameterChange(kind: .cancel, slot: Int32(slot), value: v, from: .nan,
                                                        offset: 0, duration: 0, start: 0))
        }
    }

    /// A value as the parameter stores it: clamped for parameters with `clampsToRange`, 0 or 1
    /// for booleans; NaN and infinities refused.
    private func checkedValue(_ value: Float, _ info: AudioUnitParameterInfo) throws(AudioUnitError) -> Float {
        guard value.isFinite else { throw .invalidParameter }
        var v = value
        if info.clampsToRange { v = min(max(v, info.minValue), maxValue(of: info)) }
        if info.unit == .boolean { v = v >= 0.5 ? 1 : 0 }
        return v
    }

    /// Schedules parameter changes sample-accurately: the `AudioUnitScheduleParameters` analogue
    /// (plus Web Audio's `setTargetAtTime`). Each event starts `bufferOffset` frames (at the
    /// unit's rate) into the next slice the unit renders; a later ``setParameter(_:_:scope:element:)``
    /// on the same parameter stops a ramp in progress.
    ///
    /// Values are clamped as ``setParameter(_:_:scope:element:)`` clamps them. Every event is
    /// checked before any is queued, so a bad one changes nothing.
    /// - Parameter events: immediate changes, linear ramps (1…``AudioUnitParameterEvent/maximumDurationFrames``
    ///   frames) and target approaches (time constant > 0 and ≤ 60 s), each with a buffer offset
    ///   0…``AudioUnitParameterEvent/maximumBufferOffset``. Ramps need a continuous parameter
    ///   (not Enable or Mute).
    /// - Throws: ``AudioUnitError/invalidParameter`` (unknown ID, NaN or infinite value, a ramp
    ///   on a boolean), ``AudioUnitError/invalidScope``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/invalidPropertyValue`` (offset, duration or time constant out of bounds),
    ///   ``AudioUnitError/cannotDoInCurrentContext`` when the unit's queue (256 changes not yet
    ///   taken by the render thread) is full — events before the one refused stay scheduled.
    /// - Thread: any; lock-free (the array is copied, so it allocates: from a render callback
    ///   use ``scheduleParameter(_:)``).
    public func scheduleParameters(_ events: [AudioUnitParameterEvent]) throws(AudioUnitError) {
        var changes: [ParameterChange] = []
        changes.reserveCapacity(events.count)
        for event in events { changes.append(try change(for: event)) }
        bank.automation.used.store(true, ordering: .relaxed)
        for change in changes {
            guard bank.automation.enqueue(change) else { throw .cannotDoInCurrentContext }
        }
    }

    /// Schedules one parameter change; as ``scheduleParameters(_:)``, without allocating.
    /// - Thread: any; lock-free and allocation-free (a render callback may schedule).
    public func scheduleParameter(_ event: AudioUnitParameterEvent) throws(AudioUnitError) {
        let change = try change(for: event)
        bank.automation.used.store(true, ordering: .relaxed)
        guard bank.automation.enqueue(change) else { throw .cannotDoInCurrentContext }
    }

    /// Checks an event and makes the queued form of it.
    private func change(for event: AudioUnitParameterEvent) throws(AudioUnitError) -> ParameterChange {
        let (info, slot) = try resolveSlot(event.id, scope: event.scope, element: event.element)
        guard (0...AudioUnitParameterEvent.maximumBufferOffset).contains(event.bufferOffset) else { throw .invalidPropertyValue }
        var change = ParameterChange(kind: .immediate, slot: Int32(slot), value: 0, from: .nan,
                                     offset: event.bufferOffset, duration: 0, start: 0)
        switch event.kind {
        case .immediate(let value):
            change.value = try checkedValue(value, info)
        case .linearRamp(let from, let to, let duration):
            guard info.unit != .boolean else { throw .invalidParameter }
            guard (1...AudioUnitParameterEvent.maximumDurationFrames).contains(duration) else { throw .invalidPropertyValue }
            change.kind = .linear
            change.value = try checkedValue(to, info)
            if let from { change.from = try checkedValue(from, info) }
            change.duration = Double(duration)
        case .target(let target, let timeConstant):
            guard info.unit != .boolean else { throw .invalidParameter }
            guard timeConstant.isFinite, timeConstant > 0, timeConstant <= 60 else { throw .invalidPropertyValue }
            change.kind = .target
            change.value = try checkedValue(target, info)
            change.duration = timeConstant * currentSampleRate
        }
        return change
    }

    /// Sets a parameter `bufferOffset` frames into the next slice: `AudioUnitSetParameter` with
    /// its `inBufferOffsetInFrames`. The same as scheduling an immediate event.
    /// - Throws: as ``scheduleParameters(_:)``.
    /// - Thread: any.
    public func setParameter(_ id: AudioUnitParameterID, _ value: Float, scope: AudioUnitScope, element: AudioUnitElement = 0,
                             bufferOffset: Int) throws(AudioUnitError) {
        try scheduleParameter(AudioUnitParameterEvent(id: id, scope: scope, element: element, bufferOffset: bufferOffset,
                                                       .immediate(value: value)))
    }

    // MARK: - Render resources

    /// The kernel kind the render plan dispatches on.
    var kernelKind: KernelKind { .passthrough }

    /// Bytes of kernel state (the unit's typed state struct and what follows it) needed for the
    /// given resolved formats; 0 for none.
    func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { 0 }

    /// Sets a fresh kernel state to where the current parameters put it, so a new unit does not
    /// ramp from zero on its first slice.
    /// The memory arrives zeroed (a valid state for every kernel that does not override this).
    func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {}

    func renderCallback(element: AudioUnitElement) -> RenderCallback? {
        if let graph, let node { return graph.pendingRenderCallback(node, element) }
        return detachedRenderCallbacks[element]
    }
}

/// Zero-initialized memory for a unit's render-thread state (filter memory, current gains),
/// typed by the unit's kernel (`LowPassState`, `MixerState`, …). Allocated on a control thread,
/// read and written only by the render thread while a plan that references it is published,
/// freed on a control thread.
// SAFETY: @unchecked Sendable — immutable pointer and size; the memory behind it is touched by
// one thread at a time (the control thread before publication, then only the render thread).
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
    deinit { bytes.deallocate() }
}

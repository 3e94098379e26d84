// Units: reading and writing an AudioUnit's properties (AudioUnitGetProperty / AudioUnitSetProperty), formats and element counts.

extension AudioUnit {
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
            return .float64(conversionLatency + processingLatency)
        case .tailTime:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            return .float64(tailTime)
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

    /// Writes a property. Mirrors `AudioUnitSetProperty`.
    ///
    /// Rules (as Apple's audio units apply them): StreamFormat, SampleRate, MaximumFramesPerSlice, ElementCount,
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
}

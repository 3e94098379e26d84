/// Compiling a topology into a render plan (control thread; allocates).
extension AudioGraph {
    struct ResolvedFormats {
        var inputs: [StreamFormat?]
        var outputs: [StreamFormat]
    }

    struct BuiltPlan {
        let resources: PlanResources
        let formats: [AUNode: ResolvedFormats]
        let kernels: [AUNode: KernelStorage]
        /// Every converter the plan uses, to keep for the next plan.
        let converters: [ConverterKey: ConverterStorage]
        /// Per unit: the largest latency its input conversions add, in seconds.
        let unitLatency: [AUNode: Double]
        /// Device input to device output through the plan's conversions, in seconds.
        let latency: Double
    }

    /// The format an element side has at the graph's rate: formats the application set keep
    /// their rate, the others follow the device.
    private func effective(_ unit: AudioUnit, _ scope: AudioUnitScope, _ element: AudioUnitElement, rate: Double) -> StreamFormat {
        let stored = scope == .input ? unit.inputFormats[Int(element)] : unit.outputFormats[Int(element)]
        if unit.explicitFormats.contains(AudioUnit.FormatKey(scope: scope, element: element)) { return stored }
        return (try? stored.withSampleRate(rate)) ?? stored
    }

    /// Builds the plan for `topology`: pull order, formats propagated along connections and
    /// checked, converters where an element's format differs from what its unit processes,
    /// buffers and kernel state allocated. Nothing outside the result is modified.
    func buildPlan(_ topology: Topology) throws(AudioUnitError) -> BuiltPlan {
        guard let (ioNode, io) = topology.io else {
            throw .outputNodeErr
        }
        let rate = io.deviceOutputFormat.sampleRate
        guard io.deviceInputFormat.sampleRate == rate else { throw .formatNotSupported }
        // The IO unit's application input side: any valid format, converted from the device's.
        let ioIn = effective(io, .output, IOUnit.inputElement, rate: rate)

        // Pull order: depth-first from what feeds IO element 0; post-order puts sources first.
        var order: [AUNode] = []
        var marks: [AUNode: Bool] = [:]  // false = visiting, true = done
        func visit(_ node: AUNode) throws(AudioUnitError) {
            if node == ioNode { return }
            if let done = marks[node] {
                if !done { throw .invalidConnection }
                return
            }
            marks[node] = false
            guard let unit = topology.nodes[node] else { throw .nodeNotFound }
            for element in 0..<unit.elementCount(.input) {
                if case .connection(let source, _)? = topology.inputs[InputKey(node: node, element: element)] {
                    try visit(source)
                }
            }
            marks[node] = true
            order.append(node)
        }
        let ioOutputKey = InputKey(node: ioNode, element: IOUnit.outputElement)
        if case .connection(let source, _)? = topology.inputs[ioOutputKey] { try visit(source) }

        // Formats, in pull order: an input takes its source's output format; a unit renders at
        // its output format, which must be Float32 non-interleaved (any rate, any channels).
        var resolved: [AUNode: ResolvedFormats] = [:]
        var unconnectedFormats: [AUNode: [StreamFormat]] = [:]
        func sourceFormat(_ node: AUNode, _ element: AudioUnitElement) -> StreamFormat {
            node == ioNode ? ioIn : resolved[node]!.outputs[Int(element)]
        }
        for node in order {
            let unit = topology.nodes[node]!
            var inputs: [StreamFormat?] = []
            for element in 0..<unit.elementCount(.input) {
                var format: StreamFormat?
                switch topology.inputs[InputKey(node: node, element: element)] {
                case .connection(let source, let sourceElement)?: format = sourceFormat(source, sourceElement)
                case .callback?: format = effective(unit, .input, element, rate: rate)
                case nil: format = nil
                }
                if let format { try unit.checkFormat(format, scope: .input, element: element) }
                inputs.append(format)
            }
            var outputs: [StreamFormat] = []
            for element in 0..<unit.elementCount(.output) {
                outputs.append(effective(unit, .output, element, rate: rate))
            }
            // A filter or gate the application did not format follows its input (as Float32).
            if unit.linksInputAndOutputFormats, !outputs.isEmpty, let input = inputs.first ?? nil,
               !unit.explicitFormats.contains(AudioUnit.FormatKey(scope: .output, element: 0)) {
                outputs[0] = input.canonical
            }
            for output in outputs {
                guard output.isCanonical else { throw .formatNotSupported }
            }
            resolved[node] = ResolvedFormats(inputs: inputs, outputs: outputs)
            // Unconnected inputs carry no audio, but their format follows the rate like any other.
            unconnectedFormats[node] = (0..<unit.elementCount(.input)).map { effective(unit, .input, $0, rate: rate) }
        }

        // What IO element 0 receives: any valid format, converted to the device's.
        var ioOutFormat: StreamFormat?
        switch topology.inputs[ioOutputKey] {
        case .connection(let source, let element)?: ioOutFormat = sourceFormat(source, element)
        case .callback?: ioOutFormat = effective(io, .input, IOUnit.outputElement, rate: rate)
        case nil: ioOutFormat = nil
        }
        resolved[ioNode] = ResolvedFormats(
            inputs: [ioOutFormat ?? effective(io, .input, IOUnit.outputElement, rate: rate), io.deviceInputFormat],
            outputs: [io.deviceOutputFormat, ioIn])

        // Rate domains: index 0 is the device's rate.
        var rates: [Double] = [rate]
        func rateIndex(_ r: Double) -> Int {
            if let i = rates.firstIndex(of: r) { return i }
            rates.append(r)
            return rates.count - 1
        }

        // Allocation: nothing above allocated render memory, so a throw left no trace.
        let maxFrames = Int(([ioNode] + order).map { topology.nodes[$0]!.maximumFramesPerSlice }.min() ?? 1024)
        let resources = PlanResources()
        var converters: [ConverterKey: ConverterStorage] = [:]
        func converter(_ key: ConverterKey) throws(AudioUnitError) -> ConverterStorage {
            let storage: ConverterStorage
            if let existing = converterCache[key] { storage = existing } else { storage = try ConverterStorage(key) }
            converters[key] = storage
            resources.retained.append(storage)
            return storage
        }
        func frames(at r: Double) -> Int { RateDomains.capacity(maxFrames, rate: r, graphRate: rate) }

        // IO element 1: the device's channels, converted when the application side differs.
        let deviceChannels = Int(io.deviceInputFormat.channelsPerFrame)
        let (ioDevice, ioDeviceSilence) = resources.allocateForwardable(deviceChannels, frames: maxFrames)
        var ioInput = ioDevice
        var ioInputConverter: UnsafeMutablePointer<PlanConverter>?
        var latencyOut: [AUNode: Double] = [:]
        let ioInRateIndex = rateIndex(ioIn.sampleRate)
        if ioIn.sampleRate != rate || Int(ioIn.channelsPerFrame) != deviceChannels || !ioIn.isFloat {
            let storage = try converter(ConverterKey(
                site: .deviceInput, node: ioNode, element: IOUnit.inputElement,
                sourceChannels: deviceChannels, sourceRate: rate,
                destinationChannels: Int(ioIn.channelsPerFrame), destinationRate: ioIn.sampleRate,
                graphRate: rate, maxFrames: maxFrames))
            ioInputConverter = storage.converter
            ioInput = storage.converter.pointee.output
            latencyOut[ioNode] = storage.latency
        } else {
            latencyOut[ioNode] = 0
        }
        var ioInputRaw: UnsafeMutablePointer<UnsafeMutableRawPointer>?
        if !ioIn.isCanonical, io.inputCallback != nil {
            ioInputRaw = resources.allocateRaw(ioIn.bufferCount, bytes: frames(at: ioIn.sampleRate) * Int(ioIn.bytesPerFrame))
        }
        var outputBuffers: [AUNode: UnsafeMutablePointer<UnsafeMutablePointer<Float>>] = [ioNode: ioInput]
        var kernels: [AUNode: KernelStorage] = [:]
        var unitLatency: [AUNode: Double] = [:]

        /// The plan's view of one input element fed in `format`, for a unit that processes
        /// `channels` channels at `unitRate` and takes `accepts` channel counts as they are.
        func planInput(_ key: InputKey, format: StreamFormat?, site: ConverterKey.Site,
                       channels: Int, unitRate: Double, accepts: (Int) -> Bool) throws(AudioUnitError) -> (PlanInput, Double) {
            var input = PlanInput(channels: nil, channelCount: 0, callback: nil, element: key.element,
                                  source: nil, sourceRateIndex: 0, raw: nil,
                                  rawLayout: RawLayout(kind: .float32, interleaved: false, channels: 0), rawBytesPerFrame: 0,
                                  converter: nil, destinationRateIndex: rateIndex(unitRate))
            guard let format else { return (input, 0) }
            var latency = 0.0
            switch topology.inputs[key] {
            case .connection(let source, _)?:
                input.source = outputBuffers[source]!
                latency = latencyOut[source] ?? 0
            case .callback(let box)?:
                resources.retained.append(box)
                input.callback = Unmanaged.passUnretained(box).toOpaque()
                input.source = resources.allocateChannels(Int(format.channelsPerFrame), frames: frames(at: format.sampleRate))
                input.rawLayout = RawLayout(format)
                if !format.isCanonical {
                    input.raw = resources.allocateRaw(format.bufferCount, bytes: frames(at: format.sampleRate) * Int(format.bytesPerFrame))
                    input.rawBytesPerFrame = Int(format.bytesPerFrame)
                }
            case nil:
                return (input, 0)
            }
            input.sourceRateIndex = rateIndex(format.sampleRate)
            let sourceChannels = Int(format.channelsPerFrame)
            if format.sampleRate == unitRate && accepts(sourceChannels) {
                input.channels = input.source
                input.channelCount = sourceChannels
            } else {
                let storage = try converter(ConverterKey(
                    site: site, node: key.node, element: key.element,
                    sourceChannels: sourceChannels, sourceRate: format.sampleRate,
                    destinationChannels: channels, destinationRate: unitRate,
                    graphRate: rate, maxFrames: maxFrames))
                input.converter = storage.converter
                input.channels = storage.converter.pointee.output
                input.channelCount = channels
                latency += storage.latency
                unitLatency[key.node] = max(unitLatency[key.node] ?? 0, storage.latency)
            }
            return (input, latency)
        }

        let steps = resources.allocate(PlanStep.self, count: order.count)
        for (index, node) in order.enumerated() {
            let unit = topology.nodes[node]!
            let formats = resolved[node]!
            let outChannels = Int(formats.outputs[0].channelsPerFrame)
            let unitRate = formats.outputs[0].sampleRate
            let inputs = resources.allocate(PlanInput.self, count: formats.inputs.count)
            var latency = 0.0
            for element in 0..<formats.inputs.count {
                let (input, inputLatency) = try planInput(InputKey(node: node, element: AudioUnitElement(element)),
                                                          format: formats.inputs[element], site: .unitInput,
                                                          channels: outChannels, unitRate: unitRate,
                                                          accepts: { unit.acceptsInputChannels($0, outputChannels: outChannels) })
                inputs[element] = input
                latency = max(latency, inputLatency)
            }
            latencyOut[node] = latency
            let (output, ownedOutput) = resources.allocateForwardable(outChannels, frames: frames(at: unitRate))
            outputBuffers[node] = output
            let inputChannels = (0..<formats.inputs.count).map { inputs[$0].channelCount }
            let stateCount = unit.kernelStateCount(inputChannels: inputChannels, outputChannels: outChannels)
            let kernel: KernelStorage
            if let existing = unit.kernel, existing.count == stateCount {
                kernel = existing
            } else {
                kernel = KernelStorage(count: stateCount)
                unit.prepareKernelState(kernel.floats, inputCount: inputChannels.count)
            }
            kernels[node] = kernel
            resources.retained.append(contentsOf: [unit, unit.bank, kernel] as [AnyObject])
            steps[index] = PlanStep(kind: unit.kernelKind, state: kernel.floats, parameters: unit.bank.values,
                                    automation: unit.bank.automation.state,
                                    inputs: inputs, inputCount: formats.inputs.count,
                                    output: output, ownedOutput: ownedOutput, outputChannelCount: outChannels,
                                    sampleRate: Float(unitRate), rateIndex: rateIndex(unitRate),
                                    custom: customKernel(unit, inputChannels: inputChannels, outputChannels: outChannels),
                                    links: Unmanaged.passUnretained(unit.renderLinks))
        }

        /// Scratch and the unretained unit for a ``RenderCallbackUnit``'s kernel.
        func customKernel(_ unit: AudioUnit, inputChannels: [Int], outputChannels: Int) -> UnsafeMutablePointer<CustomKernel>? {
            guard let custom = unit as? RenderCallbackUnit else { return nil }
            let maxChannels = max(outputChannels, inputChannels.max() ?? 0)
            let kernel = resources.allocate(CustomKernel.self, count: 1)
            kernel.initialize(to: CustomKernel(
                box: Unmanaged.passUnretained(custom).toOpaque(),
                lists: resources.allocate(AudioBufferList.self, count: inputChannels.count),
                connected: resources.allocate(Bool.self, count: inputChannels.count),
                pointers: resources.allocate(UnsafeMutablePointer<Float>.self, count: (inputChannels.count + 1) * maxChannels),
                maxChannels: maxChannels, parameterCount: custom.bank.count, sliceTime: 0))
            return kernel
        }

        let deviceOutChannels = Int(io.deviceOutputFormat.channelsPerFrame)
        let (ioOutput, outputLatency) = try planInput(ioOutputKey, format: ioOutFormat, site: .deviceOutput,
                                                      channels: deviceOutChannels, unitRate: rate,
                                                      accepts: { $0 == deviceOutChannels })
        var inputCallback: UnsafeMutableRawPointer?
        if let callback = io.inputCallback {
            let box = CallbackBox(input: callback)
            resources.retained.append(box)
            inputCallback = Unmanaged.passUnretained(box).toOpaque()
        }
        resources.retained.append(io)
        let domainRates = resources.allocate(Double.self, count: rates.count)
        for (i, r) in rates.enumerated() { domainRates[i] = r }
        let domains = RateDomains(rates: domainRates, rateCount: rates.count,
                                  frames: resources.allocate(Int.self, count: rates.count),
                                  times: resources.allocate(Double.self, count: rates.count))
        let notificationBoxes = resources.allocate(UnsafeMutableRawPointer.self, count: notifications.count)
        for (i, entry) in notifications.enumerated() {
            resources.retained.append(entry.box)
            notificationBoxes[i] = Unmanaged.passUnretained(entry.box).toOpaque()
        }
        let plan = resources.allocate(RenderPlan.self, count: 1)
        plan.initialize(to: RenderPlan(
            steps: steps, stepCount: order.count, maxFrames: maxFrames, sampleRate: rate,
            ioInput: ioInput, ioInputChannels: Int(ioIn.channelsPerFrame),
            ioInputEnabled: io.inputEnabled,
            inputCallback: inputCallback,
            ioOutput: ioOutput, ioOutputEnabled: io.outputEnabled,
            domains: domains,
            notifications: notificationBoxes, notificationCount: notifications.count,
            notificationChannels: resources.allocate(UnsafeMutablePointer<Float>.self, count: max(deviceChannels, deviceOutChannels)),
            notificationCapacity: max(deviceChannels, deviceOutChannels),
            ioDevice: ioDevice, ioDeviceSilence: ioDeviceSilence, ioDeviceChannels: deviceChannels,
            ioInputConverter: ioInputConverter, ioInputRateIndex: ioInRateIndex,
            ioInputLayout: RawLayout(ioIn), ioInputRaw: ioInputRaw, ioInputRawBytesPerFrame: Int(ioIn.bytesPerFrame),
            ioLinks: Unmanaged.passUnretained(io.renderLinks)))
        resources.plan = plan
        for (node, formats) in unconnectedFormats {
            resolved[node]!.inputs = zip(resolved[node]!.inputs, formats).map { $0 ?? $1 }
        }
        return BuiltPlan(resources: resources, formats: resolved, kernels: kernels, converters: converters,
                         unitLatency: unitLatency, latency: outputLatency)
    }

    /// Seconds as milliseconds with two decimals, for the dump (no Foundation in the core).
    private func milliseconds(_ seconds: Double) -> String {
        let hundredths = Int((seconds * 100_000).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// A readable dump of the graph, like `CAShow`: the state (initialized, running, pending
    /// edits, conversion latency, render notifications), then every node with its unit type and
    /// each element's format, what feeds each input (a node's output, a render callback, or
    /// nothing) and where an input is converted. Thread: control thread.
    public var description: String {
        var state = "\(isInitialized ? "initialized" : "uninitialized"), \(isRunning ? "running" : "stopped")"
        if hasPendingEdits { state += ", edits pending" }
        if renderLatency > 0 { state += ", conversion latency \(milliseconds(renderLatency)) ms" }
        if !notifications.isEmpty { state += ", \(notifications.count) render notification(s)" }
        var lines = ["AudioGraph: \(nodeCount) node(s), \(state)"]
        for node in nodes {
            guard let unit = try? nodeInfo(node) else { continue }
            var header = "  \(node): \(unit.type.rawValue)"
            if unit.conversionLatency > 0 { header += " (input conversion adds \(milliseconds(unit.conversionLatency)) ms)" }
            lines.append(header)
            let processing = unit.outputFormats.first
            for element in 0..<unit.elementCount(.input) {
                let key = InputKey(node: node, element: element)
                let format = unit.inputFormats[Int(element)]
                var source: String
                if unit.isDeviceSide(.input, element) {
                    source = "(device side)"
                } else {
                    switch pending.inputs[key] {
                    case .connection(let n, let e)?: source = "← \(n):\(e)"
                    case .callback?: source = "← render callback"
                    case nil: source = "(unconnected)"
                    }
                    if pending.inputs[key] != nil, let processing, !(unit is IOUnit),
                       format.sampleRate != processing.sampleRate || format.channelsPerFrame != processing.channelsPerFrame || !format.isCanonical {
                        source += ", converted to \(Int(processing.sampleRate)) Hz \(processing.channelsPerFrame) ch"
                    }
                }
                lines.append("    in \(element): \(format) \(source)")
            }
            for element in 0..<unit.elementCount(.output) {
                lines.append("    out \(element): \(unit.outputFormats[Int(element)])\(unit.isDeviceSide(.output, element) ? " (device side)" : "")")
            }
        }
        return lines.joined(separator: "\n")
    }
}

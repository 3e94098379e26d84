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
    }

    /// The format an element side has at the graph's rate: formats the application set keep
    /// their rate, the others follow the device.
    private func effective(_ unit: AudioUnit, _ scope: AudioUnitScope, _ element: AudioUnitElement, rate: Double) -> StreamFormat {
        let stored = scope == .input ? unit.inputFormats[Int(element)] : unit.outputFormats[Int(element)]
        if unit.explicitFormats.contains(AudioUnit.FormatKey(scope: scope, element: element)) { return stored }
        return (try? stored.withSampleRate(rate)) ?? stored
    }

    /// Builds the plan for `topology`: pull order, formats propagated along connections and
    /// checked, buffers and kernel state allocated. Nothing outside the result is modified.
    func buildPlan(_ topology: Topology) throws(AudioUnitError) -> BuiltPlan {
        guard let (ioNode, ioUnit) = topology.nodes.first(where: { $0.value is IOUnit }), let io = ioUnit as? IOUnit else {
            throw .outputNodeErr
        }
        let rate = io.deviceOutputFormat.sampleRate
        guard io.deviceInputFormat.sampleRate == rate else { throw .formatNotSupported }

        // The IO unit's application sides must match the device (no conversion yet).
        let ioIn = effective(io, .output, IOUnit.inputElement, rate: rate)
        guard ioIn.isCanonical, ioIn.channelsPerFrame == io.deviceInputFormat.channelsPerFrame, ioIn.sampleRate == rate else {
            throw .formatNotSupported
        }

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

        // Formats, in pull order: an input takes its source's output format.
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
                if let format {
                    try unit.checkFormat(format, scope: .input, element: element)
                    guard format.sampleRate == rate else { throw .formatNotSupported }
                }
                inputs.append(format)
            }
            var outputs: [StreamFormat] = []
            for element in 0..<unit.elementCount(.output) {
                outputs.append(effective(unit, .output, element, rate: rate))
            }
            if unit.linksInputAndOutputFormats, let input = inputs.first ?? nil { outputs[0] = input }
            for input in inputs {
                guard let input else { continue }
                try unit.checkInputChannels(input.channelsPerFrame, outputChannels: outputs[0].channelsPerFrame)
            }
            for output in outputs {
                guard output.isCanonical, output.sampleRate == rate else { throw .formatNotSupported }
            }
            resolved[node] = ResolvedFormats(inputs: inputs, outputs: outputs)
            // Unconnected inputs carry no audio, but their format follows the rate like any other.
            unconnectedFormats[node] = (0..<unit.elementCount(.input)).map { effective(unit, .input, $0, rate: rate) }
        }

        // What IO element 0 receives must match the device output.
        var ioOutFormat: StreamFormat?
        switch topology.inputs[ioOutputKey] {
        case .connection(let source, let element)?: ioOutFormat = sourceFormat(source, element)
        case .callback?: ioOutFormat = effective(io, .input, IOUnit.outputElement, rate: rate)
        case nil: ioOutFormat = nil
        }
        if let f = ioOutFormat {
            guard f.isCanonical, f.channelsPerFrame == io.deviceOutputFormat.channelsPerFrame, f.sampleRate == rate else {
                throw .formatNotSupported
            }
        }
        resolved[ioNode] = ResolvedFormats(
            inputs: [ioOutFormat ?? effective(io, .input, IOUnit.outputElement, rate: rate), io.deviceInputFormat],
            outputs: [io.deviceOutputFormat, ioIn])

        // Allocation: nothing above allocated render memory, so a throw left no trace.
        let maxFrames = Int(([ioNode] + order).map { topology.nodes[$0]!.maximumFramesPerSlice }.min() ?? 1024)
        let resources = PlanResources()
        let (ioInputBuffers, ioInputOwned) = resources.allocateForwardable(Int(ioIn.channelsPerFrame), frames: maxFrames)
        var outputBuffers: [AUNode: UnsafeMutablePointer<UnsafeMutablePointer<Float>>] = [ioNode: ioInputBuffers]
        var kernels: [AUNode: KernelStorage] = [:]

        func planInput(_ key: InputKey, format: StreamFormat?) -> PlanInput {
            switch topology.inputs[key] {
            case .connection(let source, _)?:
                return PlanInput(channels: outputBuffers[source]!, channelCount: Int(format!.channelsPerFrame),
                                 callback: nil, element: key.element)
            case .callback(let box)?:
                resources.retained.append(box)
                let channels = Int(format!.channelsPerFrame)
                return PlanInput(channels: resources.allocateChannels(channels, frames: maxFrames), channelCount: channels,
                                 callback: Unmanaged.passUnretained(box).toOpaque(), element: key.element)
            case nil:
                return PlanInput(channels: nil, channelCount: 0, callback: nil, element: key.element)
            }
        }

        let steps = resources.allocate(PlanStep.self, count: order.count)
        for (index, node) in order.enumerated() {
            let unit = topology.nodes[node]!
            let formats = resolved[node]!
            let outChannels = Int(formats.outputs[0].channelsPerFrame)
            let (output, ownedOutput) = resources.allocateForwardable(outChannels, frames: maxFrames)
            outputBuffers[node] = output
            let inputChannels = formats.inputs.map { Int($0?.channelsPerFrame ?? 0) }
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
            let inputs = resources.allocate(PlanInput.self, count: inputChannels.count)
            for element in 0..<inputChannels.count {
                inputs[element] = planInput(InputKey(node: node, element: AudioUnitElement(element)), format: formats.inputs[element])
            }
            steps[index] = PlanStep(kind: unit.kernelKind, state: kernel.floats, parameters: unit.bank.values,
                                    inputs: inputs, inputCount: inputChannels.count,
                                    output: output, ownedOutput: ownedOutput, outputChannelCount: outChannels,
                                    sampleRate: Float(rate))
        }

        var inputCallback: UnsafeMutableRawPointer?
        if let callback = io.inputCallback {
            let box = CallbackBox(input: callback)
            resources.retained.append(box)
            inputCallback = Unmanaged.passUnretained(box).toOpaque()
        }
        resources.retained.append(io)
        let plan = resources.allocate(RenderPlan.self, count: 1)
        plan.initialize(to: RenderPlan(
            steps: steps, stepCount: order.count, maxFrames: maxFrames, sampleRate: rate,
            ioInput: ioInputBuffers, ioInputOwned: ioInputOwned, ioInputChannels: Int(ioIn.channelsPerFrame),
            ioInputEnabled: io.inputEnabled,
            inputCallback: inputCallback,
            ioOutput: planInput(ioOutputKey, format: ioOutFormat), ioOutputEnabled: io.outputEnabled))
        resources.plan = plan
        for (node, formats) in unconnectedFormats {
            resolved[node]!.inputs = zip(resolved[node]!.inputs, formats).map { $0 ?? $1 }
        }
        return BuiltPlan(resources: resources, formats: resolved, kernels: kernels)
    }

    /// A readable dump of the graph, like `CAShow`: nodes with their formats, connections and
    /// callbacks, and the state. Thread: control thread.
    public var description: String {
        var lines = ["AudioGraph: \(nodeCount) node(s), \(isInitialized ? "initialized" : "uninitialized"), \(isRunning ? "running" : "stopped")\(hasPendingEdits ? ", edits pending" : "")"]
        for node in nodes {
            guard let unit = try? nodeInfo(node) else { continue }
            lines.append("  \(node): \(unit.type.rawValue)")
            for element in 0..<unit.elementCount(.input) {
                let key = InputKey(node: node, element: element)
                let source: String
                if unit.isDeviceSide(.input, element) {
                    source = "(device side)"
                } else {
                    switch pending.inputs[key] {
                    case .connection(let n, let e)?: source = "← \(n):\(e)"
                    case .callback?: source = "← render callback"
                    case nil: source = "(unconnected)"
                    }
                }
                lines.append("    in \(element): \(unit.inputFormats[Int(element)]) \(source)")
            }
            for element in 0..<unit.elementCount(.output) {
                lines.append("    out \(element): \(unit.outputFormats[Int(element)])\(unit.isDeviceSide(.output, element) ? " (device side)" : "")")
            }
        }
        return lines.joined(separator: "\n")
    }
}


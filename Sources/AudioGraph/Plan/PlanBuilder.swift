// Plan: compiling a topology into a render plan — pull order, formats, converters, buffers, kernel state, threads.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What compiling a topology produced: the plan (in its resources) and what the graph stores
/// when it publishes it.
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
    /// Every compensation delay the plan uses, to keep for the next plan.
    let delays: [DelayKey: DelayStorage]
    /// Frames each compensated input is delayed by.
    let compensation: [AudioGraph.InputKey: Int]
}

/// The formats a unit's elements take in a plan (nil: an unconnected input).
struct ResolvedFormats {
    var inputs: [StreamFormat?]
    var outputs: [StreamFormat]
}

/// Compiles one topology into a render plan, in stages: pull order → formats → device input →
/// unit steps → device output → the plan. Each stage reads what the ones before it produced.
/// Nothing outside the result is modified, and nothing is allocated for the render thread
/// before the formats are known to meet, so a throw leaves no trace.
///
/// Thread: a control thread; allocates. Used once per build.
struct PlanBuilder {
    typealias Topology = AudioGraph.Topology
    typealias InputKey = AudioGraph.InputKey

    let topology: Topology
    /// Converters of the published plan, reused where they convert the same way.
    let converterCache: [ConverterKey: ConverterStorage]
    /// Compensation delays of the published plan, reused where they delay the same way.
    let delayCache: [DelayKey: DelayStorage]
    /// Whether to align parallel paths (``AudioGraph/compensatesLatency``).
    let compensatesLatency: Bool
    /// Render notifications to call before and after every slice.
    let notificationBoxes: [CallbackBox]
    /// ``AudioGraph/renderThreads`` (0: chosen from the plan's estimated cost), and the worker
    /// threads for a plan that wants `n` of them (the graph's, grown when short).
    var renderThreads = 1
    var workers: (Int) -> RenderWorkers = { RenderWorkers(workers: $0, priority: 0) }
    let ioNode: AUNode
    let io: IOUnit
    /// The device's rate: the graph's rate.
    let rate: Double
    /// The IO unit's application input side (element 1 as the graph sees it).
    let ioIn: StreamFormat

    // Produced by the stages.
    private var order: [AUNode] = []
    private var resolved: [AUNode: ResolvedFormats] = [:]
    private var unconnectedFormats: [AUNode: [StreamFormat]] = [:]
    private var ioOutFormat: StreamFormat?
    private var rates: [Double]
    private var maxFrames = 0
    private let resources = PlanResources()
    private var converters: [ConverterKey: ConverterStorage] = [:]
    private var latencyOut: [AUNode: Double] = [:]
    /// Every rendered output element's `[channel]` pointers (the IO unit's element 1 included).
    private var outputBuffers: [AUNodeOutput: UnsafeMutablePointer<UnsafeMutablePointer<Float>>] = [:]
    private var kernels: [AUNode: KernelStorage] = [:]
    private var unitLatency: [AUNode: Double] = [:]
    private var delays: [DelayKey: DelayStorage] = [:]
    private var compensation: [InputKey: Int] = [:]

    /// Starts a build: finds the IO unit and the graph's rate.
    /// - Throws: ``AudioUnitError/outputNodeErr`` (no IO unit), ``AudioUnitError/formatNotSupported``
    ///   (device sides at different rates).
    init(_ topology: Topology, converterCache: [ConverterKey: ConverterStorage], delayCache: [DelayKey: DelayStorage],
         compensatesLatency: Bool, notifications: [CallbackBox]) throws(AudioUnitError) {
        guard let (ioNode, io) = topology.io else { throw .outputNodeErr }
        let rate = io.deviceOutputFormat.sampleRate
        guard io.deviceInputFormat.sampleRate == rate else { throw .formatNotSupported }
        self.topology = topology
        self.converterCache = converterCache
        self.delayCache = delayCache
        self.compensatesLatency = compensatesLatency
        self.notificationBoxes = notifications
        self.ioNode = ioNode
        self.io = io
        self.rate = rate
        self.rates = [rate]  // rate domain 0 is the device's
        // The IO unit's application input side: any valid format, converted from the device's.
        self.ioIn = Self.effective(io, .output, IOUnit.inputElement, rate: rate)
    }

    /// Runs every stage and returns the plan.
    /// - Throws: ``AudioUnitError/invalidConnection`` (a cycle), ``AudioUnitError/nodeNotFound``,
    ///   ``AudioUnitError/formatNotSupported`` (formats that cannot meet, a converter that cannot
    ///   be made), or a unit's own format error.
    mutating func build() throws(AudioUnitError) -> BuiltPlan {
        try findPullOrder()
        try resolveFormats()
        maxFrames = Int(([ioNode] + order).map { topology.nodes[$0]!.maximumFramesPerSlice }.min() ?? 1024)
        let deviceInput = try planDeviceInput()
        let steps = try planSteps()
        let (ioOutput, outputLatency) = try planDeviceOutput()
        let plan = makePlan(steps: steps, deviceInput: deviceInput, ioOutput: ioOutput)
        plan.pointee.parallel = planSchedule()
        resources.plan = plan
        for (node, formats) in unconnectedFormats {
            resolved[node]!.inputs = zip(resolved[node]!.inputs, formats).map { $0 ?? $1 }
        }
        return BuiltPlan(resources: resources, formats: resolved, kernels: kernels, converters: converters,
                         unitLatency: unitLatency, latency: outputLatency, delays: delays, compensation: compensation)
    }

    /// The format an element side has at the graph's rate: formats the application set keep
    /// their rate, the others follow the device.
    static func effective(_ unit: AudioUnit, _ scope: AudioUnitScope, _ element: AudioUnitElement, rate: Double) -> StreamFormat {
        let stored = scope == .input ? unit.inputFormats[Int(element)] : unit.outputFormats[Int(element)]
        if unit.explicitFormats.contains(AudioUnit.FormatKey(scope: scope, element: element)) { return stored }
        return (try? stored.withSampleRate(rate)) ?? stored
    }

    private var ioOutputKey: InputKey { InputKey(node: ioNode, element: IOUnit.outputElement) }

    // MARK: - Stage 1: pull order

    /// Depth-first from what feeds IO element 0; post-order puts sources first, so every unit
    /// renders after everything it reads. A node met again while being visited is a cycle.
    private mutating func findPullOrder() throws(AudioUnitError) {
        var marks: [AUNode: Bool] = [:]  // false = visiting, true = done
        var order: [AUNode] = []
        func visit(_ node: AUNode) throws(AudioUnitError) {
            if node == ioNode { return }
            if let done = marks[node] {
                if !done { throw .invalidConnection }
                return
            }
            marks[node] = false
            guard let unit = topology.nodes[node] else { throw .nodeNotFound }
            for element in 0..<unit.elementCount(.input) {
                try visitSources(of: InputKey(node: node, element: element))
            }
            marks[node] = true
            order.append(node)
        }
        /// What an input reads: its connection's source, or the nodes a pulling callback
        /// declared (a removed one is skipped: the callback's pull of it reports noConnection).
        func visitSources(of key: InputKey) throws(AudioUnitError) {
            switch topology.inputs[key] {
            case .connection(let source, _)?: try visit(source)
            case .callback(let box)?: for source in box.sources where topology.nodes[source.node] != nil { try visit(source.node) }
            case nil: break
            }
        }
        try visitSources(of: ioOutputKey)
        self.order = order
    }

    // MARK: - Stage 2: formats

    private func sourceFormat(_ node: AUNode, _ element: AudioUnitElement) -> StreamFormat {
        node == ioNode ? ioIn : resolved[node]!.outputs[Int(element)]
    }

    /// Formats, in pull order: an input takes its source's output format; a unit renders at its
    /// output format, which must be Float32 non-interleaved (any rate, any channels).
    private mutating func resolveFormats() throws(AudioUnitError) {
        for node in order {
            let unit = topology.nodes[node]!
            var inputs: [StreamFormat?] = []
            for element in 0..<unit.elementCount(.input) {
                var format: StreamFormat?
                switch topology.inputs[InputKey(node: node, element: element)] {
                case .connection(let source, let sourceElement)?: format = sourceFormat(source, sourceElement)
                case .callback(let box)?:
                    format = Self.effective(unit, .input, element, rate: rate)
                    try checkPulledFormats(box, into: format!)
                case nil: format = nil
                }
                if let format { try unit.checkFormat(format, scope: .input, element: element) }
                inputs.append(format)
            }
            var outputs: [StreamFormat] = []
            for element in 0..<unit.elementCount(.output) {
                outputs.append(Self.effective(unit, .output, element, rate: rate))
            }
            // A filter or gate the application did not format follows its input (as Float32).
            if unit.linksInputAndOutputFormats, !outputs.isEmpty, let input = inputs.first ?? nil,
               !unit.explicitFormats.contains(AudioUnit.FormatKey(scope: .output, element: 0)) {
                outputs[0] = input.canonical
            }
            // Output elements after the first run at its rate unless the application set theirs.
            for element in outputs.indices.dropFirst()
            where !unit.explicitFormats.contains(AudioUnit.FormatKey(scope: .output, element: AudioUnitElement(element))) {
                outputs[element] = (try? outputs[element].withSampleRate(outputs[0].sampleRate)) ?? outputs[element]
            }
            // Every output element renders Float32 non-interleaved, all at the unit's rate.
            for output in outputs {
                guard output.isCanonical, output.sampleRate == outputs[0].sampleRate else { throw .formatNotSupported }
            }
            resolved[node] = ResolvedFormats(inputs: inputs, outputs: outputs)
            // Unconnected inputs carry no audio, but their format follows the rate like any other.
            unconnectedFormats[node] = (0..<unit.elementCount(.input)).map { Self.effective(unit, .input, $0, rate: rate) }
        }
        // What IO element 0 receives: any valid format, converted to the device's.
        switch topology.inputs[ioOutputKey] {
        case .connection(let source, let element)?: ioOutFormat = sourceFormat(source, element)
        case .callback(let box)?:
            ioOutFormat = Self.effective(io, .input, IOUnit.outputElement, rate: rate)
            try checkPulledFormats(box, into: ioOutFormat!)
        case nil: ioOutFormat = nil
        }
        resolved[ioNode] = ResolvedFormats(
            inputs: [ioOutFormat ?? Self.effective(io, .input, IOUnit.outputElement, rate: rate), io.deviceInputFormat],
            outputs: [io.deviceOutputFormat, ioIn])
    }

    /// A pulling callback's sources copy into its buffers without conversion: each has the
    /// callback format's rate and one channel or as many as the callback.
    private func checkPulledFormats(_ box: CallbackBox, into format: StreamFormat) throws(AudioUnitError) {
        for source in box.sources where topology.nodes[source.node] != nil {
            let pulled = sourceFormat(source.node, source.element)
            guard pulled.sampleRate == format.sampleRate,
                  pulled.channelsPerFrame == 1 || pulled.channelsPerFrame == format.channelsPerFrame
            else { throw .formatNotSupported }
        }
    }

    // MARK: - Allocation helpers (from here on, render memory is allocated)

    /// The index of rate `r` in the plan's rate domains, adding it when new.
    private mutating func rateIndex(_ r: Double) -> Int {
        if let i = rates.firstIndex(of: r) { return i }
        rates.append(r)
        return rates.count - 1
    }

    /// Frames a buffer at rate `r` must hold for one slice.
    private func frames(at r: Double) -> Int { RateDomains.capacity(maxFrames, rate: r, graphRate: rate) }

    /// The published plan's converter for `key` when there is one (its history carries on), or a new one.
    private mutating func converter(_ key: ConverterKey) throws(AudioUnitError) -> ConverterStorage {
        let storage: ConverterStorage
        if let existing = converterCache[key] { storage = existing } else { storage = try ConverterStorage(key) }
        converters[key] = storage
        resources.retained.append(storage)
        return storage
    }

    // MARK: - Stage 3: device input (IO element 1)

    /// IO element 1 as the plan reads it: the device's channels, converted when the
    /// application side differs.
    struct DeviceInput {
        var device: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        var silence: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        var channels: Int
        var input: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        var converter: UnsafeMutablePointer<PlanConverter>?
        var rateIndex: Int
        var raw: UnsafeMutablePointer<UnsafeMutableRawPointer>?
        /// `[channel]` buffers a device channel is copied into when it holds NaN or ±Inf.
        var clean: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        /// The voice-processing engine the device input goes through first, if any.
        var voice: VoiceIOEngine? = nil
    }

    private mutating func planDeviceInput() throws(AudioUnitError) -> DeviceInput {
        let deviceChannels = Int(io.deviceInputFormat.channelsPerFrame)
        let (device, silence) = resources.allocateForwardable(deviceChannels, frames: maxFrames)
        var result = DeviceInput(device: device, silence: silence, channels: deviceChannels, input: device,
                                 converter: nil, rateIndex: rateIndex(ioIn.sampleRate), raw: nil,
                                 clean: resources.allocateChannels(deviceChannels, frames: maxFrames))
        if ioIn.sampleRate != rate || Int(ioIn.channelsPerFrame) != deviceChannels || !ioIn.isFloat {
            let storage = try converter(ConverterKey(
                site: .deviceInput, node: ioNode, element: IOUnit.inputElement,
                sourceChannels: deviceChannels, sourceRate: rate,
                destinationChannels: Int(ioIn.channelsPerFrame), destinationRate: ioIn.sampleRate,
                graphRate: rate, maxFrames: maxFrames))
            result.converter = storage.converter
            result.input = storage.converter.pointee.output
            latencyOut[ioNode] = storage.latency
        } else {
            latencyOut[ioNode] = 0
        }
        if let voiceIO = io as? VoiceProcessingIOUnit {
            // Voice processing first, at the device's rate and channels: element 1 lags by its latency.
            let engine = try voiceIO.prepareEngine(sampleRate: rate, maximumFramesPerSlice: maxFrames)
            resources.retained.append(engine)
            result.voice = engine
            latencyOut[ioNode, default: 0] += voiceIO.processingLatency
        }
        if !ioIn.isCanonical, io.inputCallback != nil {
            result.raw = resources.allocateRaw(ioIn.bufferCount, bytes: frames(at: ioIn.sampleRate) * Int(ioIn.bytesPerFrame))
        }
        outputBuffers[AUNodeOutput(ioNode, element: IOUnit.inputElement)] = result.input
        return result
    }

    // MARK: - Stage 4: one step per unit

    /// The plan's view of one input element fed in `format`, for a unit that processes
    /// `channels` channels at `unitRate` and takes `accepts` channel counts as they are; and the
    /// latency from device input to this input through the plan's conversions, in seconds.
    private mutating func planInput(_ key: InputKey, format: StreamFormat?, site: ConverterKey.Site,
                                    channels: Int, unitRate: Double, accepts: (Int) -> Bool) throws(AudioUnitError) -> (PlanInput, Double) {
        var input = PlanInput(channels: nil, channelCount: 0, callback: nil, element: key.element,
                              source: nil, sourceRateIndex: 0, raw: nil,
                              rawLayout: RawLayout(kind: .float32, interleaved: false, channels: 0), rawBytesPerFrame: 0,
                              converter: nil, destinationRateIndex: rateIndex(unitRate), pulls: nil, pullCount: 0, delay: nil)
        guard let format else { return (input, 0) }
        var latency = 0.0
        switch topology.inputs[key] {
        case .connection(let source, let sourceElement)?:
            input.source = outputBuffers[AUNodeOutput(source, element: sourceElement)]!
            latency = latencyOut[source] ?? 0
        case .callback(let box)?:
            resources.retained.append(box)
            input.callback = Unmanaged.passUnretained(box).toOpaque()
            if !box.sources.isEmpty {
                let pulls = resources.allocate(PlanPull.self, count: box.sources.count)
                for (i, source) in box.sources.enumerated() {
                    let present = topology.nodes[source.node] != nil
                    pulls[i] = PlanPull(node: source.node.rawValue, element: source.element,
                                        channels: present ? outputBuffers[source]! : nil,
                                        channelCount: present ? Int(sourceFormat(source.node, source.element).channelsPerFrame) : 0)
                }
                input.pulls = pulls
                input.pullCount = box.sources.count
            }
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

    /// The units in pull order, each with its inputs, output buffers and kernel state (kept
    /// from the unit's previous plan when its size still fits, so filter memory carries on).
    private mutating func planSteps() throws(AudioUnitError) -> UnsafeMutablePointer<PlanStep> {
        let steps = resources.allocate(PlanStep.self, count: order.count)
        for (index, node) in order.enumerated() {
            let unit = topology.nodes[node]!
            let formats = resolved[node]!
            let outChannels = Int(formats.outputs[0].channelsPerFrame)
            let unitRate = formats.outputs[0].sampleRate
            let inputs = resources.allocate(PlanInput.self, count: formats.inputs.count)
            var latency = 0.0
            var arrivals: [(element: Int, latency: Double)] = []
            for element in 0..<formats.inputs.count {
                // What the kernel reads on this input: the output's channel count, or (a merger) the element's own.
                let channels = unit.processingChannels(ofInput: element, outputChannels: outChannels)
                let (input, inputLatency) = try planInput(InputKey(node: node, element: AudioUnitElement(element)),
                                                          format: formats.inputs[element], site: .unitInput,
                                                          channels: channels, unitRate: unitRate,
                                                          accepts: { unit.acceptsInputChannels($0, outputChannels: channels) })
                inputs[element] = input
                latency = max(latency, inputLatency)
                if input.channels != nil { arrivals.append((element, inputLatency)) }
            }
            compensate(node, inputs, arrivals, slowest: latency, unitRate: unitRate)
            latencyOut[node] = latency + unit.processingLatency
            let (output, ownedOutput) = resources.allocateForwardable(outChannels, frames: frames(at: unitRate))
            outputBuffers[AUNodeOutput(node)] = output
            var moreOutputs: UnsafeMutablePointer<PlanOutput>?
            if formats.outputs.count > 1 {
                let more = resources.allocate(PlanOutput.self, count: formats.outputs.count - 1)
                for element in 1..<formats.outputs.count {
                    let channels = Int(formats.outputs[element].channelsPerFrame)
                    let (current, owned) = resources.allocateForwardable(channels, frames: frames(at: unitRate))
                    more[element - 1] = PlanOutput(channels: current, owned: owned, channelCount: channels)
                    outputBuffers[AUNodeOutput(node, element: AudioUnitElement(element))] = current
                }
                moreOutputs = more
            }
            let inputChannels = (0..<formats.inputs.count).map { inputs[$0].channelCount }
            let stateSize = unit.kernelStateSize(inputChannels: inputChannels, outputChannels: outChannels, sampleRate: unitRate)
            let kernel: KernelStorage
            if let existing = unit.kernel, existing.byteCount == stateSize {
                kernel = existing
            } else {
                kernel = KernelStorage(byteCount: stateSize)
                unit.prepareKernelState(kernel.bytes, inputCount: inputChannels.count)
                kernel.release = unit.kernelStateRelease
            }
            kernels[node] = kernel
            resources.retained.append(contentsOf: [unit, unit.bank, kernel] as [AnyObject])
            steps[index] = PlanStep(kind: unit.kernelKind, state: kernel.bytes, parameters: unit.bank.values,
                                    automation: unit.bank.automation.state,
                                    inputs: inputs, inputCount: formats.inputs.count,
                                    pullsInputs: (0..<formats.inputs.count).contains {
                                        inputs[$0].callback != nil || inputs[$0].converter != nil || inputs[$0].delay != nil
                                    },
                                    output: output, ownedOutput: ownedOutput, outputChannelCount: outChannels,
                                    sampleRate: Float(unitRate), rateIndex: rateIndex(unitRate),
                                    custom: customKernel(unit, inputChannels: inputChannels, outputChannels: outChannels),
                                    moreOutputs: moreOutputs, moreOutputCount: formats.outputs.count - 1,
                                    links: Unmanaged.passUnretained(unit.renderLinks))
        }
        return steps
    }

    /// Latency compensation: every input of `node` that arrives earlier than its slowest by a
    /// frame or more (at the unit's rate) is delayed by the difference (LatencyCompensation.swift).
    private mutating func compensate(_ node: AUNode, _ inputs: UnsafeMutablePointer<PlanInput>,
                                     _ arrivals: [(element: Int, latency: Double)], slowest: Double, unitRate: Double) {
        guard compensatesLatency, arrivals.count > 1, (topology.nodes[node] as? MergerUnit)?.alignsInputs != false else { return }
        for (element, arrival) in arrivals {
            let frames = Int(((slowest - arrival) * unitRate).rounded())
            guard frames > 0, let source = inputs[element].channels else { continue }
            let key = DelayKey(node: node, element: AudioUnitElement(element), channels: inputs[element].channelCount,
                               frames: frames, capacity: self.frames(at: unitRate))
            let storage = delayCache[key] ?? DelayStorage(key)
            delays[key] = storage
            resources.retained.append(storage)
            let delay = resources.allocate(PlanDelay.self, count: 1)
            delay.initialize(to: PlanDelay(source: source, output: storage.output, ring: storage.ring, ringLength: storage.ringLength,
                                           writeIndex: storage.writeIndex, delay: frames, channels: key.channels))
            inputs[element].delay = delay
            inputs[element].channels = storage.output
            compensation[InputKey(node: node, element: AudioUnitElement(element))] = frames
        }
    }

    /// Scratch and the unretained unit for a ``RenderCallbackUnit``'s kernel.
    private func customKernel(_ unit: AudioUnit, inputChannels: [Int], outputChannels: Int) -> UnsafeMutablePointer<CustomKernel>? {
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

    // MARK: - Stage 5: device output (IO element 0)

    /// What feeds IO element 0, converted to the device's format; and the plan's latency from
    /// device input to device output, in seconds.
    private mutating func planDeviceOutput() throws(AudioUnitError) -> (PlanInput, Double) {
        let deviceOutChannels = Int(io.deviceOutputFormat.channelsPerFrame)
        return try planInput(ioOutputKey, format: ioOutFormat, site: .deviceOutput,
                             channels: deviceOutChannels, unitRate: rate,
                             accepts: { $0 == deviceOutChannels })
    }

    // MARK: - Stage 7: threads (the plan's schedule, once the plan exists)

    /// The steps each step reads: its connections' sources and a pulling callback's declared
    /// sources (the IO unit's element 1 is ready before any step), as step indexes, distinct.
    private func producers() -> [[Int]] {
        var index: [AUNode: Int] = [:]
        for (i, node) in order.enumerated() { index[node] = i }
        return order.map { node in
            var found: [Int] = []
            for element in 0..<resolved[node]!.inputs.count {
                switch topology.inputs[InputKey(node: node, element: AudioUnitElement(element))] {
                case .connection(let source, _)?: if let i = index[source] { found.append(i) }
                case .callback(let box)?: found += box.sources.compactMap { index[$0.node] }
                case nil: break
                }
            }
            return Array(Set(found)).sorted()
        }
    }

    /// How many threads render the steps: ``AudioGraph/renderThreads`` when set; otherwise 1
    /// unless a slice is estimated to cost more than ``RenderThreadEstimate/threshold`` and its
    /// independent branches let more threads share it (total estimated cost over the costliest
    /// path, to the nearest whole number), bounded by the machine's cores.
    static func threadCount(requested: Int, costs: [Double], producers: [[Int]], maxFrames: Int) -> Int {
        guard costs.count > 1 else { return 1 }
        if requested > 0 { return requested }
        var path = [Double](repeating: 0, count: costs.count)
        for i in costs.indices { path[i] = costs[i] + (producers[i].map { path[$0] }.max() ?? 0) }
        let total = costs.reduce(0, +), critical = path.max() ?? 0
        guard total * Double(maxFrames) >= RenderThreadEstimate.threshold, critical > 0 else { return 1 }
        let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        return max(1, min(cores, Int((total / critical).rounded())))
    }

    /// The schedule for rendering on several threads, or nil when one thread renders.
    private func planSchedule() -> UnsafeMutablePointer<ParallelSchedule>? {
        guard renderThreads != 1, order.count > 1 else { return nil }
        let reads = producers()
        let costs = order.map { RenderThreadEstimate.nanosecondsPerFrame(topology.nodes[$0]!, formats: resolved[$0]!) }
        let threads = Self.threadCount(requested: renderThreads, costs: costs, producers: reads, maxFrames: maxFrames)
        guard threads > 1 else { return nil }
        let pool = workers(threads - 1)
        resources.retained.append(pool)
        var readers = [[Int]](repeating: [], count: order.count)
        for (consumer, sources) in reads.enumerated() { for source in sources { readers[source].append(consumer) } }
        // Tasks: a step whose only producer is the last step of a task, and that step's only
        // consumer, joins that task (a chain renders on one thread without touching the queue).
        var tasks: [[Int]] = [], taskOf = [Int](repeating: 0, count: order.count)
        for step in order.indices {
            if reads[step].count == 1, let producer = reads[step].first, readers[producer].count == 1,
               tasks[taskOf[producer]].last == producer {
                tasks[taskOf[producer]].append(step)
            } else {
                tasks.append([step])
            }
            taskOf[step] = tasks.count - 1
        }
        let count = tasks.count
        let taskReads = tasks.map { Set(reads[$0[0]].map { taskOf[$0] }).sorted() }
        let taskReaders = tasks.map { Set(readers[$0[$0.count - 1]].map { taskOf[$0] }).sorted() }
        let schedule = resources.allocate(ParallelSchedule.self, count: 1)
        let taskSteps = resources.allocate(Int32.self, count: order.count)
        let taskStarts = resources.allocate(Int32.self, count: count + 1)
        let producerCounts = resources.allocate(Int32.self, count: count)
        let pending = resources.allocate(Atomic<Int32>.self, count: count)
        let ready = resources.allocate(Atomic<Int32>.self, count: count)
        let starts = resources.allocate(Int32.self, count: count + 1)
        let consumers = resources.allocate(Int32.self, count: taskReaders.reduce(0) { $0 + $1.count })
        let roots = resources.allocate(Int32.self, count: count)
        var rootCount = 0, k = 0, s = 0
        for i in 0..<count {
            taskStarts[i] = Int32(s)
            for step in tasks[i] { taskSteps[s] = Int32(step); s += 1 }
            producerCounts[i] = Int32(taskReads[i].count)
            (pending + i).initialize(to: Atomic(Int32(taskReads[i].count)))
            (ready + i).initialize(to: Atomic(0))
            if taskReads[i].isEmpty { roots[rootCount] = Int32(i); rootCount += 1 }
            starts[i] = Int32(k)
            for consumer in taskReaders[i] { consumers[k] = Int32(consumer); k += 1 }
        }
        taskStarts[count] = Int32(s)
        starts[count] = Int32(k)
        // Each shared counter in a cache line of its own.
        func counter() -> UnsafeMutablePointer<Atomic<Int>> {
            let line = resources.allocate(Atomic<Int>.self, count: 64 / MemoryLayout<Atomic<Int>>.stride)
            line.initialize(to: Atomic(0))
            return line
        }
        schedule.initialize(to: ParallelSchedule(
            workers: Unmanaged.passUnretained(pool), threads: threads, taskCount: count, taskSteps: taskSteps, taskStarts: taskStarts,
            producerCounts: producerCounts, pending: pending,
            consumers: consumers, consumerStarts: starts, roots: roots, rootCount: rootCount, ready: ready,
            head: counter(), tail: counter(), done: counter(), tallies: resources.allocate(UInt64.self, count: threads * 8)))
        return schedule
    }

    // MARK: - Stage 6: the plan

    /// The plan itself: steps, both IO sides, rate domains and notifications, in memory the
    /// resources own.
    private mutating func makePlan(steps: UnsafeMutablePointer<PlanStep>, deviceInput: DeviceInput,
                                   ioOutput: PlanInput) -> UnsafeMutablePointer<RenderPlan> {
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
        let notifications = resources.allocate(UnsafeMutableRawPointer.self, count: notificationBoxes.count)
        for (i, box) in notificationBoxes.enumerated() {
            resources.retained.append(box)
            notifications[i] = Unmanaged.passUnretained(box).toOpaque()
        }
        let deviceOutChannels = Int(io.deviceOutputFormat.channelsPerFrame)
        let notificationCapacity = max(deviceInput.channels, deviceOutChannels)
        let plan = resources.allocate(RenderPlan.self, count: 1)
        plan.initialize(to: RenderPlan(
            steps: steps, stepCount: order.count, maxFrames: maxFrames, sampleRate: rate,
            ioInput: deviceInput.input, ioInputChannels: Int(ioIn.channelsPerFrame),
            ioInputEnabled: io.inputEnabled,
            inputCallback: inputCallback,
            ioOutput: ioOutput, ioOutputEnabled: io.outputEnabled,
            domains: domains,
            notifications: notifications, notificationCount: notificationBoxes.count,
            notificationChannels: resources.allocate(UnsafeMutablePointer<Float>.self, count: notificationCapacity),
            notificationCapacity: notificationCapacity,
            ioDevice: deviceInput.device, ioDeviceSilence: deviceInput.silence, ioDeviceChannels: deviceInput.channels,
            ioInputConverter: deviceInput.converter, ioInputRateIndex: deviceInput.rateIndex,
            ioInputLayout: RawLayout(ioIn), ioInputRaw: deviceInput.raw, ioInputRawBytesPerFrame: Int(ioIn.bytesPerFrame),
            ioLinks: Unmanaged.passUnretained(io.renderLinks),
            ioDeviceClean: deviceInput.clean,
            voice: deviceInput.voice.map { Unmanaged.passUnretained($0) }))
        return plan
    }
}

extension AudioGraph {
    /// Builds the plan for `topology` (see ``PlanBuilder``). Control thread; allocates.
    func buildPlan(_ topology: Topology) throws(AudioUnitError) -> BuiltPlan {
        var builder = try PlanBuilder(topology, converterCache: converterCache, delayCache: delayCache,
                                      compensatesLatency: compensatesLatency, notifications: notifications.map(\.box))
        builder.renderThreads = renderThreads
        builder.workers = { [self] count in renderWorkers(count) }
        return try builder.build()
    }
}

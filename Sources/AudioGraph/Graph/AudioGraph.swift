// Graph: the AUGraph analogue — its state, nodes, and the connection edits that update() applies.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A graph of audio units pulled by a driver: the `AUGraph` analogue.
///
/// Lifecycle: create → add nodes and connect them → ``initialize()`` → ``start()`` → (edits +
/// ``update()``)* → ``stop()`` → ``uninitialize()``. Edits (connect, disconnect, set an input
/// callback, remove a node, clear connections) are validated when made and queued; ``update()``
/// applies all queued edits at once or, if any fails, none of them. ``addNode(_:)-(AudioUnit)`` takes effect
/// at once, but a new node is only rendered once an update connects it. ``initialize()`` applies
/// queued edits too.
///
/// Rendering: the graph compiles into a render plan — units in pull order (each renders once
/// per slice, whatever its fan-out), buffers preallocated — that the render thread picks up
/// through an atomic pointer, never a lock. The old plan is freed on the control thread after
/// the render thread has moved past it. A driver pulls through ``renderContext``.
///
/// Thread: all methods from a control thread, one at a time (not the render thread: edits from
/// it throw ``AudioUnitError/cannotDoInCurrentContext``). Parameters may be set from any thread.
/// SAFETY (`@unchecked Sendable`): its mutable state is touched on the control thread only (edits from the render thread are refused); the render thread reads the plan through atomics.
public final class AudioGraph: @unchecked Sendable, CustomStringConvertible {
    struct InputKey: Hashable { let node: AUNode; let element: AudioUnitElement }
    enum InputSource {
        case connection(AUNode, AudioUnitElement)
        case callback(CallbackBox)
    }
    struct Topology {
        var nodes: [AUNode: AudioUnit] = [:]
        var inputs: [InputKey: InputSource] = [:]

        /// The topology's IO unit and its node: the one place the graph looks for it.
        var io: (node: AUNode, unit: IOUnit)? {
            for (node, unit) in nodes { if let io = unit as? IOUnit { return (node, io) } }
            return nil
        }
    }

    var committed = Topology()
    /// Inputs added to mixers by queued connections: (unit, element count, bank and formats
    /// before), restored if the update fails.
    var inputGrowth: [(unit: AudioUnit, count: Int, bank: ParameterBank, formats: [StreamFormat], explicit: Set<AudioUnit.FormatKey>)] = []
    /// Render notifications with their tokens, in the order added.
    var notifications: [(token: Int, box: CallbackBox)] = []
    var nextNotification = 0
    var pending = Topology()
    private var nextNode: Int32 = 1
    let shared = RenderShared()
    var currentResources: PlanResources?
    var retired: [PlanResources] = []
    /// The converters of the published plan, reused by the next plan where they convert the same
    /// way (their resampler history and FIFO carry on, so an untouched path has no gap).
    var converterCache: [ConverterKey: ConverterStorage] = [:]
    /// The published plan's latency-compensation delays, reused likewise (their rings carry on).
    var delayCache: [DelayKey: DelayStorage] = [:]
    /// Frames each input of the published plan is delayed by to align it with its unit's slowest input.
    var compensation: [InputKey: Int] = [:]

    /// Whether the plan aligns parallel paths of different latency where they meet (latency
    /// compensation, on by default; see <doc:UnitCatalogue>). Off, every path keeps its own,
    /// lowest latency — for live monitoring where a branch's alignment does not matter but the
    /// dry signal's delay does — and ``renderLatency`` is still the longest path's. Takes effect
    /// at the next ``initialize()`` or ``update()``. Thread: control thread.
    public var compensatesLatency = true
    /// Device input to device output latency of the longest path, in seconds: what format
    /// conversions (resampling) and units' own processing (``RenderCallbackUnit/latency``, a
    /// limiter's look-ahead) add. Shorter parallel paths are delayed to match it (latency
    /// compensation), so every path from device input to device output has this latency.
    /// Thread: control thread.
    public internal(set) var renderLatency: Double = 0

    /// Whether ``initialize()`` has succeeded (and ``uninitialize()`` not been called since).
    public internal(set) var isInitialized = false

    /// Threads that render the graph's units (see ``setRenderThreads(_:)``): 0 (the default)
    /// chooses from the plan's estimated cost, 1 renders on the render thread alone, 2…64 uses
    /// that many. Thread: control thread.
    public internal(set) var renderThreads = 0
    /// The SCHED_FIFO priority render workers ask for, 1…99, or 0 for ordinary threads (the
    /// default; the offline renderer's). The JACK driver sets it to its process thread's
    /// (`jack_client_real_time_priority`). Takes effect for workers started after it changes:
    /// at the next ``initialize()`` or ``update()`` that needs workers. Thread: control thread.
    public var renderWorkerPriority: Int32 = 0
    /// The worker threads plans render with; replaced (the old ones stop once no plan uses
    /// them) when a plan needs more or another priority.
    var workerPool: RenderWorkers?

    /// Creates an empty graph. Thread: any.
    public init() {}

    deinit {
        shared.running.store(false, ordering: .releasing)
        _ = shared.current.exchange(nil, ordering: .sequentiallyConsistent)
        // A driver must be closed before its graph goes; nothing renders by now.
        retired.removeAll()
        currentResources = nil
    }

    /// The handle a driver calls once per device cycle. Valid while the graph lives.
    public var renderContext: GraphRenderContext { GraphRenderContext(shared: Unmanaged.passUnretained(shared)) }

    /// Frames rendered since the graph was created, at its rate: the sample time of the next
    /// slice (what taps and render callbacks see as `sampleTime`). Thread: any (a relaxed atomic).
    public var sampleTime: Double { Double(shared.sampleTime.load(ordering: .relaxed)) }

    /// Whether the graph is started: a driver's pulls render it (otherwise they render silence).
    /// Thread: any.
    public var isRunning: Bool { shared.running.load(ordering: .acquiring) }

    /// Render cycles completed since the graph was created. Thread: any.
    public var renderCycleCount: UInt64 { shared.cycles.load(ordering: .acquiring) }

    /// Render callbacks that returned a non-zero status (their element rendered silence). Thread: any.
    public var renderErrorCount: UInt64 { shared.renderErrors.load(ordering: .relaxed) }

    /// Non-finite samples (NaN, +Inf, −Inf) the render loop replaced with 0 since the graph was
    /// created. They are caught where samples enter the graph — device input (IO element 1),
    /// render callbacks, converters, custom units (``RenderCallbackUnit``) and file players —
    /// and, whatever a kernel made, in what IO element 0 sends to the device; so none reaches a
    /// recursive filter's memory, the device output or a recording of it. A NaN or Inf that
    /// still reaches a filter (from its own arithmetic) is cleared from its memory at the end
    /// of the slice, like denormals. Counts samples, not channels or slices: a 10-frame burst
    /// on two channels counts 20 (more if a converter spreads it). Thread: any.
    public var nonFiniteSampleCount: UInt64 { shared.nonFiniteSamples.load(ordering: .relaxed) }

    /// Whether edits are queued that ``update()`` has not applied yet.
    public var hasPendingEdits: Bool {
        Set(pending.nodes.keys) != Set(committed.nodes.keys) || !sameInputs(pending.inputs, committed.inputs)
    }

    private func sameInputs(_ a: [InputKey: InputSource], _ b: [InputKey: InputSource]) -> Bool {
        guard a.count == b.count else { return false }
        for (key, source) in a {
            switch (source, b[key]) {
            case let (.connection(n1, e1), .connection(n2, e2)?): if n1 != n2 || e1 != e2 { return false }
            case let (.callback(c1), .callback(c2)?): if c1 !== c2 { return false }
            default: return false
            }
        }
        return true
    }

    func checkControlThread() throws(AudioUnitError) {
        let thread = UInt(pthread_self())
        if shared.renderThread.load(ordering: .relaxed) == thread || workerPool?.isWorker(thread) == true {
            throw .cannotDoInCurrentContext
        }
    }

    // MARK: - Nodes

    /// Adds a unit as a new node; it exists at once (`nodeInfo` finds it) and is rendered once an
    /// update connects it. Mirrors `AUGraphAddNode` + `AUGraphNodeInfo`.
    /// - Parameter unit: a unit not in any graph. Render callbacks set on it beforehand become
    ///   queued edits.
    /// - Returns: the new node.
    /// - Throws: ``AudioUnitError/invalidAudioUnit`` (already in a graph),
    ///   ``AudioUnitError/outputNodeErr`` (a second ``IOUnit``), ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread.
    @discardableResult
    public func addNode(_ unit: AudioUnit) throws(AudioUnitError) -> AUNode {
        try checkControlThread()
        guard unit.graph == nil else { throw .invalidAudioUnit }
        if unit is IOUnit, pending.io != nil { throw .outputNodeErr }
        let node = AUNode(rawValue: nextNode)
        nextNode += 1
        unit.graph = self
        unit.node = node
        committed.nodes[node] = unit
        pending.nodes[node] = unit
        for (element, callback) in unit.detachedRenderCallbacks.sorted(by: { $0.key < $1.key }) {
            pending.inputs[InputKey(node: node, element: element)] = .callback(CallbackBox(render: callback))
        }
        unit.detachedRenderCallbacks = [:]
        return node
    }

    /// Queues the removal of a node and every connection to or from it. Mirrors `AUGraphRemoveNode`.
    /// The unit keeps rendering until ``update()``; after it returns, the render thread never
    /// touches the unit again and the unit may join another graph.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread.
    public func removeNode(_ node: AUNode) throws(AudioUnitError) {
        try checkControlThread()
        guard pending.nodes[node] != nil else { throw .nodeNotFound }
        pending.nodes[node] = nil
        pending.inputs = pending.inputs.filter { key, source in
            if key.node == node { return false }
            if case .connection(let source, _) = source, source == node { return false }
            return true
        }
    }

    /// The nodes, in order of addition, including queued additions and excluding queued removals.
    public var nodes: [AUNode] { pending.nodes.keys.sorted() }

    /// The graph's ``IOUnit`` (a graph holds at most one), or nil when there is none; like
    /// ``nodes``, a removal queued for the next ``update()`` already counts. Thread: control thread.
    public var ioUnit: IOUnit? { pending.io?.unit }

    /// Number of nodes. Mirrors `AUGraphGetNodeCount`.
    public var nodeCount: Int { pending.nodes.count }

    /// The node at an index of ``nodes``. Mirrors `AUGraphGetIndNode`.
    /// - Throws: ``AudioUnitError/invalidElement`` when `index` is out of 0..<nodeCount.
    public func node(at index: Int) throws(AudioUnitError) -> AUNode {
        let all = nodes
        guard index >= 0, index < all.count else { throw .invalidElement }
        return all[index]
    }

    /// The unit a node holds. Mirrors `AUGraphNodeInfo`.
    /// - Throws: ``AudioUnitError/nodeNotFound``.
    public func nodeInfo(_ node: AUNode) throws(AudioUnitError) -> AudioUnit {
        guard let unit = pending.nodes[node] else { throw .nodeNotFound }
        return unit
    }

    // MARK: - Connections and callbacks

    /// Queues a connection from a source node's output element to a destination node's input
    /// element. Mirrors `AUGraphConnectNodeInput`. Fan-out (one output, many inputs) is allowed;
    /// fan-in needs a mixer. Formats are checked when the graph compiles (initialize/update).
    /// - Parameters:
    ///   - source: node whose output feeds. For the ``IOUnit`` only element 1 (device input) can feed.
    ///   - sourceOutputElement: 0…outputElementCount−1.
    ///   - destination: node to feed. For the ``IOUnit`` only element 0 (device output) can be fed.
    ///   - destinationInputElement: 0…inputElementCount−1; for a ``MultichannelMixerUnit`` also
    ///     inputElementCount, which adds that input (like AVAudioMixerNode's next available bus),
    ///     even while running — the update that applies the connection makes it heard, and a
    ///     failed update takes the input away again.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/invalidElement`` also for an ``IOUnit``'s device side (its output
    ///   element 0 goes to the device and feeds nothing; its input element 1 is the device's
    ///   and cannot be fed), ``AudioUnitError/invalidConnection`` (input already fed, a cycle),
    ///   ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread.
    public func connectNodeInput(_ source: AUNode, sourceOutputElement: AudioUnitElement,
                                 _ destination: AUNode, destinationInputElement: AudioUnitElement) throws(AudioUnitError) {
        try checkControlThread()
        guard let src = pending.nodes[source], let dst = pending.nodes[destination] else { throw .nodeNotFound }
        try src.checkElement(.output, sourceOutputElement)
        let grows = dst.growsInputsByConnection && Int(destinationInputElement) == Int(dst.elementCount(.input))
        if !grows { try dst.checkElement(.input, destinationInputElement) }
        if src is IOUnit, sourceOutputElement != IOUnit.inputElement { throw .invalidElement }
        if dst is IOUnit, destinationInputElement != IOUnit.outputElement { throw .invalidElement }
        let key = InputKey(node: destination, element: destinationInputElement)
        guard pending.inputs[key] == nil else { throw .invalidConnection }
        if !(src is IOUnit) && !(dst is IOUnit) && isUpstream(destination, of: source, in: pending) { throw .invalidConnection }
        if grows { try growIfNextInput(dst, destinationInputElement) }
        pending.inputs[key] = .connection(source, sourceOutputElement)
    }

    /// A connection to the input element one past a mixer's last adds that element, as
    /// AVAudioMixerNode does, even while running; the update that applies the connection makes
    /// it audible, and a failed update takes it away again.
    private func growIfNextInput(_ unit: AudioUnit, _ element: AudioUnitElement) throws(AudioUnitError) {
        let count = Int(unit.elementCount(.input))
        guard unit.growsInputsByConnection, Int(element) == count else { return }
        guard count < 1024 else { throw .invalidElement }
        inputGrowth.append((unit, count, unit.bank, unit.inputFormats, unit.explicitFormats))
        unit.resizeInputs(count + 1)
    }

    /// Whether `candidate` feeds `node`, directly or through other units (the IO unit breaks paths:
    /// its input side is a source, its output side a sink).
    private func isUpstream(_ candidate: AUNode, of node: AUNode, in topology: Topology) -> Bool {
        var stack = [node], seen: Set<AUNode> = []
        while let n = stack.popLast() {
            if n == candidate { return true }
            guard seen.insert(n).inserted, let unit = topology.nodes[n], !(unit is IOUnit) else { continue }
            for element in 0..<unit.elementCount(.input) {
                switch topology.inputs[InputKey(node: n, element: element)] {
                case .connection(let s, _)?: stack.append(s)
                case .callback(let box)?: stack.append(contentsOf: box.sources.map(\.node))
                case nil: break
                }
            }
        }
        return false
    }

    /// Queues the removal of whatever feeds an input element (connection or callback).
    /// Mirrors `AUGraphDisconnectNodeInput`.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/noConnection`` (nothing feeds it), ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread.
    public func disconnectNodeInput(_ destination: AUNode, inputElement: AudioUnitElement) throws(AudioUnitError) {
        try checkControlThread()
        guard let dst = pending.nodes[destination] else { throw .nodeNotFound }
        try dst.checkElement(.input, inputElement)
        let key = InputKey(node: destination, element: inputElement)
        guard pending.inputs[key] != nil else { throw .noConnection }
        pending.inputs[key] = nil
    }

    /// Queues a render callback as the source of an input element. Mirrors `AUGraphSetNodeInputCallback`.
    /// - Parameters:
    ///   - destination: the node to feed.
    ///   - inputElement: 0…inputElementCount−1 (for the ``IOUnit``, 0: element 1 is the
    ///     device's input and cannot be fed).
    ///   - callback: called on the render thread once per slice; see ``RenderCallback``.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement`` (no such
    ///   input element, or the ``IOUnit``'s element 1),
    ///   ``AudioUnitError/invalidConnection`` (already fed; disconnect first),
    ///   ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread.
    public func setNodeInputCallback(_ destination: AUNode, inputElement: AudioUnitElement, _ callback: @escaping RenderCallback) throws(AudioUnitError) {
        try checkControlThread()
        guard let dst = pending.nodes[destination] else { throw .nodeNotFound }
        try growIfNextInput(dst, inputElement)
        try dst.checkElement(.input, inputElement)
        if dst is IOUnit, inputElement != IOUnit.outputElement { throw .invalidElement }
        let key = InputKey(node: destination, element: inputElement)
        guard pending.inputs[key] == nil else { throw .invalidConnection }
        pending.inputs[key] = .callback(CallbackBox(render: callback))
    }

    /// Queues a render callback that pulls other nodes' outputs as the source of an input
    /// element: the `AURenderCallback` whose body calls `AudioUnitRender`, as the classic
    /// play-through does with the microphone. Inside the callback,
    /// ``RenderCallbackContext/render(_:element:)`` copies a declared output's audio for the
    /// current slice into the callback's buffers. Each declared node renders before the callback,
    /// once per slice however many read it, whether or not anything else connects it.
    ///
    /// ```swift
    /// let muted = MuteSwitch()                    // a Sendable class holding an Atomic<Bool>
    /// try graph.setNodeInputCallback(ioNode, inputElement: IOUnit.outputElement,
    ///                                pulling: [AUNodeOutput(ioNode, element: IOUnit.inputElement)]) { context in
    ///     let status = context.render(ioNode, element: IOUnit.inputElement)   // AudioUnitRender(rio, …, 1, …)
    ///     if muted.isOn.load(ordering: .relaxed) { for c in 0..<context.buffers.channelCount { context.buffers[c].update(repeating: 0) } }
    ///     return status
    /// }
    /// ```
    /// - Parameters:
    ///   - destination: the node to feed.
    ///   - inputElement: 0…inputElementCount−1 (for the ``IOUnit``, 0).
    ///   - sources: the node outputs the callback may pull, 1…64 of them: a node's element 0, or
    ///     the ``IOUnit``'s element 1 (the device input as the graph receives it). Each must
    ///     have the callback format's sample rate and either one channel (copied to every
    ///     channel) or as many channels as the callback's format; that is checked when the graph
    ///     compiles (``AudioGraph/update()`` throws ``AudioUnitError/formatNotSupported``). A
    ///     source removed later reads as ``AudioUnitError/noConnection`` inside the callback.
    ///   - callback: called on the render thread once per slice; see ``PullingRenderCallback``.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement`` (no such
    ///   input element, the ``IOUnit``'s element 1 as destination, a source element that is not
    ///   an output or is the IO unit's element 0), ``AudioUnitError/invalidPropertyValue`` (no
    ///   sources, more than 64, or one named twice), ``AudioUnitError/invalidConnection`` (the
    ///   input is already fed, or a source is fed by the destination: a cycle),
    ///   ``AudioUnitError/cannotDoInCurrentContext``. Nothing is queued when it throws.
    /// - Thread: control thread.
    public func setNodeInputCallback(_ destination: AUNode, inputElement: AudioUnitElement, pulling sources: [AUNodeOutput],
                                     _ callback: @escaping PullingRenderCallback) throws(AudioUnitError) {
        try checkControlThread()
        guard let dst = pending.nodes[destination] else { throw .nodeNotFound }
        guard !sources.isEmpty, sources.count <= 64, Set(sources).count == sources.count else { throw .invalidPropertyValue }
        for source in sources {
            guard let unit = pending.nodes[source.node] else { throw .nodeNotFound }
            try unit.checkElement(.output, source.element)
            if unit is IOUnit, source.element != IOUnit.inputElement { throw .invalidElement }
        }
        let grows = dst.growsInputsByConnection && Int(inputElement) == Int(dst.elementCount(.input))
        if !grows { try dst.checkElement(.input, inputElement) }
        if dst is IOUnit, inputElement != IOUnit.outputElement { throw .invalidElement }
        let key = InputKey(node: destination, element: inputElement)
        guard pending.inputs[key] == nil else { throw .invalidConnection }
        if !(dst is IOUnit) {
            for source in sources where !(pending.nodes[source.node] is IOUnit) {
                if isUpstream(destination, of: source.node, in: pending) { throw .invalidConnection }
            }
        }
        if grows { try growIfNextInput(dst, inputElement) }
        pending.inputs[key] = .callback(CallbackBox(pulling: callback, sources: sources))
    }

    /// Queues the removal of every connection and input callback. Mirrors `AUGraphClearConnections`.
    /// - Throws: ``AudioUnitError/cannotDoInCurrentContext``.
    public func clearConnections() throws(AudioUnitError) {
        try checkControlThread()
        pending.inputs = [:]
    }

    /// The connections as they will be after the next update (queued edits included), sorted by
    /// destination. Mirrors `AUGraphGetNumberOfInteractions` / `AUGraphGetInteractionInfo`.
    public var connections: [AUNodeConnection] {
        pending.inputs.compactMap { key, source -> AUNodeConnection? in
            guard case .connection(let node, let element) = source else { return nil }
            return AUNodeConnection(sourceNode: node, sourceOutputElement: element,
                                    destinationNode: key.node, destinationInputElement: key.element)
        }.sorted { ($0.destinationNode, $0.destinationInputElement) < ($1.destinationNode, $1.destinationInputElement) }
    }

    /// Every interaction: connections and input callbacks, queued edits included, sorted by
    /// destination. Mirrors `AUGraphGetNumberOfInteractions` / `AUGraphGetInteractionInfo`.
    public var interactions: [AUNodeInteraction] {
        pending.inputs.sorted { ($0.key.node, $0.key.element) < ($1.key.node, $1.key.element) }.map { key, source in
            switch source {
            case .connection(let node, let element):
                return .connection(AUNodeConnection(sourceNode: node, sourceOutputElement: element,
                                                    destinationNode: key.node, destinationInputElement: key.element))
            case .callback:
                return .inputCallback(destinationNode: key.node, destinationInputElement: key.element)
            }
        }
    }

    /// The interactions a node takes part in, as source or destination. Mirrors
    /// `AUGraphCountNodeInteractions` / `AUGraphGetNodeInteractions`.
    /// - Throws: ``AudioUnitError/nodeNotFound``.
    public func interactions(of node: AUNode) throws(AudioUnitError) -> [AUNodeInteraction] {
        guard pending.nodes[node] != nil else { throw .nodeNotFound }
        return interactions.filter {
            switch $0 {
            case .connection(let c): return c.sourceNode == node || c.destinationNode == node
            case .inputCallback(let destination, _): return destination == node
            }
        }
    }

}

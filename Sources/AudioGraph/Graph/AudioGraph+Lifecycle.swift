// Graph: initialize, start, stop, update — compiling a plan, publishing it, reclaiming the old one.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension AudioGraph {
    // MARK: - Lifecycle

    /// Applies queued edits and compiles the render plan: every unit gets its render resources.
    /// Mirrors `AUGraphInitialize`. Does nothing if already initialized.
    /// - Throws: ``AudioUnitError/outputNodeErr`` (no IO node), ``AudioUnitError/formatNotSupported``
    ///   (connected formats that cannot meet), ``AudioUnitError/invalidConnection``,
    ///   ``AudioUnitError/cannotDoInCurrentContext``. On failure nothing changes and queued edits stay.
    /// - Thread: control thread; allocates.
    public func initialize() throws(AudioUnitError) {
        try checkControlThread()
        if isInitialized { return }
        let built = try buildPlan(pending)
        isInitialized = true
        apply(pending, built)
    }

    /// Stops the graph if running and releases every unit's render resources. Mirrors
    /// `AUGraphUninitialize`. Formats and element counts can change again afterwards.
    /// - Throws: ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread; waits (at most about a second) for the render thread to leave the plan.
    public func uninitialize() throws(AudioUnitError) {
        try checkControlThread()
        stop()
        guard isInitialized else { return }
        publish(nil)
        converterCache = [:]
        delayCache = [:]
        compensation = [:]
        renderLatency = 0
        shared.latencyFrames.store(0, ordering: .relaxed)
        isInitialized = false
        for unit in committed.nodes.values { unit.isInitialized = false }
    }

    /// Starts rendering: a driver's pulls now render the graph. Mirrors `AUGraphStart`.
    /// - Throws: ``AudioUnitError/uninitialized`` (call ``initialize()`` first),
    ///   ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread.
    public func start() throws(AudioUnitError) {
        try checkControlThread()
        guard isInitialized else { throw .uninitialized }
        shared.running.store(true, ordering: .releasing)
    }

    /// Stops rendering; pulls render silence. Mirrors `AUGraphStop`. Thread: control thread.
    public func stop() {
        shared.running.store(false, ordering: .releasing)
    }

    /// Applies every queued edit at once, or none. Mirrors `AUGraphUpdate`.
    ///
    /// While initialized, the new plan is compiled off the render thread and swapped in between
    /// two cycles; units being removed are released after the render thread has left the old plan.
    /// Filter memory and ramps of units that stay are kept. If compiling fails (for example
    /// formats that cannot meet), the queued edits are discarded, the graph renders exactly as
    /// before, and the error is thrown.
    /// - Throws: ``AudioUnitError/formatNotSupported``, ``AudioUnitError/outputNodeErr`` (the IO node
    ///   was removed while initialized), ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread; allocates; may wait up to about a second for the render thread.
    public func update() throws(AudioUnitError) {
        try checkControlThread()
        let target = pending
        var built: BuiltPlan?
        if isInitialized {
            do { built = try buildPlan(target) } catch {
                pending = committed
                // Mixer inputs the discarded connections added go again; the unit gets back
                // the parameter bank the running plan reads.
                for growth in inputGrowth.reversed() {
                    growth.unit.inputFormats = growth.formats
                    growth.unit.explicitFormats = growth.explicit
                    growth.unit.bank = growth.bank
                }
                inputGrowth = []
                throw error
            }
        }
        apply(target, built)
    }

    /// Makes `target` the committed topology: stores the resolved formats and kernel state,
    /// publishes the new plan (waiting for the render thread to leave the old one), then
    /// releases the units that left the graph.
    func apply(_ target: Topology, _ built: BuiltPlan?, keepingPendingEdits: Bool = false) {
        let removed = committed.nodes.filter { target.nodes[$0.key] == nil }.map(\.value)
        committed = target
        if !keepingPendingEdits {
            pending = target
            inputGrowth = []
        }
        if let built {
            for (node, formats) in built.formats {
                guard let unit = target.nodes[node] else { continue }
                let rateBefore = unit.currentSampleRate
                for (element, format) in formats.inputs.enumerated() { if let format { unit.inputFormats[element] = format } }
                unit.outputFormats = formats.outputs
                if unit.currentSampleRate != rateBefore { unit.clampParametersToCurrentBounds() }
            }
            for (node, kernel) in built.kernels { target.nodes[node]?.kernel = kernel }
            for (node, unit) in target.nodes {
                unit.isInitialized = true
                unit.conversionLatency = built.unitLatency[node] ?? 0
            }
            converterCache = built.converters
            delayCache = built.delays
            compensation = built.compensation
            renderLatency = built.latency
            shared.latencyFrames.store(UInt32((built.latency * (target.io?.unit.deviceOutputFormat.sampleRate ?? 0)).rounded()), ordering: .relaxed)
            publish(built.resources)
        }
        for unit in removed {
            unit.graph = nil
            unit.node = nil
            unit.isInitialized = false
            unit.kernel = nil
        }
    }

    // MARK: - Publication

    /// Publishes a plan (or none), then frees every retired plan the render thread has left.
    func publish(_ resources: PlanResources?) {
        let old = currentResources
        currentResources = resources
        _ = shared.current.exchange(resources?.plan, ordering: .sequentiallyConsistent)
        if let old { retired.append(old) }
        reclaim()
    }

    /// Frees retired plans once the render thread's hazard pointer is not on them. Waits up to
    /// about a second per plan (a render cycle takes one period); a plan still in use after that
    /// (a render thread that died mid-cycle) is kept for a later attempt rather than freed under it.
    func reclaim() {
        retired = retired.filter { resources in
            for _ in 0..<10_000 {
                if shared.hazard.load(ordering: .sequentiallyConsistent) != resources.plan { return false }
                usleep(100)
            }
            return true
        }
    }

    // MARK: - Following a new device rate

    /// Moves every stream format the application set at `oldRate` to `newRate`, keeping its
    /// channel count and layout: for an IO unit whose device rate changed (a JACK server
    /// restarted at another rate), so that formats set only to choose a channel count follow
    /// the device instead of being converted from then on. Formats set at another rate, and the
    /// IO unit's device sides, are left as they are. All-or-none: every moved format is checked
    /// against its unit first, and a refusal changes nothing.
    /// - Parameters:
    ///   - oldRate: Hz, the rate the formats to move carry.
    ///   - newRate: Hz, 1…``StreamFormat/maximumSampleRate``.
    /// - Throws: ``AudioUnitError/initialized`` (uninitialize first),
    ///   ``AudioUnitError/formatNotSupported`` (a rate no format can carry, or a unit refusing one).
    /// - Thread: control thread.
    public func moveSetFormats(from oldRate: Double, to newRate: Double) throws(AudioUnitError) {
        try checkControlThread()
        guard !isInitialized else { throw .initialized }
        if oldRate == newRate { return }
        var moves: [(AudioUnit, AudioUnit.FormatKey, StreamFormat)] = []
        for unit in pending.nodes.values {
            for key in unit.explicitFormats where !unit.isDeviceSide(key.scope, key.element) {
                let stored = key.scope == .input ? unit.inputFormats[Int(key.element)] : unit.outputFormats[Int(key.element)]
                guard stored.sampleRate == oldRate else { continue }
                let moved = try stored.withSampleRate(newRate)
                try unit.checkFormat(moved, scope: key.scope, element: key.element)
                moves.append((unit, key, moved))
            }
        }
        for (unit, key, format) in moves {
            if key.scope == .input { unit.inputFormats[Int(key.element)] = format } else { unit.outputFormats[Int(key.element)] = format }
        }
    }
}

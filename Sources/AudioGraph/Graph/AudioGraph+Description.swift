// Graph: the readable dump of a graph, like CAShow.

extension AudioGraph {
    /// Seconds as milliseconds with two decimals, for the dump (no Foundation in the core).
    private func milliseconds(_ seconds: Double) -> String {
        let hundredths = Int((seconds * 100_000).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// A readable dump of the graph, like `CAShow`: the state (initialized, running, pending
    /// edits, latency, render notifications), then every node with its unit type and
    /// each element's format, what feeds each input (a node's output, a render callback, or
    /// nothing) and where an input is converted. Thread: control thread.
    public var description: String { description(nodeNames: [:]) }

    /// The dump of ``description``, with nodes called by the names an application knows them
    /// by (a graph file's ids, say) instead of their numbers: `lp: lowPassFilter`,
    /// `in 0: … ← gate:0`. Nodes without a name keep their number (`node 3`).
    /// - Parameter nodeNames: a name for each node to call by name.
    /// - Thread: control thread.
    public func description(nodeNames: [AUNode: String]) -> String {
        func name(_ node: AUNode) -> String { nodeNames[node] ?? node.description }
        var state = "\(isInitialized ? "initialized" : "uninitialized"), \(isRunning ? "running" : "stopped")"
        if hasPendingEdits { state += ", edits pending" }
        if renderLatency > 0 { state += ", latency \(milliseconds(renderLatency)) ms" }
        if !notifications.isEmpty { state += ", \(notifications.count) render notification(s)" }
        if renderThreadsInUse > 1 { state += ", rendered on \(renderThreadsInUse) threads" }
        var lines = ["AudioGraph: \(nodeCount) node(s), \(state)"]
        for node in nodes {
            guard let unit = try? nodeInfo(node) else { continue }
            var header = "  \(name(node)): \(unit.type.rawValue)"
            if unit.conversionLatency > 0 { header += " (input conversion adds \(milliseconds(unit.conversionLatency)) ms)" }
            if unit.processingLatency > 0 { header += " (processing adds \(milliseconds(unit.processingLatency)) ms)" }
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
                    case .connection(let n, let e)?: source = "← \(name(n)):\(e)"
                    case .callback?: source = "← render callback"
                    case nil: source = "(unconnected)"
                    }
                    if pending.inputs[key] != nil, let processing, !(unit is IOUnit) {
                        let channels = unit.processingChannels(ofInput: Int(element), outputChannels: Int(processing.channelsPerFrame))
                        if format.sampleRate != processing.sampleRate || Int(format.channelsPerFrame) != channels || !format.isCanonical {
                            source += ", converted to \(Int(processing.sampleRate)) Hz \(channels) ch"
                        }
                    }
                }
                if let frames = compensation[key], pending.inputs[key] != nil {
                    source += ", delayed \(frames) frame(s) to align with the slowest input (latency compensation)"
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

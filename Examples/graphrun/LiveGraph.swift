// graphrun: the live graph — a graph file made into an AudioGraph, later versions applied to it as live edits.
//
// Parameter changes are set at once, shape changes (nodes added, removed or replaced,
// connections changed) queued and swapped in together by one update(). All or nothing: a
// version that fails leaves the running graph exactly as it was.
import AudioGraph
import AudioGraphPlugins

/// The running graph and the file version it follows.
final class LiveGraph {
    let graph: AudioGraph
    let io: IOUnit
    let ioNode: AUNode
    private(set) var spec: GraphSpec?
    private var units: [String: (node: AUNode, unit: AudioUnit)] = [:]
    /// The server's sample rate; 0 until the driver knows it (formats follow it).
    var sampleRate: Double = 0
    /// Units the file does not name, around the IO unit of one part of a split graph
    /// (SplitGraph.swift), by their `@`-ids; made once, kept through every edit.
    let fixed: FixedUnits
    private var fixedNodes: [String: AUNode] = [:]

    /// `--threads`: the threads every graph (each part's) renders with (AudioGraph.setRenderThreads).
    /// Set once by main before any graph is made.
    nonisolated(unsafe) static var renderThreads = 0

    init(fixed: FixedUnits = FixedUnits()) throws(AudioUnitError) {
        graph = AudioGraph()
        try graph.setRenderThreads(LiveGraph.renderThreads)
        io = IOUnit()
        ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        self.fixed = fixed
        for (id, unit) in fixed.units { fixedNodes[id] = try graph.addNode(unit) }
        try makeFixedConnections()
    }

    /// The fixed units' connections (made again after every `clearConnections()`).
    private func makeFixedConnections() throws(AudioUnitError) {
        for c in fixed.connections {
            try graph.connectNodeInput(c.from == "io" ? ioNode : fixedNodes[c.from]!, sourceOutputElement: c.fromElement,
                                       c.to == "io" ? ioNode : fixedNodes[c.to]!, destinationInputElement: c.toElement)
        }
    }

    /// The graph's dump with the file's node ids (`lp: lowPassFilter`, `← gate:0`) instead of
    /// node numbers, as the user knows the nodes.
    var description: String {
        var names = [ioNode: "io"]
        for (id, entry) in units { names[entry.node] = id }
        for (id, node) in fixedNodes { names[node] = id }
        return graph.description(nodeNames: names)
    }

    /// NaN and ±Inf samples replaced with 0: by the graph where they entered it and before
    /// the outputs, and by the hosted plugins in their own outputs.
    var nonFiniteSampleCount: UInt64 {
        units.values.reduce(graph.nonFiniteSampleCount) { sum, entry in
            sum &+ ((entry.unit as? PluginUnit)?.nonFiniteSampleCount ?? 0)
        }
    }

    /// What an apply did, for the log line.
    struct Changes {
        var added: [String] = [], removed: [String] = [], replaced: [String] = []
        /// Each parameter set on a unit that stayed, as `node.parameter old → new`
        /// (`mixer.inputParameters[0].pan 0 → -0.5`), in the file's order.
        var parameters: [String] = []
        var connectionsChanged = false
        /// What changed in a split graph's other parts, as `on far: …`.
        var otherParts: [String] = []
        var isEmpty: Bool { added.isEmpty && removed.isEmpty && replaced.isEmpty && parameters.isEmpty && !connectionsChanged && otherParts.isEmpty }
        var description: String {
            var parts: [String] = []
            if !added.isEmpty { parts.append("added \(added.joined(separator: ", "))") }
            if !removed.isEmpty { parts.append("removed \(removed.joined(separator: ", "))") }
            if !replaced.isEmpty { parts.append("replaced \(replaced.joined(separator: ", ")) (new shape)") }
            if !parameters.isEmpty {
                parts.append("\(parameters.count) parameter\(parameters.count == 1 ? "" : "s") changed (\(parameters.joined(separator: ", ")))")
            }
            if connectionsChanged { parts.append("connections changed") }
            parts += otherParts
            return parts.isEmpty ? "no change" : parts.joined(separator: "; ")
        }
    }

    /// A parameter value as a file would write it: 1000, 0.5, -3.
    static func number(_ value: Float) -> String {
        value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : "\(value)"
    }

    /// Makes the graph follow `new`: the first call builds it (uninitialized; the driver
    /// initializes it), later calls edit the running graph through one `update()`.
    /// - Throws: ``GraphFileError`` naming the line and field; the graph is then unchanged.
    /// - Thread: control thread.
    @discardableResult
    func apply(_ new: GraphSpec, reader: GraphFileReader) throws(GraphFileError) -> Changes {
        var changes = Changes()
        if let old = spec {
            if new.channels != old.channels {
                throw reader.error([.key("channels")], "the channel count (JACK ports) cannot change while running; restart graphrun")
            }
            if new.name != old.name {
                throw reader.error([.key("name")], "the client name cannot change while running; restart graphrun")
            }
        }
        let oldNodes = Dictionary(uniqueKeysWithValues: (spec?.nodes ?? []).map { ($0.id, $0) })
        var kept: [String: NodeSpec] = [:]
        var fresh: [(spec: NodeSpec, index: Int)] = []
        for (index, node) in new.nodes.enumerated() {
            if let old = oldNodes[node.id], old.sameShape(as: node) { kept[node.id] = node }
            else {
                fresh.append((node, index))
                if oldNodes[node.id] != nil { changes.replaced.append(node.id) } else { changes.added.append(node.id) }
            }
        }
        let leaving = oldNodes.keys.filter { kept[$0] == nil }.sorted()
        changes.removed = leaving.filter { id in !new.nodes.contains { $0.id == id } }

        // 1. New units, parameters and formats set while detached (they cannot fail later).
        var added: [String: (node: AUNode, unit: AudioUnit)] = [:]
        func dropAdded() {
            for (_, entry) in added { try? graph.removeNode(entry.node) }
            try? graph.update()
        }
        for (node, index) in fresh {
            do {
                let unit = try makeUnit(node, channels: new.channels)
                added[node.id] = (try graph.addNode(unit), unit)
            } catch let error as NodeTypeError {
                dropAdded()
                throw reader.error([.key("nodes"), .index(new.fileIndex(ofNode: index))] + (error.field.map { [.key($0)] } ?? []), error.message)
            } catch {
                dropAdded()
                throw reader.error([.key("nodes"), .index(new.fileIndex(ofNode: index))], "the unit refused its settings: \(error)")
            }
        }
        func resolve(_ id: String) -> AUNode { id == "io" ? ioNode : (fixedNodes[id] ?? added[id]?.node ?? units[id]!.node) }

        // 2. The connections: all cleared and made again (identical ones change nothing in the
        //    plan), so a refusal can be undone by making the old ones again.
        let oldConnections = spec?.connections ?? []
        changes.connectionsChanged = Set(oldConnections) != Set(new.connections) || !changes.replaced.isEmpty
        do {
            try graph.clearConnections()
            try makeFixedConnections()
        } catch {
            dropAdded()
            throw reader.error([.key("connections")], "\(error)")
        }
        for (index, c) in new.connections.enumerated() {
            do {
                try graph.connectNodeInput(resolve(c.from), sourceOutputElement: c.fromElement, resolve(c.to), destinationInputElement: c.toElement)
            } catch {
                try? graph.clearConnections()
                try? makeFixedConnections()
                for c in oldConnections {
                    func old(_ id: String) -> AUNode? { id == "io" ? ioNode : (fixedNodes[id] ?? units[id]?.node) }
                    guard let from = old(c.from), let to = old(c.to) else { continue }
                    try? graph.connectNodeInput(from, sourceOutputElement: c.fromElement, to, destinationInputElement: c.toElement)
                }
                dropAdded()
                throw reader.error([.key("connections"), .index(new.fileIndex(ofConnection: index))], "refused: \(error)")
            }
        }
        // 3. Units that leave (removed, or replaced by a new shape).
        for id in leaving {
            if let entry = units[id] { try? graph.removeNode(entry.node) }
        }
        // 4. One update: all of it or none.
        if graph.isInitialized || spec != nil {
            do {
                try graph.update()
            } catch {
                // update() discarded the queued edits; take the detached new units out again.
                dropAdded()
                throw reader.error([.key("connections")], "the graph cannot run this way: \(error)")
            }
        }
        for id in leaving { units[id] = nil }
        for (id, entry) in added { units[id] = entry }

        // 5. Parameters of units that stayed: set directly, the render thread picks them up.
        for node in new.nodes where kept[node.id] != nil {
            guard let old = oldNodes[node.id], let unit = units[node.id]?.unit else { continue }
            changes.parameters += setParameters(of: unit, node, previous: old)
        }
        spec = new
        return changes
    }

    private func makeUnit(_ node: NodeSpec, channels: Int) throws(NodeTypeError) -> AudioUnit {
        let unit = try node.type.makeUnit(node.shape, fileChannels: channels, sampleRate: sampleRate > 0 ? sampleRate : 48_000)
        if let state = node.state, let plugin = unit as? PluginUnit {
            do { try plugin.restoreState(state) } catch { throw NodeTypeError(field: "state", message: "\(error)") }
        }
        _ = setParameters(of: unit, node, previous: nil)
        return unit
    }

    /// After the graph followed a new server rate: the file's parameters are set again (the
    /// units clamped those whose bound moved with the rate, a cutoff above rate/2, and one
    /// clamped before may fit again), and those still clamped are returned as
    /// `node.parameter 23000 → 22050`. The file keeps its value, so its next save must bring
    /// such a value within the bound.
    func refitParametersToRate() -> [String] {
        guard let spec else { return [] }
        var clamped: [String] = []
        for node in spec.nodes {
            guard let unit = units[node.id]?.unit else { continue }
            let table = ParameterTable(of: unit)
            for (name, value) in node.parameters.sorted(by: { $0.key < $1.key }) {
                guard let info = table.node[name], (try? unit.parameter(info.id, scope: info.scope, element: 0)) != value,
                      (try? unit.setParameter(info.id, value, scope: info.scope, element: 0)) != nil,
                      let now = try? unit.parameter(info.id, scope: info.scope, element: 0), now != value else { continue }
                clamped.append("\(node.id).\(name) \(LiveGraph.number(value)) → \(LiveGraph.number(now))")
            }
        }
        return clamped
    }

    /// Sets the parameters that differ from `previous` (all of them when nil); returns each one
    /// set, as `node.parameter old → new` (a value not in the file is the unit's default).
    /// Names, scopes and defaults are the unit's own (``ParameterTable``).
    private func setParameters(of unit: AudioUnit, _ node: NodeSpec, previous: NodeSpec?) -> [String] {
        let table = ParameterTable(of: unit)
        var changed: [String] = []
        func change(_ field: String, _ old: Float, _ new: Float) -> String {
            "\(node.id).\(field) \(LiveGraph.number(old)) → \(LiveGraph.number(new))"
        }
        // Named in the file now or before: a parameter taken out of the file goes back to its default.
        for name in Set(node.parameters.keys).union(previous.map { Array($0.parameters.keys) } ?? []).sorted() {
            guard let info = table.node[name] else { continue }
            let value = node.parameters[name] ?? info.defaultValue
            let old = previous.map { $0.parameters[name] ?? info.defaultValue }
            if old == value || (old == nil && node.parameters[name] == nil) { continue }
            if (try? unit.setParameter(info.id, value, scope: info.scope, element: 0)) != nil {
                changed.append(change(name, old ?? info.defaultValue, value))
            }
        }
        for element in 0..<node.inputs {
            let now = element < node.inputParameters.count ? node.inputParameters[element] : [:]
            let before = previous.map { element < $0.inputParameters.count ? $0.inputParameters[element] : [:] }
            for (name, info) in table.input.sorted(by: { $0.key < $1.key }) {
                let value = now[name] ?? info.defaultValue
                let old = before.map { $0[name] ?? info.defaultValue }
                if old == value || (old == nil && now[name] == nil) { continue }
                if (try? unit.setParameter(info.id, value, scope: .input, element: AudioUnitElement(element))) != nil {
                    changed.append(change("inputParameters[\(element)].\(name)", old ?? info.defaultValue, value))
                }
            }
        }
        return changed
    }
}

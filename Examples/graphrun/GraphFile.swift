// graphrun: the graph file format — a small JSON description of an AudioGraph, read and checked field by field.
//
// Nodes with a type and parameters, an output format where a unit has one, connections; read
// with Foundation's JSONSerialization. Errors name the line and the field.
import AudioGraph
import AudioGraphPlugins
import Foundation

/// The parameters a graph file can set on a unit, as the unit itself describes them
/// (`AudioUnit.parameterList(scope:)`): name, ID, scope, range, default. Nothing here repeats
/// a unit's numbers, so the file accepts exactly what the unit does.
struct ParameterTable {
    /// A node's "parameters": the unit's global and output-scope parameters, by file name.
    let node: [String: AudioUnitParameterInfo]
    /// A mixer's "inputParameters": its input-scope parameters (one set per input element).
    let input: [String: AudioUnitParameterInfo]
    /// The sample rate the unit's bounds were read at: the server's, when known.
    let sampleRate: Double?
    /// Half the rate the bounds were read at: a hertz bound equal to it is "half the server's rate".
    let halfRate: Float
    /// Where `sampleRate` came from when it is not the server's: "checked at 48000 Hz, the
    /// default" (`--check`); nil for the server's.
    let rateNote: String?

    /// The parameters of `unit` as it is now.
    init(of unit: AudioUnit, sampleRate: Double? = nil, rateNote: String? = nil) {
        func byName(_ list: [AudioUnitParameterInfo]) -> [String: AudioUnitParameterInfo] {
            // A plugin's parameters go by port symbol ("gain", "cutoff").
            Dictionary(list.map { ((unit as? PluginUnit)?.port(forParameter: $0.id)?.symbol ?? ParameterTable.fileName(of: $0), $0) },
                       uniquingKeysWith: { first, _ in first })
        }
        // Read-only parameters (a dynamics processor's meters) are not the file's to set.
        node = byName((unit.parameterList(scope: .global) + unit.parameterList(scope: .output)).filter { !$0.isReadOnly })
        input = byName(unit.parameterList(scope: .input))
        self.sampleRate = sampleRate
        self.rateNote = rateNote
        halfRate = Float((try? unit.streamFormat(scope: .output, element: 0))?.sampleRate ?? 0) / 2
    }

    /// "Hz, 10…24000, default 6900" and the like, for `--list`.
    static func describe(_ info: AudioUnitParameterInfo) -> String {
        func n(_ v: Float) -> String { v == v.rounded() && abs(v) < 1e9 ? String(Int(v)) : "\(v)" }
        let bounds = info.clampsToRange ? "\(n(info.minValue))…\(n(info.maxValue))" : "≥ \(n(info.minValue)) (nominal \(n(info.minValue))…\(n(info.maxValue)))"
        return "\(info.unit), \(bounds), default \(n(info.defaultValue))"
    }

    /// Short names files have always used instead of a unit's own.
    private static let shortNames = ["CutoffFrequency": "cutoff", "CenterFrequency": "center"]

    /// A parameter's name in a file: the unit's own name in lower camel case ("RampTime" →
    /// "rampTime"), or its short name ("CutoffFrequency" → "cutoff", "CenterFrequency" → "center").
    static func fileName(of info: AudioUnitParameterInfo) -> String {
        shortNames[info.name] ?? info.name.prefix(1).lowercased() + info.name.dropFirst()
    }

    /// Why `value` is outside `info`'s range, or nil when the unit takes it. Parameters that
    /// clamp are checked against their range; the others (mixer Volume: its range is
    /// advisory, the unit stores any finite value) against their lowest value only.
    func problem(with value: Float, _ info: AudioUnitParameterInfo) -> String? {
        guard info.clampsToRange else { return value < info.minValue ? "\(value) is below \(info.minValue)" : nil }
        if (info.minValue...info.maxValue).contains(value) { return nil }
        guard info.unit == .hertz, info.maxValue == halfRate else { return "\(value) is outside \(info.minValue)…\(info.maxValue)" }
        if let sampleRate, value > info.maxValue {
            guard let rateNote else { return "\(value) Hz is above half the server's rate (\(Int(sampleRate / 2)) Hz)" }
            return "\(value) Hz is above half the sample rate (\(Int(sampleRate / 2)) Hz; \(rateNote))"
        }
        return "\(value) Hz is outside \(Int(info.minValue)) Hz…half the server's sample rate"
    }
}

/// One node of a graph file.
struct NodeSpec: Equatable {
    var id: String
    var type: NodeType
    /// The shape fields the file gave (element counts, channels, files); missing ones take
    /// their defaults (``NodeType/fields``).
    var shape: Shape
    /// Input and output elements of a unit of this shape.
    var inputs: Int
    var outputs: Int
    /// Global / output parameters by name.
    var parameters: [String: Float]
    /// Mixer input parameters, one dictionary per input element.
    var inputParameters: [[String: Float]]
    /// The line of the node's object in the file.
    var line: Int
    /// An LV2 node's plugin state (the LV2 state extension), restored into its unit when made.
    var state: PluginState? = nil
    /// The "servers" entry the node runs on (its "server" field), or nil for io's (the first).
    var server: String? = nil
    /// Each output element's channel count, as a unit of this shape makes them (what a
    /// connection from it that crosses servers carries).
    var outputChannels: [Int] = []

    /// Whether `other` needs a new unit (type, element count, format or plugin state differ)
    /// rather than new parameter values. A changed state makes a new unit: LV2's restore() may
    /// not run beside the rendering instance's run().
    func sameShape(as other: NodeSpec) -> Bool { type == other.type && shape == other.shape && state == other.state && server == other.server }

    static func == (a: NodeSpec, b: NodeSpec) -> Bool {
        a.id == b.id && a.sameShape(as: b) && a.parameters == b.parameters && a.inputParameters == b.inputParameters
    }
}

/// One connection: (node, output element) → (node, input element). "io" is the IO unit:
/// as a source its element 1 (JACK inputs), as a destination its element 0 (JACK outputs).
struct ConnectionSpec: Hashable {
    var from: String
    var fromElement: AudioUnitElement
    var to: String
    var toElement: AudioUnitElement
}

/// One entry of a graph file's "servers": a JACK server a part of the graph runs on.
struct ServerSpec: Equatable {
    /// The entry's name, as nodes' "server" fields give it.
    var name: String
    /// The JACK server to join ("jack"); for the first entry (io's) nil means the usual one
    /// (--server, else `$JACK_DEFAULT_SERVER`, else "default"), and --server wins over it. The
    /// other entries must name one.
    var jack: String?
    /// For a netjack2 slave of the first entry's server: the slave's client name on the master
    /// ("net"), or nil to find the one link there.
    var net: String?
    var line: Int
}

/// A whole graph file.
struct GraphSpec: Equatable {
    /// "servers", in the file's order (io runs on the first); empty when the file has none.
    var servers: [ServerSpec] = []
    var name: String?
    var channels: Int
    var nodes: [NodeSpec]
    var connections: [ConnectionSpec]
    /// Line of each connection, in order.
    var connectionLines: [Int]
    /// Line of the "connections" key, for errors about the graph as a whole.
    var connectionsLine: Int
    /// Line of the "channels" key (or 1).
    var channelsLine: Int
    /// For one part of a split graph (SplitGraph.swift): each node's and connection's index in
    /// the file, for errors that name the file's entry; nil for the whole file.
    var nodeFileIndices: [Int]? = nil
    var connectionFileIndices: [Int]? = nil

    func fileIndex(ofNode index: Int) -> Int { nodeFileIndices?[index] ?? index }
    func fileIndex(ofConnection index: Int) -> Int { connectionFileIndices?[index] ?? index }

    static func == (a: GraphSpec, b: GraphSpec) -> Bool {
        a.name == b.name && a.channels == b.channels && a.nodes == b.nodes && a.connections == b.connections && a.servers == b.servers
    }
}

/// Why a graph file was refused: the file, the line (and for JSON syntax the column), the
/// field (a path such as `nodes[1].parameters.cutoff`) and what is wrong.
struct GraphFileError: Error, CustomStringConvertible {
    var file: String
    var line: Int
    var column: Int? = nil
    var field: String
    var message: String
    /// The exit status it ends graphrun with when not the usual one (2 for a mistake in the
    /// file, which has a line; 1 without): 1 for a JACK failure said at the file's line, such
    /// as a far part's server that is not running.
    var status: Int32? = nil
    var description: String {
        "\(file):\(line > 0 ? "\(line):" : "")\(column.map { "\($0):" } ?? "") \(field.isEmpty ? "" : field + ": ")\(message)"
    }
}

/// Reads and checks a graph file.
struct GraphFileReader {
    let file: String
    let text: String
    let locator: JSONLineLocator
    /// Each unit type's parameters, from a unit of that type.
    /// The server's rate (nil: not known yet) and where a rate that is not the server's came from.
    /// Each node's unit is made at this rate (or, unknown, at the highest rate a stream format
    /// allows: the loosest bound any server could have) so rate-bound parameters check right.
    private let sampleRate: Double?
    private let rateNote: String?

    /// A reader of `text`, the contents of `file`, for a server running at `sampleRate` (nil:
    /// not known yet; parameter bounds that follow the rate are then checked only loosely).
    /// `rateNote` says where a rate that is not the server's came from (`--check`), for errors.
    init(file: String, text: String, sampleRate: Double? = nil, rateNote: String? = nil) {
        self.file = file
        self.text = text
        locator = JSONLineLocator(text)
        self.sampleRate = sampleRate
        self.rateNote = rateNote
    }

    func error(_ path: [JSONPathStep], _ message: String) -> GraphFileError {
        // The file as a whole (not one object): no field to name, so the column of its value.
        if path.isEmpty {
            let (line, column) = locator.position(at: locator.startOfContent)
            return GraphFileError(file: file, line: line, column: column, field: "", message: message)
        }
        return GraphFileError(file: file, line: locator.line(of: path), field: fieldName(path), message: message)
    }

    /// Parses the whole file.
    /// - Throws: ``GraphFileError`` naming the line and field of the first problem.
    func read() throws(GraphFileError) -> GraphSpec {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: Data(text.utf8))
        } catch {
            // Foundation says "… around character N." (a 0-based byte offset into the text): turn it
            // into a line and column. Without one ("Unexpected end of file") the parser ran out of
            // text: the position just after the last character that is not white space.
            let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
            var offset = locator.endOfContent
            if let range = detail.range(of: "around character "),
               let at = Int(detail[range.upperBound...].prefix { $0.isNumber }) {
                offset = at
            }
            let (line, column) = locator.position(at: offset)
            throw GraphFileError(file: file, line: line, column: column, field: "", message: "not valid JSON: \(detail)")
        }
        guard let object = root as? [String: Any] else { throw error([], "the file must hold one JSON object") }
        try checkKeys(object, [], allowed: ["name", "channels", "nodes", "connections", "comment", "servers"])
        let servers = try readServers(object["servers"])

        var name: String?
        if let value = object["name"] {
            guard let text = value as? String, !text.isEmpty else { throw error([.key("name")], "must be a non-empty string (the JACK client name)") }
            name = text
        }
        let channels = try integer(object["channels"], [.key("channels")], in: 1...64, default: 2)

        guard let nodeList = object["nodes"] as? [Any] else { throw error([.key("nodes")], "must be an array of nodes (it may be empty)") }
        var nodes: [NodeSpec] = []
        var ids: Set<String> = ["io"]
        for (index, item) in nodeList.enumerated() {
            let path: [JSONPathStep] = [.key("nodes"), .index(index)]
            let node = try readNode(item, path, channels: channels, servers: servers)
            guard ids.insert(node.id).inserted else {
                throw error(path + [.key("id")], node.id == "io" ? "\"io\" is the IO unit's name; choose another id" : "id \"\(node.id)\" is used twice")
            }
            nodes.append(node)
        }

        guard let connectionList = object["connections"] as? [Any] else { throw error([.key("connections")], "must be an array of {\"from\": …, \"to\": …}") }
        var connections: [ConnectionSpec] = []
        var lines: [Int] = []
        var fed: [String: Int] = [:]   // "node:element" → index of the connection feeding it
        let byId = Dictionary(uniqueKeysWithValues: nodes.map { ($0.id, $0) })
        for (index, item) in connectionList.enumerated() {
            let path: [JSONPathStep] = [.key("connections"), .index(index)]
            guard let c = item as? [String: Any] else { throw error(path, "must be an object {\"from\": \"node[:element]\", \"to\": \"node[:element]\"}") }
            try checkKeys(c, path, allowed: ["from", "to", "comment"])
            let (from, fromElement) = try endpoint(c["from"], path + [.key("from")], nodes: byId, source: true)
            let (to, toElement) = try endpoint(c["to"], path + [.key("to")], nodes: byId, source: false)
            let key = "\(to):\(toElement)"
            if let other = fed[key] {
                throw error(path + [.key("to")], "\(key) is already fed by connections[\(other)]; an input takes one connection (fan-in goes through a mixer)")
            }
            fed[key] = index
            connections.append(ConnectionSpec(from: from, fromElement: fromElement, to: to, toElement: toElement))
            lines.append(locator.line(of: path))
        }
        // A cycle (not through the IO unit, whose input side is a source and output side a sink).
        // The last connection on a cycle is the one reported: the earlier ones were fine alone.
        // A connection is on a cycle when both its ends are in one strongly connected component.
        if let index = GraphFileReader.lastConnectionOnACycle(connections.map { c -> (String, String)? in
            c.from == "io" || c.to == "io" ? nil : (c.from, c.to)
        }) {
            let c = connections[index]
            throw error([.key("connections"), .index(index)], "\(c.from) → \(c.to) closes a cycle; a graph may not feed a unit its own output")
        }
        return GraphSpec(servers: servers, name: name, channels: channels, nodes: nodes, connections: connections, connectionLines: lines,
                         connectionsLine: locator.line(of: [.key("connections")]), channelsLine: locator.line(of: [.key("channels")]))
    }

    /// The index of the last edge that lies on a cycle, or nil: Tarjan's strongly connected
    /// components, without recursion (a chain of thousands of nodes must not exhaust the
    /// stack), in time linear in the edges. Nil edges (those through the IO unit) are left out.
    static func lastConnectionOnACycle(_ edges: [(String, String)?]) -> Int? {
        var numbers: [String: Int] = [:]
        func number(_ id: String) -> Int {
            if let n = numbers[id] { return n }
            numbers[id] = numbers.count
            return numbers.count - 1
        }
        let pairs = edges.map { $0.map { (number($0.0), number($0.1)) } }
        var next = [[Int]](repeating: [], count: numbers.count)
        for pair in pairs { if let (from, to) = pair { next[from].append(to) } }
        var order = [Int](repeating: -1, count: numbers.count), low = order, component = order
        var onStack = [Bool](repeating: false, count: numbers.count)
        var stack: [Int] = [], counter = 0, components = 0
        for root in 0..<numbers.count where order[root] < 0 {
            var work: [(node: Int, edge: Int)] = [(root, 0)]
            order[root] = counter; low[root] = counter; counter += 1
            stack.append(root); onStack[root] = true
            while let (node, edge) = work.last {
                if edge < next[node].count {
                    work[work.count - 1].edge += 1
                    let to = next[node][edge]
                    if order[to] < 0 {
                        order[to] = counter; low[to] = counter; counter += 1
                        stack.append(to); onStack[to] = true
                        work.append((to, 0))
                    } else if onStack[to] {
                        low[node] = min(low[node], order[to])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { low[parent] = min(low[parent], low[node]) }
                if low[node] == order[node] {
                    while let member = stack.popLast() {
                        onStack[member] = false
                        component[member] = components
                        if member == node { break }
                    }
                    components += 1
                }
            }
        }
        return pairs.indices.last { i in pairs[i].map { component[$0.0] == component[$0.1] } ?? false }
    }

    private func checkKeys(_ object: [String: Any], _ path: [JSONPathStep], allowed: Set<String>) throws(GraphFileError) {
        for key in object.keys.sorted() where !allowed.contains(key) {
            throw error(path + [.key(key)], "unknown field (expected one of: \(allowed.sorted().joined(separator: ", ")))")
        }
    }

    private func number(_ value: Any?, _ path: [JSONPathStep], allowBool: Bool = false) throws(GraphFileError) -> Float {
        guard let n = value as? NSNumber else { throw error(path, "must be a number") }
        let isBool = String(cString: n.objCType) == "c"
        if isBool && !allowBool { throw error(path, "must be a number, not true/false") }
        let v = n.floatValue
        guard v.isFinite else { throw error(path, "must be a finite number") }
        return v
    }

    private func integer(_ value: Any?, _ path: [JSONPathStep], in range: ClosedRange<Int>, default fallback: Int) throws(GraphFileError) -> Int {
        guard let value else { return fallback }
        let v = try number(value, path)
        guard v == v.rounded(), let i = Int(exactly: v), range.contains(i) else {
            throw error(path, "must be a whole number \(range.lowerBound)…\(range.upperBound)")
        }
        return i
    }

    /// "servers": `{"here": {}, "far": {"jack": "SLAVE", "net": "CLIENT"}}`, ordered as the
    /// file writes them (io runs on the first). Empty when absent.
    private func readServers(_ value: Any?) throws(GraphFileError) -> [ServerSpec] {
        guard let value else { return [] }
        let path: [JSONPathStep] = [.key("servers")]
        guard let object = value as? [String: Any], !object.isEmpty else {
            throw error(path, "must be an object of named servers, io's first: {\"here\": {}, \"far\": {\"jack\": \"SLAVE-SERVER-NAME\"}}")
        }
        var servers: [ServerSpec] = []
        // JSONSerialization keeps no order: the file's is the keys' offsets.
        for name in object.keys.sorted(by: { locator.offset(of: path + [.key($0)]) < locator.offset(of: path + [.key($1)]) }) {
            let at = path + [.key(name)]
            guard !name.isEmpty, !name.contains(":") else { throw error(at, "a server's name must be non-empty, without ':'") }
            guard let entry = object[name] as? [String: Any] else { throw error(at, "must be an object: {} or {\"jack\": \"SERVER\"}") }
            try checkKeys(entry, at, allowed: ["jack", "net", "comment"])
            var jack: String?, net: String?
            if let value = entry["jack"] {
                guard let text = value as? String, !text.isEmpty, text.utf8.count <= 255 else { throw error(at + [.key("jack")], "must be a JACK server's name (1…255 bytes)") }
                jack = text
            }
            if let value = entry["net"] {
                guard let text = value as? String, !text.isEmpty, !text.contains(":") else { throw error(at + [.key("net")], "must be the netjack2 slave's client name on the master (its -n), without ':'") }
                net = text
            }
            if !servers.isEmpty && jack == nil {
                throw error(at, "needs \"jack\": the JACK server its part joins (only the first entry, io's, defaults to the usual one)")
            }
            servers.append(ServerSpec(name: name, jack: jack, net: net, line: locator.line(of: at)))
        }
        if servers[0].net != nil { throw error(path + [.key(servers[0].name), .key("net")], "the first server runs io and is the netjack2 master: \"net\" names a slave's link") }
        var jackNames: [String: String] = [:]
        for server in servers {
            let jack = server.jack ?? ""
            if let other = jackNames[jack] {
                throw error(path + [.key(server.name)], "\"\(server.name)\" joins the same JACK server as \"\(other)\"\(jack.isEmpty ? " (the usual one)" : " (\(jack))"); give each entry its own \"jack\"")
            }
            jackNames[jack] = server.name
        }
        return servers
    }

    private func readNode(_ item: Any, _ path: [JSONPathStep], channels: Int, servers: [ServerSpec]) throws(GraphFileError) -> NodeSpec {
        guard let o = item as? [String: Any] else { throw error(path, "must be an object {\"id\": …, \"type\": …}") }
        guard let id = o["id"] as? String, !id.isEmpty, !id.contains(":"), !id.hasPrefix("@") else {
            throw error(path + [.key("id")], "must be a non-empty string without ':', not starting with '@' (graphrun's own units')")
        }
        guard let typeName = o["type"] as? String, let type = NodeType(rawValue: typeName) else {
            throw error(path + [.key("type")], "must be one of: \(NodeType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var server: String?
        if let value = o["server"] {
            guard !servers.isEmpty else { throw error(path + [.key("server")], "names a server, but the file lists none (add \"servers\": {\"here\": {}, \"far\": {\"jack\": …}})") }
            guard let text = value as? String, servers.contains(where: { $0.name == text }) else {
                throw error(path + [.key("server")], "must be one of the file's servers: \(servers.map(\.name).joined(separator: ", "))")
            }
            // io's server is where a node runs without one: the same node, written either way.
            server = text == servers[0].name ? nil : text
        }
        try checkKeys(o, path, allowed: Set(["id", "type", "parameters", "comment", "server"] + type.fields.map(\.name)
                                             + (type == .mixer ? ["inputParameters"] : []) + (type == .lv2 ? ["state"] : [])))
        var shape: Shape = [:]
        for field in type.fields {
            guard let value = o[field.name] else { continue }
            let at = path + [.key(field.name)]
            switch field.kind {
            case .count(let range, _):
                shape[field.name] = .int(try integer(value, at, in: range, default: range.lowerBound))
            case .format:
                guard let f = value as? [String: Any] else { throw error(at, "must be an object {\"channels\": N}") }
                try checkKeys(f, at, allowed: ["channels"])
                shape[field.name] = .int(try integer(f["channels"], at + [.key("channels")], in: 1...64, default: channels))
            case .counts:
                guard let list = value as? [Any], !list.isEmpty, list.count <= 64 else { throw error(at, "must be an array of 1…64 channel counts") }
                var counts: [Int] = []
                for (i, item) in list.enumerated() { counts.append(try integer(item, at + [.index(i)], in: 1...64, default: 1)) }
                guard counts.reduce(0, +) <= 64 else { throw error(at, "\(counts.reduce(0, +)) channels in all; at most 64") }
                shape[field.name] = .ints(counts)
            case .file:
                guard let text = value as? String, !text.isEmpty else { throw error(at, "must be a file path") }
                // Relative to the graph file's folder, as a user writing "ir.wav" beside it means.
                let folder = file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) : "."
                shape[field.name] = .text(text.hasPrefix("/") ? text : folder + "/" + text)
            case .choice(let names, _):
                guard let text = value as? String, names.contains(text) else { throw error(at, "must be one of: \(names.joined(separator: ", "))") }
                shape[field.name] = .text(text)
            case .text:
                guard let text = value as? String, !text.isEmpty else { throw error(at, "must be a non-empty string") }
                shape[field.name] = .text(text)
            }
        }
        for field in type.fields { if case .file = field.kind, shape[field.name] == nil { throw error(path + [.key(field.name)], "a \(type.rawValue) needs \"\(field.name)\"") } }
        for field in type.fields { if case .text(true) = field.kind, shape[field.name] == nil { throw error(path + [.key(field.name)], "a \(type.rawValue) needs \"\(field.name)\"") } }
        let unit: AudioUnit
        do { unit = try type.makeUnit(shape, fileChannels: channels, sampleRate: sampleRate ?? 48_000) } catch let refusal {
            if let field = refusal.field { throw error(path + [.key(field)], refusal.message) }
            throw error(path, "a \(type.rawValue) of this shape cannot be made: \(refusal.message)")
        }
        // This unit only answers for its parameters: at the rate, so rate-bound ranges are the real ones.
        if let output = try? unit.streamFormat(scope: .output, element: 0),
           let atRate = try? output.withSampleRate(sampleRate ?? StreamFormat.maximumSampleRate) {
            try? unit.setStreamFormat(atRate, scope: .output, element: 0)
        }
        var state: PluginState?
        if let value = o["state"], let plugin = unit as? PluginUnit {
            let parsed = try readState(value, path + [.key("state")])
            // Restored into this unit now, so a value the plugin refuses is this file's error.
            do { try plugin.restoreState(parsed) } catch {
                if case let .invalidStateValue(key, _) = error { throw self.error(path + [.key("state"), .key(key)], "\(error)") }
                throw self.error(path + [.key("state")], "\(error)")
            }
            state = parsed
        }
        let table = ParameterTable(of: unit, sampleRate: sampleRate, rateNote: rateNote)
        let inputs = type.inputCount(shape)
        var parameters: [String: Float] = [:]
        if let p = o["parameters"] {
            guard var dict = p as? [String: Any] else { throw error(path + [.key("parameters")], "must be an object of name: number") }
            for key in dict.keys.sorted() {
                let at = path + [.key("parameters"), .key(key)]
                guard let info = table.node[key] else {
                    throw error(at, "\(type.rawValue.first.map { "aeiou".contains($0) } == true || type == .lv2 ? "an" : "a") \(type.rawValue) has no parameter '\(key)' (it has: \(table.node.keys.sorted().joined(separator: ", ")))")
                }
                // An indexed parameter may be named: "waveform": "sawtooth".
                let names = type.valueNames[key] ?? []
                if let text = dict[key] as? String, !names.isEmpty {
                    guard let index = names.firstIndex(of: text) else { throw error(at, "must be one of: \(names.joined(separator: ", ")) (or its number)") }
                    dict[key] = index
                }
                let v = try number(dict[key], at, allowBool: info.unit == .boolean)
                if let problem = table.problem(with: v, info) { throw error(at, problem) }
                // Units that refuse values outside their range rather than clamp them (the
                // varispeed's and time-pitch's): the unit's own refusal, at the file's line.
                if !info.clampsToRange, unit.parameterList(scope: .global).contains(where: { $0.id == info.id }),
                   (try? unit.setParameter(info.id, v, scope: .global)) == nil {
                    throw error(at, "\(v) is outside \(info.minValue)…\(info.maxValue)")
                }
                parameters[key] = v
            }
        }
        var inputParameters: [[String: Float]] = []
        if let ip = o["inputParameters"] {
            guard let list = ip as? [Any], list.count <= inputs else {
                throw error(path + [.key("inputParameters")], "must be an array of at most \(inputs) objects, one per mixer input")
            }
            for (element, entry) in list.enumerated() {
                let at = path + [.key("inputParameters"), .index(element)]
                guard let dict = entry as? [String: Any] else { throw error(at, "must be an object of name: number") }
                var values: [String: Float] = [:]
                for key in dict.keys.sorted() {
                    guard let info = table.input[key] else {
                        throw error(at + [.key(key)], "a mixer input has no parameter '\(key)' (it has: \(table.input.keys.sorted().joined(separator: ", ")))")
                    }
                    let v = try number(dict[key], at + [.key(key)], allowBool: info.unit == .boolean)
                    if let problem = table.problem(with: v, info) { throw error(at + [.key(key)], problem) }
                    values[key] = v
                }
                inputParameters.append(values)
            }
        }
        let outputs = type.outputCount(shape, fileChannels: channels)
        let outputChannels = (0..<outputs).map { element in
            Int((try? unit.streamFormat(scope: .output, element: AudioUnitElement(element)))?.channelsPerFrame ?? UInt32(channels))
        }
        return NodeSpec(id: id, type: type, shape: shape, inputs: inputs, outputs: outputs,
                        parameters: parameters, inputParameters: inputParameters, line: locator.line(of: path), state: state,
                        server: server, outputChannels: outputChannels)
    }

    /// An lv2 node's "state": `{"<key URI>": {"type": "<type URI>", "value": number or text}}`,
    /// or `"base64": "…"` instead of "value" for any other type's bytes. Types may be written
    /// `atom:Float` for `http://lv2plug.in/ns/ext/atom#Float` (the prefix jalv's and Carla's
    /// Turtle state uses).
    private func readState(_ value: Any, _ path: [JSONPathStep]) throws(GraphFileError) -> PluginState {
        guard let object = value as? [String: Any] else {
            throw error(path, "must be an object {\"<key URI>\": {\"type\": \"atom:Float\", \"value\": 1.5}, …}")
        }
        var state = PluginState()
        for key in object.keys.sorted() {
            let at = path + [.key(key)]
            guard key.contains(":") else { throw error(at, "a state key must be a URI (the plugin's property, e.g. http://example.org/plugin#gain)") }
            guard let entry = object[key] as? [String: Any] else { throw error(at, "must be an object {\"type\": URI, \"value\": number or text} or {\"type\": URI, \"base64\": …}") }
            try checkKeys(entry, at, allowed: ["type", "value", "base64"])
            guard var type = entry["type"] as? String, type.contains(":") else { throw error(at + [.key("type")], "must be a type URI, e.g. atom:Float") }
            if type.hasPrefix("atom:") { type = "http://lv2plug.in/ns/ext/atom#" + type.dropFirst(5) }
            if entry["value"] != nil && entry["base64"] != nil { throw error(at, "give \"value\" or \"base64\", not both") }
            if let encoded = entry["base64"] {
                guard let text = encoded as? String, let data = Data(base64Encoded: text) else { throw error(at + [.key("base64")], "must be base64 text") }
                state.values[key] = PluginState.Value(type: type, bytes: Array(data))
                continue
            }
            guard entry["value"] is NSNumber || entry["value"] is String else {
                throw error(at, "needs \"value\" (a number or text) or \"base64\" (bytes)")
            }
            do throws(PluginError) {
                // JSON true and false are numbers here (1, 0): an atom:Bool takes them.
                if let number = entry["value"] as? NSNumber {
                    state.values[key] = try PluginState.Value(type: type, number: number.doubleValue, key: key)
                } else if let text = entry["value"] as? String {
                    state.values[key] = try PluginState.Value(type: type, text: text, key: key)
                }
            } catch {
                throw self.error(at + [.key("value")], "\(error)")
            }
        }
        return state
    }

    /// "node" or "node:element"; "io" alone is element 1 as a source, 0 as a destination.
    private func endpoint(_ value: Any?, _ path: [JSONPathStep], nodes: [String: NodeSpec], source: Bool) throws(GraphFileError) -> (String, AudioUnitElement) {
        guard let text = value as? String, !text.isEmpty else { throw error(path, "must be a string \"node\" or \"node:element\"") }
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let id = parts[0]
        var element: AudioUnitElement = id == "io" && source ? IOUnit.inputElement : 0
        if parts.count == 2 {
            guard let e = AudioUnitElement(parts[1]) else { throw error(path, "'\(parts[1])' is not an element number") }
            element = e
        }
        if id == "io" {
            let expected = source ? IOUnit.inputElement : IOUnit.outputElement
            guard element == expected else {
                throw error(path, source ? "io feeds from element 1 (the JACK inputs) only" : "io is fed at element 0 (the JACK outputs) only")
            }
            return (id, element)
        }
        guard let node = nodes[id] else {
            throw error(path, "no node with id \"\(id)\" (nodes: \(["io"] + nodes.keys.sorted()))")
        }
        let count = source ? node.outputs : node.inputs
        if count == 0 { throw error(path, "a \(node.type.rawValue) has no input elements (it is a source)") }
        guard element < count else {
            throw error(path, "a \(node.type.rawValue) has \(source ? "output" : "input") element\(count == 1 ? " 0" : "s 0…\(count - 1)") only")
        }
        return (id, element)
    }
}

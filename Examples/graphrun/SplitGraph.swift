// graphrun: one graph across JACK servers — the file's "servers" made into one part (a LiveGraph, a client) per server, the crossing edges carried over JACK ports.
//
// A file that places nodes on servers ("servers" at the top, "server" on a node) is cut into
// parts: each part renders its nodes in its own client on its own server. An edge whose ends
// run on different servers (a crossing) leaves its part through extra output ports and enters
// the other through extra input ports; on a netjack2 link (io's server the master, the other a
// slave) graphrun connects those ports to the link itself. Every crossing has io's server at
// one end: a part far from io is fed by io's part and feeds it back.
//
// Around each part's IO unit, units the file does not name (ids starting with "@", which the
// file's own ids may not) share its one device input and output between the file's io and the
// crossings, when there are more groups of channels than one on a side:
//   device input  → @split (ChannelSplitterUnit) → @in0, @in1, … (MergerUnit, one per group)
//   @out (MergerUnit, inputs not aligned) → device output
// and on io's part each crossing that comes back runs through @return<i> (i: the edge's index
// in the file's connections), a unit that passes its
// input on unchanged and reports the round trip's latency, so the graph's latency
// compensation delays the parallel paths to match (what Ardour does for a send/return
// through outboard gear with a measured round trip).
import AudioGraph
import AudioGraphJACK
import ToolSupport

/// Units around a part's IO unit that the file does not name (SplitGraph.swift), with their
/// connections ("io" is the IO unit). Empty for a graph on one server.
struct FixedUnits {
    var units: [(id: String, unit: AudioUnit)] = []
    var connections: [ConnectionSpec] = []
}

/// An edge of the file whose ends run on different servers; one end is always io's server.
struct Crossing: Equatable {
    /// The edge's index in the file's "connections".
    var connection: Int
    /// The far end's server (an index in "servers", ≥ 1).
    var farServer: Int
    /// Whether it runs from io's server to the far one (else back from it).
    var outbound: Bool
    /// Channels it carries: the source element's channel count.
    var channels: Int
    /// Its group among the sending part's outputs and the receiving part's inputs (group 0 of
    /// io's part is the file's io).
    var sendGroup: Int
    var receiveGroup: Int
}

/// One server's share of a split graph: its nodes and connections (endpoints rewritten onto
/// the fixed units), and the channel groups its device input and output carry.
struct PartPlan {
    var server: Int
    var spec: GraphSpec
    /// Channel counts of the groups on the device input (ports in_1…, in order) and output.
    var inputGroups: [Int]
    var outputGroups: [Int]
    /// The @return units of the crossings that come back to this part: id, channels, the
    /// crossing's edge index and the input group it arrives in.
    var returns: [(id: String, channels: Int, crossing: Int, group: Int)] = []

    /// JACK ports: the groups' channels, at least one port a side.
    var inputPorts: Int { max(1, inputGroups.reduce(0, +)) }
    var outputPorts: Int { max(1, outputGroups.reduce(0, +)) }

    /// The first port (0-based) of input or output group `g`.
    func firstPort(ofInputGroup g: Int) -> Int { inputGroups.prefix(g).reduce(0, +) }
    func firstPort(ofOutputGroup g: Int) -> Int { outputGroups.prefix(g).reduce(0, +) }

    /// Where input group `g` comes from inside the part, and where output group `g` goes.
    func source(ofGroup g: Int) -> (String, AudioUnitElement) { inputGroups.count == 1 ? ("io", IOUnit.inputElement) : ("@in\(g)", 0) }
    func destination(ofGroup g: Int) -> (String, AudioUnitElement) { outputGroups.count == 1 ? ("io", 0) : ("@out", AudioUnitElement(g)) }

    /// Makes the fixed units (a return's with no latency yet: ``SplitGraph`` sets it once the
    /// far part runs).
    func makeFixedUnits() throws(AudioUnitError) -> FixedUnits {
        var fixed = FixedUnits()
        if inputGroups.count > 1 {
            fixed.units.append(("@split", try ChannelSplitterUnit(channels: inputPorts)))
            fixed.connections.append(ConnectionSpec(from: "io", fromElement: IOUnit.inputElement, to: "@split", toElement: 0))
            for (g, channels) in inputGroups.enumerated() {
                fixed.units.append(("@in\(g)", try MergerUnit(inputChannels: Array(repeating: 1, count: channels))))
                for c in 0..<channels {
                    fixed.connections.append(ConnectionSpec(from: "@split", fromElement: AudioUnitElement(firstPort(ofInputGroup: g) + c),
                                                            to: "@in\(g)", toElement: AudioUnitElement(c)))
                }
            }
        }
        if outputGroups.count > 1 {
            let merger = try MergerUnit(inputChannels: outputGroups)
            // Sends leave now; the file's io output may carry a path that came back over the
            // network: delaying the sends to match it would lengthen that path again.
            merger.alignsInputs = false
            fixed.units.append(("@out", merger))
            fixed.connections.append(ConnectionSpec(from: "@out", fromElement: 0, to: "io", toElement: 0))
        }
        for ret in returns {
            let unit = try RenderCallbackUnit(inputs: 1, channels: ret.channels) { context in
                guard let input = context.input(0) else { return 0 }
                for c in 0..<min(input.channelCount, context.output.channelCount) {
                    context.output[c].baseAddress!.update(from: input[c].baseAddress!, count: context.frameCount)
                }
                return 0
            }
            fixed.units.append((ret.id, unit))
            let (from, element) = source(ofGroup: ret.group)
            fixed.connections.append(ConnectionSpec(from: from, fromElement: element, to: ret.id, toElement: 0))
        }
        return fixed
    }
}

/// A file's parts, one per server that has nodes, io's first, and the edges between them.
struct SplitPlan: Equatable {
    var parts: [PartPlan]
    var crossings: [Crossing]

    static func == (a: SplitPlan, b: SplitPlan) -> Bool {
        a.crossings == b.crossings && a.parts.map(\.server) == b.parts.map(\.server)
            && a.parts.map(\.inputGroups) == b.parts.map(\.inputGroups) && a.parts.map(\.outputGroups) == b.parts.map(\.outputGroups)
    }

    /// Cuts `spec` into parts. A file without "servers", or whose nodes all run with io, is one
    /// part: the file itself.
    /// - Throws: ``GraphFileError`` for an edge between two servers neither of which is io's, or
    ///   more than 64 channels on one part's side (the splitter's and merger's bound).
    static func make(_ spec: GraphSpec, reader: GraphFileReader) throws(GraphFileError) -> SplitPlan {
        let serverIndex = Dictionary(uniqueKeysWithValues: spec.servers.enumerated().map { ($1.name, $0) })
        let nodes = Dictionary(uniqueKeysWithValues: spec.nodes.map { ($0.id, $0) })
        func server(of id: String) -> Int { id == "io" ? 0 : (nodes[id]?.server.flatMap { serverIndex[$0] } ?? 0) }
        let used = Set(spec.nodes.map { server(of: $0.id) }).union([0]).sorted()
        guard used.count > 1 else {
            return SplitPlan(parts: [PartPlan(server: 0, spec: spec, inputGroups: [spec.channels], outputGroups: [spec.channels])], crossings: [])
        }
        var parts = used.map { s in
            PartPlan(server: s, spec: GraphSpec(servers: spec.servers, name: spec.name, channels: spec.channels, nodes: [], connections: [],
                                                connectionLines: [], connectionsLine: spec.connectionsLine, channelsLine: spec.channelsLine,
                                                nodeFileIndices: [], connectionFileIndices: []),
                     inputGroups: s == 0 ? [spec.channels] : [], outputGroups: s == 0 ? [spec.channels] : [])
        }
        let partOf = Dictionary(uniqueKeysWithValues: used.enumerated().map { ($1, $0) })
        for (index, node) in spec.nodes.enumerated() {
            let p = partOf[server(of: node.id)]!
            parts[p].spec.nodes.append(node)
            parts[p].spec.nodeFileIndices!.append(index)
        }
        func add(_ p: Int, _ c: ConnectionSpec, _ index: Int) {
            parts[p].spec.connections.append(c)
            parts[p].spec.connectionLines.append(spec.connectionLines[index])
            parts[p].spec.connectionFileIndices!.append(index)
        }
        // First the crossings, whose groups decide where io's own endpoints are in its part.
        var crossings: [Crossing] = []
        for (index, c) in spec.connections.enumerated() {
            let (s, d) = (server(of: c.from), server(of: c.to))
            guard s != d else { continue }
            guard s == 0 || d == 0 else {
                throw reader.error([.key("connections"), .index(index)],
                                   "\(c.from) (on \"\(spec.servers[s].name)\") → \(c.to) (on \"\(spec.servers[d].name)\") joins two servers neither of which is io's (\"\(spec.servers[0].name)\"); route it through a node on \"\(spec.servers[0].name)\"")
            }
            let channels = c.from == "io" ? spec.channels : nodes[c.from]!.outputChannels[Int(c.fromElement)]
            let (sp, dp) = (partOf[s]!, partOf[d]!)
            crossings.append(Crossing(connection: index, farServer: s == 0 ? d : s, outbound: s == 0, channels: channels,
                                      sendGroup: parts[sp].outputGroups.count, receiveGroup: parts[dp].inputGroups.count))
            parts[sp].outputGroups.append(channels)
            parts[dp].inputGroups.append(channels)
        }
        // Then every edge in the file's order, inside the parts.
        let crossingAt = Dictionary(uniqueKeysWithValues: crossings.map { ($0.connection, $0) })
        for (index, c) in spec.connections.enumerated() {
            let (sp, dp) = (partOf[server(of: c.from)]!, partOf[server(of: c.to)]!)
            var from = c.from, fromElement = c.fromElement, to = c.to, toElement = c.toElement
            if from == "io" { (from, fromElement) = parts[sp].source(ofGroup: 0) }
            if to == "io" { (to, toElement) = parts[dp].destination(ofGroup: 0) }
            guard let crossing = crossingAt[index] else {
                add(sp, ConnectionSpec(from: from, fromElement: fromElement, to: to, toElement: toElement), index)
                continue
            }
            let (out, outElement) = parts[sp].destination(ofGroup: crossing.sendGroup)
            add(sp, ConnectionSpec(from: from, fromElement: fromElement, to: out, toElement: outElement), index)
            if dp == 0 {
                let id = "@return\(index)"
                parts[0].returns.append((id, crossing.channels, index, crossing.receiveGroup))
                add(0, ConnectionSpec(from: id, fromElement: 0, to: to, toElement: toElement), index)
            } else {
                let (input, inputElement) = parts[dp].source(ofGroup: crossing.receiveGroup)
                add(dp, ConnectionSpec(from: input, fromElement: inputElement, to: to, toElement: toElement), index)
            }
        }
        for part in parts where part.inputPorts > 64 || part.outputPorts > 64 {
            throw reader.error([.key("servers"), .key(spec.servers[part.server].name)],
                               "\(max(part.inputPorts, part.outputPorts)) channels would cross on one side of this server's part (its io and the edges to other servers); 64 at most")
        }
        return SplitPlan(parts: parts, crossings: crossings)
    }
}

/// The running graph: io's part here, each far part in a child graphrun of its own
/// (PartProcess.swift: jack2 serves one server per process). A file on one server is one part
/// with no fixed units, so graphrun always runs through this.
/// Thread: the main thread.
final class SplitGraph {
    private(set) var plan: SplitPlan
    /// The whole file as last applied.
    private(set) var spec: GraphSpec?
    /// io's part.
    let main: LiveGraph
    /// The far parts, in the plan's order after io's (started by ``startFarParts(file:text:mainName:)``).
    private(set) var far: [FarPart] = []

    init(_ plan: SplitPlan) throws(AudioUnitError) {
        self.plan = plan
        main = try LiveGraph(fixed: plan.parts[0].makeFixedUnits())
    }

    /// Starts a child graphrun for each far part, with the file's `text`; each opens its client
    /// (`MAIN-SERVER`) on its server, makes its part, starts and connects to its server's
    /// physical ports. On a failure the children already started are stopped.
    /// - Throws: ``GraphFileError`` with the child's reason.
    func startFarParts(file: String, text: String, mainName: String, servers: [ServerSpec]) throws(GraphFileError) {
        for part in plan.parts.dropFirst() {
            let name = servers[part.server].name
            do {
                let child = try FarPart(file: file, serverName: name, clientName: "\(mainName)-\(name)")
                far.append(child)
                try child.start(text: text)
            } catch let error as GraphFileError {
                stop()
                throw error
            } catch {
                stop()
                throw GraphFileError(file: file, line: 0, field: "servers.\(name)", message: "could not start its graphrun: \(error)")
            }
        }
    }

    /// io's part's dump, then each far part's, headed by where it runs (`dump`).
    var description: String {
        far.reduce(main.description) { text, part in
            let where_ = part.ready.map { " ('\($0.client)' on JACK server '\($0.server)')" } ?? ""
            return text + "\npart \"\(part.serverName)\"\(where_): " + (part.report()?.description ?? "(no answer)")
        }
    }

    /// Ends the far parts' children.
    func stop() { for child in far { child.stop() } }

    /// Makes every part follow `new` (whose text is `text`), all or none: io's part first,
    /// then each far part; one that refuses has the parts already changed set back to the
    /// version they ran, and its error thrown.
    /// - Throws: ``GraphFileError``; also when the servers or the edges between them would
    ///   change while running (a restart makes them).
    /// - Thread: the main thread.
    @discardableResult
    func apply(_ new: GraphSpec, text: String, reader: GraphFileReader) throws(GraphFileError) -> LiveGraph.Changes {
        let newPlan = try SplitPlan.make(new, reader: reader)
        guard let old = main.spec, let oldFile = spec else {
            let changes = try main.apply(newPlan.parts[0].spec, reader: reader)
            spec = new
            return changes
        }
        if new.servers != oldFile.servers {
            throw reader.error([.key("servers")], "the servers cannot change while running; restart graphrun")
        }
        if newPlan != plan {
            // Named where the user changed it: a node moved to another server, else an edge.
            let oldServers = Dictionary(oldFile.nodes.map { ($0.id, $0.server) }, uniquingKeysWith: { a, _ in a })
            let path: [JSONPathStep]
            if let moved = new.nodes.firstIndex(where: { node in oldServers[node.id].map { $0 != node.server } ?? false }) {
                path = [.key("nodes"), .index(moved), .key("server")]
            } else if let index = newPlan.crossings.first(where: { !plan.crossings.contains($0) })?.connection
                        ?? plan.crossings.first(where: { !newPlan.crossings.contains($0) })?.connection {
                path = [.key("connections"), .index(min(index, new.connections.count - 1))]
            } else {
                path = [.key("connections")]
            }
            throw reader.error(path, "the edges between servers (which nodes run where, what crosses, in which order) cannot change while running; restart graphrun")
        }
        var changes = try main.apply(newPlan.parts[0].spec, reader: reader)
        for (index, child) in far.enumerated() {
            do {
                let said = try child.apply(text: text)
                if said != "no change" { changes.otherParts.append("on \(child.serverName): \(said)") }
            } catch {
                for done in far[..<index] { done.revert() }
                _ = try? main.apply(old, reader: reader)
                throw error
            }
        }
        plan = newPlan
        spec = new
        return changes
    }

    /// The netjack2 link that carries each far part's edges — its client name on io's server,
    /// the master — in the plan's order, checked before any far part starts (a far part started
    /// for a link that is not there would take the slave's ports for nothing): the entry's
    /// "net", or the one link there is. Also checks each link has the channels its edges need.
    /// - Throws: ``GraphFileError`` naming the entry (a file mistake: status 2).
    func linkNames(_ main: JACKDriver, spec: GraphSpec, reader: GraphFileReader) throws(GraphFileError) -> [String] {
        let servers = spec.servers
        let links = Set(((try? main.ports(matching: ":to_slave_1$", sources: false)) ?? []).map { String($0.dropLast(":to_slave_1".count)) })
        var names: [String] = []
        for part in plan.parts.dropFirst() {
            let server = servers[part.server]
            let name: String
            let there = links.isEmpty
                ? "io's server '\(main.serverName)' has no netjack2 link (no client with to_slave_ ports): io must run on the netjack2 master (jack_load netmanager there), with '\(server.jack ?? server.name)' its slave"
                : "io's server '\(main.serverName)' has the netjack2 links \(links.sorted().map { "'\($0)'" }.joined(separator: ", "))"
            if let net = server.net {
                guard links.contains(net) else { throw reader.error([.key("servers"), .key(server.name), .key("net")], "no netjack2 link '\(net)': \(there)") }
                name = net
            } else {
                guard links.count == 1, plan.parts.count == 2 else {
                    throw reader.error([.key("servers"), .key(server.name)], links.isEmpty ? there : "which netjack2 link carries it? \(there); name it with \"net\": \"CLIENT\"")
                }
                name = links.first!
            }
            let escaped = name.map { "\\^$.|?*+()[]{}".contains($0) ? "\\\($0)" : "\($0)" }.joined()
            let toSlave = (try? main.ports(matching: "^\(escaped):to_slave_[0-9]+$", sources: false)) ?? []
            let fromSlave = (try? main.ports(matching: "^\(escaped):from_slave_[0-9]+$", sources: true)) ?? []
            let sends = plan.crossings.filter { $0.farServer == part.server && $0.outbound }.reduce(0) { $0 + $1.channels }
            let backs = plan.crossings.filter { $0.farServer == part.server && !$0.outbound }.reduce(0) { $0 + $1.channels }
            guard toSlave.count >= sends, fromSlave.count >= backs else {
                throw reader.error([.key("servers"), .key(server.name)],
                                   "the netjack2 link '\(name)' has \(toSlave.count) channel(s) to the slave and \(fromSlave.count) back; the edges to \"\(server.name)\" need \(sends) and \(backs) (start the slave with -C \(max(sends, toSlave.count)) -P \(max(backs, fromSlave.count)))")
            }
            names.append(name)
        }
        return names
    }

    /// io's client's ports for the crossings, connected to the netjack2 link's on the master
    /// (io's server): sends to `NET:to_slave_k`, returns from `NET:from_slave_k`, in the order
    /// the far part's child connected its ports to the slave's physical ones. Then each return
    /// unit reports the round trip — the slave's capture and playback latency, a period for the
    /// master's exchange (measured: 4 periods at -l 2, 5 at -l 3), and the far part's own
    /// latency — and io's graph re-plans.
    /// - Returns: notes to print, one per far part.
    /// - Throws: ``GraphFileError`` naming the entry when no link is found or it has too few channels; JACK's
    ///   errors from connecting; the graph's from re-planning.
    func link(_ main: JACKDriver, spec: GraphSpec, reader: GraphFileReader) throws -> [String] {
        guard plan.parts.count > 1 else { return [] }
        let servers = spec.servers
        var notes: [String] = []
        let names = try linkNames(main, spec: spec, reader: reader)
        for (index, part) in plan.parts.enumerated().dropFirst() {
            let server = servers[part.server], ready = far[index - 1].ready!
            let name = names[index - 1]
            let escaped = name.map { "\\^$.|?*+()[]{}".contains($0) ? "\\\($0)" : "\($0)" }.joined()
            let toSlave = (try? main.ports(matching: "^\(escaped):to_slave_[0-9]+$", sources: false)) ?? []
            let fromSlave = (try? main.ports(matching: "^\(escaped):from_slave_[0-9]+$", sources: true)) ?? []
            let outbound = plan.crossings.filter { $0.farServer == part.server && $0.outbound }
            let returns = plan.crossings.filter { $0.farServer == part.server && !$0.outbound }
            let sends = outbound.reduce(0) { $0 + $1.channels }, backs = returns.reduce(0) { $0 + $1.channels }
            var k = 0
            for crossing in outbound {
                let first = plan.parts[0].firstPort(ofOutputGroup: crossing.sendGroup)
                for c in 0..<crossing.channels { try main.connect(main.outputPortNames[first + c], to: toSlave[k]); k += 1 }
            }
            k = 0
            for crossing in returns {
                let first = plan.parts[0].firstPort(ofInputGroup: crossing.receiveGroup)
                for c in 0..<crossing.channels { try main.connect(fromSlave[k], to: main.inputPortNames[first + c]); k += 1 }
            }
            let period = Int(main.bufferSize)
            let frames = ready.capture + ready.playback + period + ready.renderLatency
            for ret in plan.parts[0].returns where returns.contains(where: { $0.connection == ret.crossing }) {
                let unit = self.main.fixed.units.first { $0.id == ret.id }!.unit as! RenderCallbackUnit
                try unit.setLatency(Double(frames) / Double(main.sampleRate))
            }
            notes.append("note: '\(server.name)' runs as '\(ready.client)' on JACK server '\(ready.server)', linked by netjack2 client '\(name)': \(sends) channel(s) there, \(backs) back, a round trip of \(frames) frames (\(String(format: "%.1f", Double(frames) * 1000 / Double(main.sampleRate))) ms), compensated")
        }
        try self.main.graph.update()
        main.recomputeLatency()
        return notes
    }
}

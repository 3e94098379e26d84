// Plugins, LV2: one lilv world (LV2_PATH honoured), plugin metadata into PluginInfo, and the host features a minimal host gives (urid map/unmap, options, boundedBlockLength, log, worker).
import AudioGraph
import CLilv
import CLV2Host
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The LV2 URIs used (lv2.h's macros are string concatenations Swift does not import).
let LV2_ATOM__Float = "http://lv2plug.in/ns/ext/atom#Float"
let LV2_ATOM__Int = "http://lv2plug.in/ns/ext/atom#Int"
let LV2_BUF_SIZE__boundedBlockLength = "http://lv2plug.in/ns/ext/buf-size#boundedBlockLength"
let LV2_BUF_SIZE__maxBlockLength = "http://lv2plug.in/ns/ext/buf-size#maxBlockLength"
let LV2_BUF_SIZE__minBlockLength = "http://lv2plug.in/ns/ext/buf-size#minBlockLength"
let LV2_CORE__AudioPort = "http://lv2plug.in/ns/lv2core#AudioPort"
let LV2_CORE__ControlPort = "http://lv2plug.in/ns/lv2core#ControlPort"
let LV2_CORE__InputPort = "http://lv2plug.in/ns/lv2core#InputPort"
let LV2_CORE__OutputPort = "http://lv2plug.in/ns/lv2core#OutputPort"
let LV2_CORE__connectionOptional = "http://lv2plug.in/ns/lv2core#connectionOptional"
let LV2_CORE__enumeration = "http://lv2plug.in/ns/lv2core#enumeration"
let LV2_CORE__integer = "http://lv2plug.in/ns/lv2core#integer"
let LV2_CORE__name = "http://lv2plug.in/ns/lv2core#name"
let LV2_CORE__reportsLatency = "http://lv2plug.in/ns/lv2core#reportsLatency"
let LV2_CORE__sampleRate = "http://lv2plug.in/ns/lv2core#sampleRate"
let LV2_CORE__toggled = "http://lv2plug.in/ns/lv2core#toggled"
let LV2_OPTIONS__options = "http://lv2plug.in/ns/ext/options#options"
let LV2_PORT_PROPS__logarithmic = "http://lv2plug.in/ns/ext/port-props#logarithmic"
let LV2_UNITS__cent = "http://lv2plug.in/ns/extensions/units#cent"
let LV2_UNITS__db = "http://lv2plug.in/ns/extensions/units#db"
let LV2_UNITS__frame = "http://lv2plug.in/ns/extensions/units#frame"
let LV2_UNITS__hz = "http://lv2plug.in/ns/extensions/units#hz"
let LV2_UNITS__oct = "http://lv2plug.in/ns/extensions/units#oct"
let LV2_UNITS__pc = "http://lv2plug.in/ns/extensions/units#pc"
let LV2_UNITS__s = "http://lv2plug.in/ns/extensions/units#s"
let LV2_UNITS__unit = "http://lv2plug.in/ns/extensions/units#unit"
let LV2_URID__map = "http://lv2plug.in/ns/ext/urid#map"
let LV2_URID__unmap = "http://lv2plug.in/ns/ext/urid#unmap"
let LV2_LOG__log = "http://lv2plug.in/ns/ext/log#log"
let LV2_LOG__Error = "http://lv2plug.in/ns/ext/log#Error"
let LV2_LOG__Warning = "http://lv2plug.in/ns/ext/log#Warning"
let LV2_LOG__Note = "http://lv2plug.in/ns/ext/log#Note"
let LV2_LOG__Trace = "http://lv2plug.in/ns/ext/log#Trace"
let LV2_WORKER__schedule = "http://lv2plug.in/ns/ext/worker#schedule"
let LV2_WORKER__interface = "http://lv2plug.in/ns/ext/worker#interface"
let LV2_STATE__interface = "http://lv2plug.in/ns/ext/state#interface"

/// The process's LV2 world (lilv), loaded once on first use from `LV2_PATH` (lilv's default
/// path when unset). lilv is not thread-safe: every call here holds one lock.
/// Thread: control threads only.
public enum LV2 {
    /// SAFETY (`@unchecked Sendable`): the lilv world and nodes are used only under `lock`.
    final class World: @unchecked Sendable {
        let world: OpaquePointer
        let uris: [String: OpaquePointer]
        init() {
            world = lilv_world_new()
            lilv_world_load_all(world)
            var nodes: [String: OpaquePointer] = [:]
            for uri in [LV2_CORE__AudioPort, LV2_CORE__ControlPort, LV2_CORE__InputPort, LV2_CORE__OutputPort,
                        LV2_CORE__toggled, LV2_CORE__integer, LV2_CORE__enumeration, LV2_CORE__sampleRate,
                        LV2_CORE__connectionOptional, LV2_CORE__reportsLatency, LV2_PORT_PROPS__logarithmic,
                        LV2_UNITS__unit, LV2_CORE__name] {
                nodes[uri] = lilv_new_uri(world, uri)
            }
            uris = nodes
        }
        func node(_ uri: String) -> OpaquePointer { uris[uri]! }
    }
    // A ControlLock, not a Mutex: it is held while lilv loads every bundle (see ControlLock).
    static let lock = ControlLock<World?>(nil)

    /// Runs `body` with the world (made on first use), under the lock.
    static func withWorld<T>(_ body: (World) throws(PluginError) -> T) throws(PluginError) -> T {
        let result: Result<T, PluginError> = lock.withLock { state in
            if state == nil { state = World() }
            do throws(PluginError) { return .success(try body(state!)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Frees an instance while holding the world's lock. `lilv_instance_free` closes the
    /// plugin's library, and lilv counts a library's users in a tree in its world with no lock
    /// of its own (`lilv_lib_open`, called by `lilv_plugin_instantiate`, looks up the same tree):
    /// an instance freed on one thread while another instantiates corrupts the count, and the
    /// library can be unloaded under a running instance (a SEGV at a code address, seen with
    /// four threads making units at once). Thread: control thread; not inside ``withWorld(_:)``.
    static func free(_ instance: UnsafeMutablePointer<LilvInstance>) {
        lock.withLock { _ in lilv_instance_free(instance) }
    }

    /// Features the host gives a plugin (their URIs); a plugin requiring another is refused.
    /// `log:log` goes to every instance; `worker:schedule` to a plugin that requires it, lists
    /// it as optional or declares the worker interface (see ``PluginUnit``'s worker notes).
    public static let providedFeatures: [String] = [LV2_URID__map, LV2_URID__unmap, LV2_OPTIONS__options,
                                                    LV2_BUF_SIZE__boundedBlockLength, LV2_LOG__log, LV2_WORKER__schedule,
                                                    "http://lv2plug.in/ns/lv2core#inPlaceBroken",
                                                    "http://lv2plug.in/ns/lv2core#isLive", "http://lv2plug.in/ns/lv2core#hardRTCapable"]

    /// Every installed LV2 plugin, in lilv's order (by URI).
    /// - Thread: control thread; the first call loads every bundle's metadata (slow).
    public static func scan() -> [PluginInfo] {
        (try? withWorld { world in
            var found: [PluginInfo] = []
            let plugins = lilv_world_get_all_plugins(world.world)
            var it = lilv_plugins_begin(plugins)
            while !lilv_plugins_is_end(plugins, it) {
                if let plugin = lilv_plugins_get(plugins, it) { found.append(info(world, plugin)) }
                it = lilv_plugins_next(plugins, it)
            }
            return found
        }) ?? []
    }

    /// The installed plugin with `uri`.
    /// - Throws: ``PluginError/unknownURI(_:nearMatches:)``.
    /// - Thread: control thread.
    public static func find(uri: String) throws(PluginError) -> PluginInfo {
        // Not a URI at all (lilv would complain on standard error): no plugin has it.
        guard uri.contains(":") else { throw .unknownURI(uri, nearMatches: nearMatches(uri, in: scan().map(\.identifier))) }
        let found: PluginInfo? = try withWorld { world in
            plugin(world, uri).map { info(world, $0) }
        }
        if let found { return found }
        throw .unknownURI(uri, nearMatches: nearMatches(uri, in: scan().map(\.identifier)))
    }

    /// Loads one more bundle (a folder with `manifest.ttl`) into the world, e.g. a plugin not
    /// in `LV2_PATH`; its plugins are found from then on.
    /// - Throws: ``PluginError/unknownURI(_:nearMatches:)`` naming the path when it has no manifest.
    /// - Thread: control thread.
    public static func loadBundle(_ path: String) throws(PluginError) {
        let folder = path.hasSuffix("/") ? path : path + "/"
        guard access(folder + "manifest.ttl", R_OK) == 0 else { throw .unknownURI(folder, nearMatches: []) }
        try withWorld { world in
            let node = lilv_new_file_uri(world.world, nil, folder)
            defer { lilv_node_free(node) }
            lilv_world_load_bundle(world.world, node)
        }
    }

    static func plugin(_ world: World, _ uri: String) -> OpaquePointer? {
        let node = lilv_new_uri(world.world, uri)
        defer { lilv_node_free(node) }
        return lilv_plugins_get_by_uri(lilv_world_get_all_plugins(world.world), node)
    }

    static func string(_ node: OpaquePointer?) -> String {
        guard let node, let text = lilv_node_as_string(node) else { return "" }
        return String(cString: text)
    }

    static func info(_ world: World, _ plugin: OpaquePointer) -> PluginInfo {
        let uri = string(lilv_plugin_get_uri(plugin))
        let nameNode = lilv_plugin_get_name(plugin)
        defer { lilv_node_free(nameNode) }
        let makerNode = lilv_plugin_get_author_name(plugin)
        defer { if makerNode != nil { lilv_node_free(makerNode) } }
        var library = ""
        if let libURI = lilv_node_as_uri(lilv_plugin_get_library_uri(plugin)), let path = lilv_file_uri_parse(libURI, nil) {
            library = String(cString: path)
            lilv_free(path)
        }
        func uris(_ nodes: UnsafeMutableRawPointer?) -> [String] {
            guard let nodes else { return [] }
            var found: [String] = []
            var it = lilv_nodes_begin(nodes)
            while !lilv_nodes_is_end(nodes, it) {
                found.append(string(lilv_nodes_get(nodes, it)))
                it = lilv_nodes_next(nodes, it)
            }
            lilv_nodes_free(nodes)
            return found
        }
        let required = uris(lilv_plugin_get_required_features(plugin))
        var ports: [PluginPort] = []
        let count = lilv_plugin_get_num_ports(plugin)
        for i in 0..<count {
            guard let port = lilv_plugin_get_port_by_index(plugin, i) else { continue }
            func isA(_ uri: String) -> Bool { lilv_port_is_a(plugin, port, world.node(uri)) }
            func has(_ uri: String) -> Bool { lilv_port_has_property(plugin, port, world.node(uri)) }
            let symbol = string(lilv_port_get_symbol(plugin, port))
            let portName = lilv_port_get_name(plugin, port)
            let name = string(portName)
            if portName != nil { lilv_node_free(portName) }
            var def: OpaquePointer?, minimum: OpaquePointer?, maximum: OpaquePointer?
            lilv_port_get_range(plugin, port, &def, &minimum, &maximum)
            func value(_ node: OpaquePointer?) -> Float? {
                guard let node, lilv_node_is_float(node) || lilv_node_is_int(node) else { return nil }
                defer { lilv_node_free(node) }
                return lilv_node_as_float(node)
            }
            // lv2:sampleRate bounds are fractions of the rate: stated at 48 kHz here, as LADSPA's.
            let scale: Float = has(LV2_CORE__sampleRate) ? 48_000 : 1
            let d = value(def).map { $0 * scale }, lo = value(minimum).map { $0 * scale }, hi = value(maximum).map { $0 * scale }
            var points: [PluginPort.ScalePoint] = []
            if let list = lilv_port_get_scale_points(plugin, port) {
                var it = lilv_scale_points_begin(list)
                while !lilv_scale_points_is_end(list, it) {
                    if let point = lilv_scale_points_get(list, it) {
                        points.append(.init(value: lilv_node_as_float(lilv_scale_point_get_value(point)),
                                            label: string(lilv_scale_point_get_label(point))))
                    }
                    it = lilv_scale_points_next(list, it)
                }
                lilv_scale_points_free(list)
            }
            var unit: AudioUnitParameterUnit = has(LV2_CORE__toggled) ? .boolean : (has(LV2_CORE__enumeration) ? .indexed : .generic)
            if let unitNode = lilv_port_get(plugin, port, world.node(LV2_UNITS__unit)) {
                switch string(unitNode) {
                case LV2_UNITS__db: unit = .decibels
                case LV2_UNITS__hz: unit = .hertz
                case LV2_UNITS__s: unit = .seconds
                case LV2_UNITS__pc: unit = .percent
                case LV2_UNITS__cent: unit = .cents
                case LV2_UNITS__oct: unit = .octaves
                case LV2_UNITS__frame: unit = .sampleFrames
                default: break
                }
                lilv_node_free(unitNode)
            }
            let kind: PluginPort.Kind = isA(LV2_CORE__AudioPort) ? .audio : isA(LV2_CORE__ControlPort) ? .control : .other("unsupported port class")
            ports.append(PluginPort(index: i, symbol: symbol, name: name, kind: kind, isInput: isA(LV2_CORE__InputPort),
                                    minimum: lo, maximum: hi, defaultValue: d, isToggle: has(LV2_CORE__toggled),
                                    isInteger: has(LV2_CORE__integer), isEnumeration: has(LV2_CORE__enumeration),
                                    isLogarithmic: has(LV2_PORT_PROPS__logarithmic), isSampleRateRelative: has(LV2_CORE__sampleRate),
                                    reportsLatency: has(LV2_CORE__reportsLatency) || (kind == .control && symbol == "latency" && !isA(LV2_CORE__InputPort)),
                                    scalePoints: points.sorted { $0.value < $1.value }, unit: unit,
                                    isOptional: has(LV2_CORE__connectionOptional)))
        }
        var found = PluginInfo(standard: .lv2, identifier: uri, label: uri, uniqueID: 0, name: string(nameNode),
                               maker: string(makerNode), library: library, ports: ports, requiredFeatures: required, inPlaceBroken: false)
        found.optionalFeatures = uris(lilv_plugin_get_optional_features(plugin))
        found.extensionData = uris(lilv_plugin_get_extension_data(plugin))
        return found
    }

    // MARK: - URIDs (the urid:map and urid:unmap features)

    // A ControlLock, not a Mutex: plugins instantiating on two threads contend for it (see ControlLock).
    static let uridTable = ControlLock<(ids: [String: UInt32], uris: [UInt])>(([:], []))

    /// The URID of `uri` (1…), made on first use. Thread: any (a lock; plugins map at instantiate).
    static func map(_ uri: String) -> UInt32 {
        uridTable.withLock { table in
            if let id = table.ids[uri] { return id }
            table.uris.append(UInt(bitPattern: strdup(uri)))
            let id = UInt32(table.uris.count)
            table.ids[uri] = id
            return id
        }
    }

    static func unmap(_ id: UInt32) -> UnsafePointer<CChar>? {
        uridTable.withLock { table in id >= 1 && Int(id) <= table.uris.count ? UnsafePointer<CChar>(bitPattern: table.uris[Int(id) - 1]) : nil }
    }

    /// The feature array for one instance: URID map/unmap, options (block lengths, sample
    /// rate), boundedBlockLength, the host's log, and the instance's worker when it has one.
    /// Owns every C structure it points at (the worker too) until freed; the log belongs to
    /// the ``PluginHost``.
    final class Features {
        let array: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>
        private let allocations: [UnsafeMutableRawPointer]
        /// The instance's worker (CLV2Host), started after instantiate; nil when the plugin
        /// does not use the worker extension or after ``stopWorker()``.
        private(set) var worker: OpaquePointer?

        /// Ring size of a worker, each way (bytes): room for many requests per cycle, as jalv's 4096 × 2.
        static let workerRingBytes: UInt32 = 16_384

        init(sampleRate: Double, maximumFrames: Int, log: OpaquePointer?, worker: OpaquePointer?) {
            self.worker = worker
            var kept: [UnsafeMutableRawPointer] = []
            func keep<T>(_ value: T) -> UnsafeMutablePointer<T> {
                let p = UnsafeMutablePointer<T>.allocate(capacity: 1)
                p.initialize(to: value)
                kept.append(UnsafeMutableRawPointer(p))
                return p
            }
            func cString(_ s: String) -> UnsafePointer<CChar> {
                let p = strdup(s)!
                kept.append(UnsafeMutableRawPointer(p))
                return UnsafePointer(p)
            }
            let mapData = keep(LV2_URID_Map(handle: nil, map: { _, uri in uri.map { LV2.map(String(cString: $0)) } ?? 0 }))
            let unmapData = keep(LV2_URID_Unmap(handle: nil, unmap: { _, id in LV2.unmap(id) }))
            let maxBlock = keep(Int32(clamping: maximumFrames)), minBlock = keep(Int32(0)), rate = keep(Float(sampleRate))
            let intType = map(LV2_ATOM__Int), floatType = map(LV2_ATOM__Float)
            let options = UnsafeMutablePointer<LV2_Options_Option>.allocate(capacity: 4)
            kept.append(UnsafeMutableRawPointer(options))
            options[0] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: map(LV2_BUF_SIZE__maxBlockLength),
                                            size: 4, type: intType, value: UnsafeRawPointer(maxBlock))
            options[1] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: map(LV2_BUF_SIZE__minBlockLength),
                                            size: 4, type: intType, value: UnsafeRawPointer(minBlock))
            options[2] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: map("http://lv2plug.in/ns/ext/parameters#sampleRate"),
                                            size: 4, type: floatType, value: UnsafeRawPointer(rate))
            options[3] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil)
            var features = [
                keep(LV2_Feature(URI: cString(LV2_URID__map), data: UnsafeMutableRawPointer(mapData))),
                keep(LV2_Feature(URI: cString(LV2_URID__unmap), data: UnsafeMutableRawPointer(unmapData))),
                keep(LV2_Feature(URI: cString(LV2_OPTIONS__options), data: UnsafeMutableRawPointer(options))),
                keep(LV2_Feature(URI: cString(LV2_BUF_SIZE__boundedBlockLength), data: nil)),
            ]
            if let log {
                features.append(keep(LV2_Feature(URI: cString(LV2_LOG__log), data: UnsafeMutableRawPointer(ag_lv2_log_feature(log)))))
            }
            if let worker {
                features.append(keep(LV2_Feature(URI: cString(LV2_WORKER__schedule), data: UnsafeMutableRawPointer(ag_lv2_worker_schedule(worker)))))
            }
            allocations = kept
            array = .allocate(capacity: features.count + 1)
            for (i, f) in features.enumerated() { array[i] = UnsafePointer(f) }
            array[features.count] = nil
        }

        /// Stops and joins the worker thread and frees the worker (idempotent). Call before the
        /// instance is deactivated or freed: work() may be running on the instance.
        /// Thread: control thread.
        func stopWorker() {
            if let worker { ag_lv2_worker_free(worker) }
            worker = nil
        }

        deinit {
            stopWorker()
            for p in allocations { p.deallocate() }
            array.deallocate()
        }
    }

    /// Whether the plugin uses the worker extension: requires or asks for `worker:schedule`,
    /// or declares `worker:interface`.
    static func wantsWorker(_ info: PluginInfo) -> Bool {
        info.requiredFeatures.contains(LV2_WORKER__schedule) || info.optionalFeatures.contains(LV2_WORKER__schedule)
            || info.extensionData.contains(LV2_WORKER__interface)
    }

    /// A log for the plugin `uri`, its messages told apart by the log:Error…Trace URIDs. Free with `ag_lv2_log_free`.
    static func makeLog(_ uri: String) -> OpaquePointer? {
        let types = [LV2_LOG__Error, LV2_LOG__Warning, LV2_LOG__Note, LV2_LOG__Trace].map { map($0) }
        return types.withUnsafeBufferPointer { ag_lv2_log_new(uri, $0.baseAddress) }
    }

    /// A new instance of `info` at `sampleRate`, and the features it was given (keep them alive
    /// with the instance; stop their worker before freeing it). `log` (the host's) is given as
    /// log:log. A plugin using the worker extension gets a worker, started here when the
    /// instance returns `worker:interface` extension data (otherwise its schedule_work refuses,
    /// counted).
    /// - Throws: ``PluginError/missingFeature(plugin:feature:)``, ``PluginError/instantiateFailed(_:)``
    ///   (also when the worker thread or rings cannot be made).
    static func instantiate(_ info: PluginInfo, sampleRate: Double, maximumFrames: Int, log: OpaquePointer?) throws(PluginError) -> (UnsafeMutablePointer<LilvInstance>, Features) {
        if let missing = info.requiredFeatures.first(where: { !providedFeatures.contains($0) }) {
            throw .missingFeature(plugin: info.identifier, feature: missing)
        }
        var worker: OpaquePointer?
        if wantsWorker(info) {
            worker = ag_lv2_worker_new(Features.workerRingBytes)
            if worker == nil { throw .instantiateFailed(info.identifier) }
        }
        let features = Features(sampleRate: sampleRate, maximumFrames: maximumFrames, log: log, worker: worker)
        let instance: UnsafeMutablePointer<LilvInstance>? = try withWorld { (world: World) throws(PluginError) -> UnsafeMutablePointer<LilvInstance>? in
            guard let plugin = plugin(world, info.identifier) else { throw PluginError.unknownURI(info.identifier, nearMatches: []) }
            return lilv_plugin_instantiate(plugin, sampleRate, features.array)
        }
        guard let instance else { throw .instantiateFailed(info.identifier) }
        if let worker, let data = lilv_instance_get_extension_data(instance, LV2_WORKER__interface) {
            let interface = data.assumingMemoryBound(to: LV2_Worker_Interface.self)
            guard ag_lv2_worker_start(worker, instance.pointee.lv2_handle, interface) == 0 else {
                free(instance)
                throw .instantiateFailed(info.identifier)
            }
        }
        return (instance, features)
    }
}

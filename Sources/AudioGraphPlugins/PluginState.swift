// Plugins: PluginState — an LV2 plugin's own state (the LV2 state extension, state:interface) as key URI → typed bytes, saved from and restored into PluginUnit instances.
import AudioGraph
import CLilv
import CLV2Host
#if canImport(Glibc)
import Glibc
#endif

let LV2_ATOM__Bool = "http://lv2plug.in/ns/ext/atom#Bool"
let LV2_ATOM__Double = "http://lv2plug.in/ns/ext/atom#Double"
let LV2_ATOM__Long = "http://lv2plug.in/ns/ext/atom#Long"
let LV2_ATOM__String = "http://lv2plug.in/ns/ext/atom#String"
let LV2_ATOM__URI = "http://lv2plug.in/ns/ext/atom#URI"
let LV2_ATOM__Path = "http://lv2plug.in/ns/ext/atom#Path"

/// The state an LV2 plugin keeps besides its control ports, as the LV2 state extension
/// (<https://lv2plug.in/ns/ext/state>) hands it over: properties, each a key URI with a value
/// of a type (a URI, usually an atom type such as `http://lv2plug.in/ns/ext/atom#Float`) as
/// plain bytes in the machine's byte order — what jalv and Carla write as a preset's or
/// session's `state:state` block. Only plain portable data (`state:IS_POD` and
/// `state:IS_PORTABLE`) is kept; file references (`state:mapPath`) are not supported.
/// Thread: any (a value).
public struct PluginState: Sendable, Equatable {
    /// One property's value.
    public struct Value: Sendable, Equatable {
        /// The value's type URI, e.g. `http://lv2plug.in/ns/ext/atom#Float`.
        public var type: String
        /// The value as the plugin stored it (an atom body: a Float is 4 bytes, native order).
        public var bytes: [UInt8]

        /// A value of `type` with these bytes.
        public init(type: String, bytes: [UInt8]) {
            self.type = type
            self.bytes = bytes
        }

        /// A value from a number (a JSON number in a graph file): `atom:Float` (4 bytes),
        /// `atom:Double` (8), `atom:Int` (4, must be whole), `atom:Long` (8, whole), `atom:Bool`
        /// (4, 0 or 1).
        /// - Throws: ``PluginError/invalidStateValue(key:reason:)`` for another type, or a
        ///   number the type cannot hold.
        public init(type: String, number: Double, key: String = "") throws(PluginError) {
            func bytes<T>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
            let whole = number.isFinite && number == number.rounded()
            switch type {
            case LV2_ATOM__Float:
                guard number.isFinite, abs(number) <= Double(Float.greatestFiniteMagnitude) else { throw .invalidStateValue(key: key, reason: "\(number) is not a finite Float") }
                self.init(type: type, bytes: bytes(Float(number)))
            case LV2_ATOM__Double:
                guard number.isFinite else { throw .invalidStateValue(key: key, reason: "\(number) is not finite") }
                self.init(type: type, bytes: bytes(number))
            case LV2_ATOM__Int:
                guard whole, let v = Int32(exactly: number) else { throw .invalidStateValue(key: key, reason: "\(number) is not a 32-bit integer") }
                self.init(type: type, bytes: bytes(v))
            case LV2_ATOM__Long:
                guard whole, let v = Int64(exactly: number) else { throw .invalidStateValue(key: key, reason: "\(number) is not a 64-bit integer") }
                self.init(type: type, bytes: bytes(v))
            case LV2_ATOM__Bool:
                guard number == 0 || number == 1 else { throw .invalidStateValue(key: key, reason: "\(number) is not a Bool (0 or 1)") }
                self.init(type: type, bytes: bytes(Int32(number)))
            default:
                throw .invalidStateValue(key: key, reason: "a number cannot be a \(type) (numbers: atom Float, Double, Int, Long, Bool)")
            }
        }

        /// A value from text: `atom:String`, `atom:URI` or `atom:Path` (UTF-8 and a NUL, as atoms hold them).
        /// - Throws: ``PluginError/invalidStateValue(key:reason:)`` for another type.
        public init(type: String, text: String, key: String = "") throws(PluginError) {
            guard [LV2_ATOM__String, LV2_ATOM__URI, LV2_ATOM__Path].contains(type) else {
                throw .invalidStateValue(key: key, reason: "text cannot be a \(type) (text: atom String, URI, Path)")
            }
            self.init(type: type, bytes: Array(text.utf8) + [0])
        }

        /// The value as a number, for the number types (see ``init(type:number:key:)``) when
        /// the size fits; otherwise nil.
        public var number: Double? {
            func load<T>(_: T.Type) -> T? {
                guard bytes.count == MemoryLayout<T>.size else { return nil }
                return bytes.withUnsafeBytes { $0.loadUnaligned(as: T.self) }
            }
            switch type {
            case LV2_ATOM__Float: return load(Float.self).map(Double.init)
            case LV2_ATOM__Double: return load(Double.self)
            case LV2_ATOM__Int, LV2_ATOM__Bool: return load(Int32.self).map(Double.init)
            case LV2_ATOM__Long: return load(Int64.self).map(Double.init)
            default: return nil
            }
        }

        /// The value as text, for `atom:String`, `atom:URI`, `atom:Path` ending in a NUL; otherwise nil.
        public var text: String? {
            guard [LV2_ATOM__String, LV2_ATOM__URI, LV2_ATOM__Path].contains(type), bytes.last == 0 else { return nil }
            return String(decoding: bytes.dropLast(), as: UTF8.self)
        }
    }

    /// The properties, by key URI.
    public var values: [String: Value]

    /// A state of these properties.
    public init(_ values: [String: Value] = [:]) { self.values = values }
}

/// The state:Status values' names, for ``PluginError/stateRejected(plugin:status:)``.
func stateStatusName(_ status: LV2_State_Status) -> String {
    switch status {
    case LV2_STATE_ERR_BAD_TYPE: return "bad type"
    case LV2_STATE_ERR_BAD_FLAGS: return "bad flags"
    case LV2_STATE_ERR_NO_FEATURE: return "missing feature"
    case LV2_STATE_ERR_NO_PROPERTY: return "unknown property"
    case LV2_STATE_ERR_NO_SPACE: return "no space"
    default: return "unknown error (\(status.rawValue))"
    }
}

/// What save()'s store callback collects. Thread: the control thread calling save().
private final class StateStoreBox {
    var values: [String: PluginState.Value] = [:]
    var notPortable: String?
}

/// What restore()'s retrieve callback hands out: every value's bytes at a stable address until restore returns.
private final class StateRetrieveBox {
    var values: [UInt32: (type: UInt32, bytes: UnsafeMutableRawPointer, size: Int)] = [:]
    deinit { for v in values.values { v.bytes.deallocate() } }
}

private let portableFlags = LV2_STATE_IS_POD.rawValue | LV2_STATE_IS_PORTABLE.rawValue

private let storeValue: LV2_State_Store_Function = { handle, key, value, size, type, flags in
    guard let handle else { return LV2_STATE_ERR_UNKNOWN }
    let box = Unmanaged<StateStoreBox>.fromOpaque(handle).takeUnretainedValue()
    guard let keyURI = LV2.unmap(key).map({ String(cString: $0) }) else { return LV2_STATE_ERR_UNKNOWN }
    guard flags & portableFlags == portableFlags else {
        if box.notPortable == nil { box.notPortable = keyURI }
        return LV2_STATE_ERR_BAD_FLAGS
    }
    guard let typeURI = LV2.unmap(type).map({ String(cString: $0) }) else { return LV2_STATE_ERR_BAD_TYPE }
    let bytes = size == 0 || value == nil ? [] : Array(UnsafeRawBufferPointer(start: value, count: size))
    box.values[keyURI] = PluginState.Value(type: typeURI, bytes: bytes)
    return LV2_STATE_SUCCESS
}

private let retrieveValue: LV2_State_Retrieve_Function = { handle, key, size, type, flags in
    guard let handle else { return nil }
    let box = Unmanaged<StateRetrieveBox>.fromOpaque(handle).takeUnretainedValue()
    guard let value = box.values[key] else { return nil }
    size?.pointee = value.size
    type?.pointee = value.type
    flags?.pointee = portableFlags
    return UnsafeRawPointer(value.bytes)
}

extension PluginHost.InstanceSet {
    /// The plugin's state interface on instance `i`, or nil.
    func stateInterface(_ i: Int = 0) -> UnsafePointer<LV2_State_Interface>? {
        guard i < lv2Instances.count, let data = lilv_instance_get_extension_data(lv2Instances[i], LV2_STATE__interface) else { return nil }
        return data.assumingMemoryBound(to: LV2_State_Interface.self)
    }

    /// Saves instance 0's state (every instance of a set is the same plugin, fed different
    /// channels; instance 0 speaks for all). May run while the set renders (state.h allows
    /// save() concurrently with run()).
    /// - Throws: ``PluginError/noStateInterface(_:)``, ``PluginError/stateValueNotPortable(plugin:key:)``,
    ///   ``PluginError/stateRejected(plugin:status:)``.
    func save(host: PluginHost) throws(PluginError) -> PluginState {
        guard let interface = stateInterface(), let save = interface.pointee.save else { throw .noStateInterface(host.info.identifier) }
        let box = StateStoreBox()
        var noFeatures: [UnsafePointer<LV2_Feature>?] = [nil]
        let status = withExtendedLifetime(box) {
            save(lv2Instances[0].pointee.lv2_handle, storeValue, Unmanaged.passUnretained(box).toOpaque(), portableFlags, &noFeatures)
        }
        if let key = box.notPortable { throw .stateValueNotPortable(plugin: host.info.identifier, key: key) }
        guard status == LV2_STATE_SUCCESS else { throw .stateRejected(plugin: host.info.identifier, status: stateStatusName(status)) }
        return PluginState(box.values)
    }

    /// Restores `state` into every instance of the set. The set must not be rendering
    /// (restore() is in LV2's Instantiation class): a fresh set, before it is made current.
    /// - Throws: ``PluginError/noStateInterface(_:)``, ``PluginError/invalidStateValue(key:reason:)``
    ///   (a key or type that is not a URI), ``PluginError/stateRejected(plugin:status:)``.
    func restore(_ state: PluginState, host: PluginHost) throws(PluginError) {
        guard let interface = stateInterface(), let restore = interface.pointee.restore else { throw .noStateInterface(host.info.identifier) }
        let box = StateRetrieveBox()
        for (key, value) in state.values {
            guard key.contains(":") else { throw .invalidStateValue(key: key, reason: "the key is not a URI") }
            guard value.type.contains(":") else { throw .invalidStateValue(key: key, reason: "the type \(value.type) is not a URI") }
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: max(1, value.bytes.count), alignment: 16)
            value.bytes.withUnsafeBytes { if let base = $0.baseAddress { bytes.copyMemory(from: base, byteCount: $0.count) } }
            box.values[LV2.map(key)] = (LV2.map(value.type), bytes, value.bytes.count)
        }
        var noFeatures: [UnsafePointer<LV2_Feature>?] = [nil]
        for instance in lv2Instances {
            let status = withExtendedLifetime(box) {
                restore(instance.pointee.lv2_handle, retrieveValue, Unmanaged.passUnretained(box).toOpaque(), portableFlags, &noFeatures)
            }
            guard status == LV2_STATE_SUCCESS else { throw .stateRejected(plugin: host.info.identifier, status: stateStatusName(status)) }
        }
    }
}

extension PluginHost {
    /// Whether the plugin offers the state extension (declared, or returned by an instance).
    var hasStateInterface: Bool {
        info.extensionData.contains(LV2_STATE__interface) || currentSet?.stateInterface() != nil
    }

    /// The current set's state. - Throws: as ``InstanceSet/save(host:)``.
    func saveState() throws(PluginError) -> PluginState {
        guard let set = currentSet else { throw .noStateInterface(info.identifier) }
        return try set.save(host: self)
    }

    /// Restores `state` into a fresh set of instances like the current one, then makes it
    /// current (the render thread moves to it at its next piece; the old set is kept while the
    /// host lives). Sets for other rates are dropped, to be made again with the state.
    /// On a throw nothing changed.
    func restoreState(_ state: PluginState) throws(PluginError) {
        guard let set = currentSet else { throw .noStateInterface(info.identifier) }
        guard set.stateInterface() != nil else { throw .noStateInterface(info.identifier) }
        let s = set.state.pointee
        let fresh = try InstanceSet(self, sampleRate: s.sampleRate, instances: s.instanceCount, channels: s.channels, capacity: s.capacity)
        try fresh.restore(state, host: self)
        replaceSets(with: fresh, state: state)
    }
}

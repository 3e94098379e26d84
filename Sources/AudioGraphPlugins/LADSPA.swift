// Plugins, LADSPA: libraries loaded with dlopen from LADSPA_PATH, descriptors read into PluginInfo, instances made from them (ladspa.h from ladspa-sdk).
import AudioGraph
import CLADSPA
#if canImport(Glibc)
import Glibc
#endif

/// LADSPA libraries and their descriptors. Libraries stay loaded for the life of the process
/// once opened (an instance must never outlive its code, and `dlclose` gains nothing here).
/// Thread: control threads (a lock serialises loading; never the render thread).
public enum LADSPA {
    /// The folders searched: `LADSPA_PATH` split at `:`, or `/usr/lib/ladspa` and
    /// `/usr/local/lib/ladspa` when it is unset or empty.
    public static var searchPath: [String] {
        if let value = getenv("LADSPA_PATH").map({ String(cString: $0) }), !value.isEmpty {
            return value.split(separator: ":").map(String.init)
        }
        return ["/usr/lib/ladspa", "/usr/local/lib/ladspa"]
    }

    // path → the library's descriptor function (nil: not a LADSPA library, reason).
    // A ControlLock, not a Mutex: it is held across dlopen (see ControlLock).
    private static let libraries = ControlLock<[String: Result<UInt, PluginError>]>([:])

    typealias DescriptorFunction = @convention(c) (UInt) -> UnsafePointer<LADSPA_Descriptor>?

    /// Opens `path` (once) and returns its `ladspa_descriptor` function.
    static func open(_ path: String) throws(PluginError) -> DescriptorFunction {
        let result: Result<UInt, PluginError> = libraries.withLock { cache in
            if let known = cache[path] { return known }
            let loaded: Result<UInt, PluginError>
            if let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) {
                if let symbol = dlsym(handle, "ladspa_descriptor") {
                    loaded = .success(UInt(bitPattern: symbol))
                } else {
                    loaded = .failure(.notALADSPALibrary(path, reason: "no ladspa_descriptor symbol"))
                }
            } else {
                let reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
                loaded = .failure(.notALADSPALibrary(path, reason: reason))
            }
            cache[path] = loaded
            return loaded
        }
        switch result {
        case .success(let address): return unsafeBitCast(UnsafeRawPointer(bitPattern: address)!, to: DescriptorFunction.self)
        case .failure(let error): throw error
        }
    }

    /// Every plugin of the library at `path`.
    /// - Throws: ``PluginError/notALADSPALibrary(_:reason:)`` when it cannot be loaded or has
    ///   no `ladspa_descriptor`.
    /// - Thread: control thread.
    public static func plugins(inLibrary path: String) throws(PluginError) -> [PluginInfo] {
        let function = try open(path)
        var found: [PluginInfo] = []
        var index: UInt = 0
        while let descriptor = function(index) {
            found.append(info(descriptor, library: path))
            index += 1
        }
        return found
    }

    /// Every plugin in every library of ``searchPath`` (files ending `.so`), in path order;
    /// files that are not LADSPA libraries are skipped.
    /// - Thread: control thread; loads libraries (slow the first time).
    public static func scan() -> [PluginInfo] {
        var found: [PluginInfo] = []
        for folder in searchPath {
            guard let dir = opendir(folder) else { continue }
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
                if name.hasSuffix(".so") { names.append(name) }
            }
            closedir(dir)
            for name in names.sorted() {
                if let list = try? plugins(inLibrary: folder + "/" + name) { found += list }
            }
        }
        return found
    }

    /// The plugin with `label` (in `library`, a path or a file name searched in
    /// ``searchPath``; every library of the path when nil), or whose unique ID is `label`
    /// written as a number.
    /// - Throws: ``PluginError/unknownLabel(_:nearMatches:)``; ``PluginError/notALADSPALibrary(_:reason:)``
    ///   for a named library that is not one.
    /// - Thread: control thread.
    public static func find(label: String, library: String? = nil) throws(PluginError) -> PluginInfo {
        var candidates: [PluginInfo]
        if let library {
            let path: String
            if library.contains("/") {
                path = library
            } else {
                let file = library.hasSuffix(".so") ? library : library + ".so"
                path = searchPath.map { $0 + "/" + file }.first { access($0, R_OK) == 0 } ?? file
            }
            candidates = try plugins(inLibrary: path)
        } else {
            candidates = scan()
        }
        if let match = candidates.first(where: { $0.label == label }) { return match }
        if let id = UInt32(label), let match = candidates.first(where: { $0.uniqueID == id }) { return match }
        throw .unknownLabel(label, nearMatches: nearMatches(label, in: candidates.map(\.label)))
    }

    /// The descriptor of `info` (its library is loaded already).
    static func descriptor(_ info: PluginInfo) throws(PluginError) -> UnsafePointer<LADSPA_Descriptor> {
        let function = try open(info.library)
        var index: UInt = 0
        while let descriptor = function(index) {
            if descriptor.pointee.UniqueID == UInt(info.uniqueID), String(cString: descriptor.pointee.Label) == info.label { return descriptor }
            index += 1
        }
        throw .unknownLabel(info.label, nearMatches: [])
    }

    /// A port name made into a symbol: lowercase, runs of other characters as one `_`.
    static func symbol(_ name: String) -> String {
        var out = ""
        for ch in name.lowercased() {
            if ch.isASCII && (ch.isLetter || ch.isNumber) { out.append(ch) } else if !out.hasSuffix("_") { out.append("_") }
        }
        while out.hasSuffix("_") { out.removeLast() }
        return out.isEmpty ? "port" : out
    }

    // ladspa.h's hint and port bits (its macros are not imported into Swift).
    static let portInput: Int32 = 0x1, portOutput: Int32 = 0x2, portControl: Int32 = 0x4, portAudio: Int32 = 0x8
    static let boundedBelow: Int32 = 0x1, boundedAbove: Int32 = 0x2, toggled: Int32 = 0x4, sampleRate: Int32 = 0x8
    static let logarithmic: Int32 = 0x10, integer: Int32 = 0x20, defaultMask: Int32 = 0x3C0

    /// The rate LADSPA sample-rate-relative bounds are expressed at in ``PluginInfo``.
    static let referenceRate: Float = 48_000

    static func info(_ d: UnsafePointer<LADSPA_Descriptor>, library: String) -> PluginInfo {
        let desc = d.pointee
        var ports: [PluginPort] = []
        var symbols: Set<String> = []
        for i in 0..<Int(desc.PortCount) {
            let kindBits = desc.PortDescriptors[i]
            let name = String(cString: desc.PortNames[i]!)
            var symbol = Self.symbol(name)
            while symbols.contains(symbol) { symbol += "_\(i)" }
            symbols.insert(symbol)
            let hint = desc.PortRangeHints[i]
            let h = hint.HintDescriptor
            let scale: Float = h & sampleRate != 0 ? referenceRate : 1
            let lower: Float? = h & boundedBelow != 0 ? hint.LowerBound * scale : nil
            let upper: Float? = h & boundedAbove != 0 ? hint.UpperBound * scale : nil
            let isLog = h & logarithmic != 0
            var def: Float?
            switch h & defaultMask {
            case 0x40: def = lower
            case 0x80, 0xC0, 0x100:
                if let l = lower, let u = upper {
                    let w: Float = (h & defaultMask) == 0x80 ? 0.75 : (h & defaultMask) == 0xC0 ? 0.5 : 0.25
                    def = isLog && l > 0 && u > 0 ? expf(logf(l) * w + logf(u) * (1 - w)) : l * w + u * (1 - w)
                }
            case 0x140: def = upper
            case 0x200: def = 0
            case 0x240: def = 1
            case 0x280: def = 100
            case 0x2C0: def = 440
            default: def = nil
            }
            let isControl = kindBits & portControl != 0
            let isInput = kindBits & portInput != 0
            ports.append(PluginPort(index: UInt32(i), symbol: symbol, name: name,
                                    kind: isControl ? .control : (kindBits & portAudio != 0 ? .audio : .other("unknown")),
                                    isInput: isInput, minimum: lower, maximum: upper, defaultValue: def,
                                    isToggle: h & toggled != 0, isInteger: h & integer != 0, isEnumeration: false,
                                    isLogarithmic: isLog, isSampleRateRelative: h & sampleRate != 0,
                                    reportsLatency: isControl && !isInput && symbol == "latency",
                                    scalePoints: [], unit: h & toggled != 0 ? .boolean : (h & sampleRate != 0 ? .hertz : .generic),
                                    isOptional: false))
        }
        return PluginInfo(standard: .ladspa, identifier: library + ":" + String(cString: desc.Label), label: String(cString: desc.Label),
                          uniqueID: UInt32(truncatingIfNeeded: desc.UniqueID), name: String(cString: desc.Name),
                          maker: String(cString: desc.Maker), library: library, ports: ports, requiredFeatures: [],
                          inPlaceBroken: desc.Properties & 0x2 != 0)
    }
}

// Plugins: what a plugin is — its standard, identity, ports and component codes, read from lilv or a LADSPA descriptor without instantiating it.
import AudioGraph

/// The plugin standard a plugin comes from.
public enum PluginStandard: String, Sendable {
    /// LV2, found by lilv (`LV2_PATH`).
    case lv2
    /// LADSPA, found in `LADSPA_PATH` (default `/usr/lib/ladspa:/usr/local/lib/ladspa`).
    case ladspa
}

/// One port of a plugin, as the plugin declares it.
public struct PluginPort: Sendable {
    /// What flows through the port.
    public enum Kind: Sendable, Equatable {
        /// Audio samples (Float32 per frame).
        case audio
        /// One Float32 per run (a knob or a meter).
        case control
        /// Anything else (LV2 CV, atom, event ports): the unit cannot host the plugin if such a
        /// port is required.
        case other(String)
    }

    /// The port's index in the plugin (what `connect_port` takes).
    public let index: UInt32
    /// LV2 `lv2:symbol`; for LADSPA the port name made into a symbol (lowercase, `_` for
    /// anything but letters and digits), e.g. "gain".
    public let symbol: String
    /// The human name (LV2 `lv2:name`, LADSPA port name), e.g. "Gain".
    public let name: String
    /// What flows through the port.
    public let kind: Kind
    /// Input (true) or output.
    public let isInput: Bool
    /// Lower bound, if the plugin declares one (LADSPA sample-rate bounds already multiplied by
    /// 48 kHz; see ``isSampleRateRelative``).
    public let minimum: Float?
    /// Upper bound, if declared (as ``minimum``).
    public let maximum: Float?
    /// The default, if declared (LADSPA's default hints computed as the SDK describes them).
    public let defaultValue: Float?
    /// A toggle: 0 off, anything above 0 on.
    public let isToggle: Bool
    /// Whole numbers only.
    public let isInteger: Bool
    /// Only the values of ``scalePoints`` (LV2 `lv2:enumeration`).
    public let isEnumeration: Bool
    /// Best edited on a logarithmic scale.
    public let isLogarithmic: Bool
    /// Bounds are fractions of the sample rate (LADSPA `SAMPLE_RATE`, LV2 `lv2:sampleRate`).
    public let isSampleRateRelative: Bool
    /// The plugin's latency in frames (LV2 `lv2:reportsLatency`, LADSPA output named "latency").
    public let reportsLatency: Bool
    /// Named values (LV2 `lv2:scalePoint`), sorted by value.
    public let scalePoints: [ScalePoint]
    /// The unit, where the plugin declares one (LV2 `units:unit`) or a hint implies one.
    public let unit: AudioUnitParameterUnit
    /// Whether the plugin may run with the port unconnected (LV2 `lv2:connectionOptional`).
    public let isOptional: Bool

    /// A named value of a control port.
    public struct ScalePoint: Sendable, Equatable {
        /// The value.
        public let value: Float
        /// Its label, e.g. "Low-pass".
        public let label: String
    }
}

/// What the host knows of one installed plugin, read from its metadata (no instance made).
/// Thread: any (immutable).
public struct PluginInfo: Sendable, CustomStringConvertible {
    /// LV2 or LADSPA.
    public let standard: PluginStandard
    /// LV2: the plugin URI. LADSPA: `library:label`, e.g. `/usr/lib/ladspa/amp.so:amp_mono`.
    public let identifier: String
    /// LV2: the URI. LADSPA: the label, e.g. `amp_mono`.
    public let label: String
    /// LADSPA's unique ID (0 for LV2).
    public let uniqueID: UInt32
    /// The display name, e.g. "Mono Amplifier".
    public let name: String
    /// The maker, e.g. "Richard Furse (LADSPA example plugins)".
    public let maker: String
    /// LADSPA: the library path. LV2: the bundle's library path.
    public let library: String
    /// Every port, in index order.
    public let ports: [PluginPort]
    /// LV2 features the plugin requires (URIs); empty for LADSPA.
    public let requiredFeatures: [String]
    /// LADSPA `LADSPA_PROPERTY_INPLACE_BROKEN`: inputs and outputs must not share memory.
    public let inPlaceBroken: Bool
    /// LV2 features the plugin can use but does not require (`lv2:optionalFeature`, URIs);
    /// empty for LADSPA.
    public internal(set) var optionalFeatures: [String] = []
    /// LV2 extension data the plugin declares (`lv2:extensionData`, URIs, e.g. the worker's
    /// and the state extension's interfaces); empty for LADSPA.
    public internal(set) var extensionData: [String] = []

    /// The audio input ports, in index order.
    public var audioInputs: [PluginPort] { ports.filter { $0.kind == .audio && $0.isInput } }
    /// The audio output ports, in index order.
    public var audioOutputs: [PluginPort] { ports.filter { $0.kind == .audio && !$0.isInput } }

    /// Why this plugin cannot be a graph unit here, as the error ``PluginUnit/init(_:channels:)``
    /// throws for it; nil when it can (its library may still fail to load or instantiate, which
    /// only trying finds). A unit's audio ports are one input and one output element, so there
    /// must be outputs, no more inputs than outputs, and no required event, atom or CV port; an
    /// LV2 plugin must require only features in ``LV2/providedFeatures``.
    /// The one check behind the registry, `graphrun --list` and `graphthru --insert`.
    public var hostingProblem: PluginError? {
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        let outs = audioOutputs.count, ins = audioInputs.count
        if outs == 0 {
            return .unsupportedPorts(plugin: identifier, reason: ins == 0 ? "no audio ports" : "\(count(ins, "audio input")) and no audio outputs")
        }
        if ins > outs {
            return .unsupportedPorts(plugin: identifier, reason: "\(count(ins, "audio input")) but only \(count(outs, "output")) (a unit needs an output for each input)")
        }
        if let other = ports.first(where: { if case .other = $0.kind { return !$0.isOptional } else { return false } }) {
            return .unsupportedPorts(plugin: identifier, reason: "port \(other.symbol) is neither audio nor control (an event, atom or CV port; instruments are not hosted)")
        }
        if standard == .lv2, let missing = requiredFeatures.first(where: { !LV2.providedFeatures.contains($0) }) {
            return .missingFeature(plugin: identifier, feature: missing)
        }
        return nil
    }
    /// The control input ports, in index order: the unit's writable parameters, IDs 0…n−1.
    public var controlInputs: [PluginPort] { ports.filter { $0.kind == .control && $0.isInput } }
    /// The control output ports, in index order: the unit's read-only parameters, IDs after the inputs'.
    public var controlOutputs: [PluginPort] { ports.filter { $0.kind == .control && !$0.isInput } }

    /// The component codes (Docs/Plugins.md, "Component codes"): type `aufx` (effect) when the
    /// plugin has audio inputs, `augn` (generator) when it has none; manufacturer `LV2 ` or
    /// `LDSP`; subtype LADSPA's unique ID as a 32-bit number, or for LV2 the 32-bit FNV-1a hash
    /// of the URI's UTF-8 bytes. Stable across runs and machines.
    public var componentDescription: AudioComponentDescription {
        let type = FourCharCode(fourCharacters: audioInputs.isEmpty ? "augn" : "aufx")!
        switch standard {
        case .ladspa:
            return AudioComponentDescription(componentType: type, componentSubType: uniqueID,
                                             componentManufacturer: FourCharCode(fourCharacters: "LDSP")!)
        case .lv2:
            return AudioComponentDescription(componentType: type, componentSubType: fnv1a32(identifier),
                                             componentManufacturer: FourCharCode(fourCharacters: "LV2 ")!)
        }
    }

    /// For example `lv2 http://plugin.org.uk/swh-plugins/amp "Simple amplifier"`.
    public var description: String { "\(standard.rawValue) \(standard == .lv2 ? identifier : label) \"\(name)\"" }
}

/// The 32-bit FNV-1a hash of `text`'s UTF-8 bytes (Fowler, Noll, Vo): LV2 subtypes.
func fnv1a32(_ text: String) -> UInt32 {
    var hash: UInt32 = 0x811C_9DC5
    for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
    return hash
}

/// Why a plugin cannot be found, made or set. Every throwing call of this module throws it and
/// changes nothing on a throw.
public enum PluginError: Error, Equatable, CustomStringConvertible {
    /// No installed LV2 plugin has this URI; `nearMatches` are installed ones that look alike.
    case unknownURI(String, nearMatches: [String])
    /// No LADSPA plugin has this label (or unique ID) in the library or path searched.
    case unknownLabel(String, nearMatches: [String])
    /// The file is not a LADSPA library (cannot be loaded, or has no `ladspa_descriptor`).
    case notALADSPALibrary(String, reason: String)
    /// The plugin requires an LV2 feature this host does not provide (its URI).
    case missingFeature(plugin: String, feature: String)
    /// The plugin's instantiate returned nothing.
    case instantiateFailed(String)
    /// The plugin has a required port the host cannot feed (CV, atom, event), or its audio
    /// ports cannot be laid out as elements (more inputs than outputs, none at all).
    case unsupportedPorts(plugin: String, reason: String)
    /// No control port has this symbol; `valid` lists the symbols there are.
    case unknownPortSymbol(String, valid: [String])
    /// The channel count does not fit the plugin: a multiple of its audio outputs is needed.
    case channelCount(Int, pluginOutputs: Int)
    /// The plugin has no LV2 state extension (`state:interface`), so it has no state beyond
    /// its parameters to save or restore.
    case noStateInterface(String)
    /// The plugin saved a value this host cannot keep in a file: the LV2 state flags lack
    /// `state:IS_POD` or `state:IS_PORTABLE` (a pointer, or a value meaningful on this machine only).
    case stateValueNotPortable(plugin: String, key: String)
    /// The plugin's save() or restore() returned an error (`status`: "unknown error", "bad
    /// type", "bad flags", "missing feature", "unknown property", "no space"); nothing changed.
    case stateRejected(plugin: String, status: String)
    /// A state value that cannot be a value: a key or type that is not a URI, or bytes that do
    /// not fit the type (a graph file's "state" field).
    case invalidStateValue(key: String, reason: String)

    /// One line saying what is wrong and what would be right.
    public var description: String {
        func near(_ list: [String]) -> String { list.isEmpty ? "" : " (near: \(list.joined(separator: ", ")))" }
        switch self {
        case let .unknownURI(uri, list): return "no installed LV2 plugin has the URI \(uri)\(near(list))"
        case let .unknownLabel(label, list): return "no LADSPA plugin has the label or ID \(label)\(near(list))"
        case let .notALADSPALibrary(path, reason): return "\(path) is not a LADSPA library: \(reason)"
        case let .missingFeature(plugin, feature): return "\(plugin) requires the LV2 feature \(feature), which this host does not provide"
        case let .instantiateFailed(plugin): return "\(plugin) failed to instantiate (its library did not load, or its instantiate returned nothing; lilv or the plugin may have said why)"
        case let .unsupportedPorts(plugin, reason): return "\(plugin) cannot be hosted: \(reason)"
        case let .unknownPortSymbol(symbol, valid): return "no control port \(symbol) (valid: \(valid.joined(separator: ", ")))"
        case let .channelCount(channels, outputs): return "\(channels) channels do not fit a plugin with \(outputs) audio outputs (use a multiple)"
        case let .noStateInterface(plugin): return "\(plugin) has no LV2 state extension (its state is its parameters)"
        case let .stateValueNotPortable(plugin, key): return "\(plugin) saved \(key) as a value that is not plain portable data (state:IS_POD and state:IS_PORTABLE); it cannot be kept in a file"
        case let .stateRejected(plugin, status): return "\(plugin) refused its state: \(status)"
        case let .invalidStateValue(key, reason): return "state value \(key): \(reason)"
        }
    }
}

/// Names from `candidates` that contain `text` or share a word with it (case-insensitive),
/// at most five: the "near matches" errors list.
func nearMatches(_ text: String, in candidates: [String]) -> [String] {
    let lower = text.lowercased()
    let words = lower.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init).filter { $0.count >= 3 }
    let last = words.last ?? lower
    var found = candidates.filter { $0.lowercased().contains(lower) || lower.contains($0.lowercased()) }
    if found.isEmpty { found = candidates.filter { $0.lowercased().contains(last) } }
    return Array(found.prefix(5))
}

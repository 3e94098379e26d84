// Components: the AudioComponent analogue — descriptions by four-character codes, a registry of every unit the process can make (built-in, and plugins from providers), and instantiation by description.

/// A four-character code (`OSType`), e.g. `aufx`, as Apple's component codes are.
public typealias FourCharCode = UInt32

extension FourCharCode {
    /// The code of four ASCII characters, e.g. `FourCharCode("aufx")`; nil for any other string.
    public init?(fourCharacters text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        self = bytes.reduce(0) { $0 << 8 | FourCharCode($1) }
    }

    /// The four characters, e.g. "aufx" (non-printable bytes as `?`).
    public var fourCharacters: String {
        String((0..<4).map { i -> Character in
            let byte = UInt8((self >> (24 - 8 * i)) & 0xFF)
            return byte >= 0x20 && byte < 0x7F ? Character(UnicodeScalar(byte)) : "?"
        })
    }
}

/// Which unit to find: the `AudioComponentDescription` analogue. A field that is 0 in a
/// search matches any value (Apple's rule for `AudioComponentFindNext`).
public struct AudioComponentDescription: Hashable, Sendable, CustomStringConvertible {
    /// `componentType`: `auou` output, `aufx` effect, `aumx` mixer, `aufc` format converter,
    /// `augn` generator.
    public var componentType: FourCharCode
    /// `componentSubType`: which unit of the type, e.g. `lpas` (low-pass).
    public var componentSubType: FourCharCode
    /// `componentManufacturer`: `appl` for Apple's units (ours stand in for them), `AGph` for
    /// units that are ours alone, `LV2 ` / `LDSP` for plugins.
    public var componentManufacturer: FourCharCode
    /// `componentFlags` (unused by the engine; kept for ported code).
    public var componentFlags: UInt32
    /// `componentFlagsMask` (unused by the engine; kept for ported code).
    public var componentFlagsMask: UInt32

    /// A description from codes (0 fields match anything in a search).
    public init(componentType: FourCharCode, componentSubType: FourCharCode = 0, componentManufacturer: FourCharCode = 0,
                componentFlags: UInt32 = 0, componentFlagsMask: UInt32 = 0) {
        self.componentType = componentType
        self.componentSubType = componentSubType
        self.componentManufacturer = componentManufacturer
        self.componentFlags = componentFlags
        self.componentFlagsMask = componentFlagsMask
    }

    /// A description from four-character strings, e.g. `("aufx", "lpas", "appl")`; an empty
    /// string is 0 (matches anything in a search).
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a string that is neither empty nor
    ///   four printable ASCII characters.
    public init(type: String, subType: String = "", manufacturer: String = "") throws(AudioUnitError) {
        func code(_ text: String) throws(AudioUnitError) -> FourCharCode {
            if text.isEmpty { return 0 }
            guard let code = FourCharCode(fourCharacters: text) else { throw .invalidPropertyValue }
            return code
        }
        self.init(componentType: try code(type), componentSubType: try code(subType), componentManufacturer: try code(manufacturer))
    }

    /// Whether `component` fits this description used as a search (0 fields match anything).
    public func matches(_ component: AudioComponentDescription) -> Bool {
        (componentType == 0 || componentType == component.componentType)
            && (componentSubType == 0 || componentSubType == component.componentSubType)
            && (componentManufacturer == 0 || componentManufacturer == component.componentManufacturer)
    }

    /// For example `aufx/lpas/appl`.
    public var description: String {
        [componentType, componentSubType, componentManufacturer].map { $0 == 0 ? "*" : $0.fourCharacters }.joined(separator: "/")
    }
}

/// One kind of unit the process can make: the `AudioComponent` analogue.
/// Thread: any (immutable); ``instantiate()`` from a control thread.
public final class AudioComponent: Sendable, CustomStringConvertible {
    /// Its codes.
    public let componentDescription: AudioComponentDescription
    /// "Manufacturer: Name", as `AudioComponentCopyName` gives, e.g. "Apple: AULowpass".
    public let name: String
    /// `AudioComponentGetVersion`'s value: major in the high 16 bits, minor and bug-fix in the
    /// low bytes (0x00010000 = 1.0.0).
    public let version: UInt32
    /// Where it comes from: "built-in", "lv2", "ladspa", or what a provider says.
    public let origin: String
    /// A plugin's identity (an LV2 URI, a LADSPA library and label); empty for built-ins.
    public let identifier: String
    let factory: @Sendable () throws(AudioUnitError) -> AudioUnit

    /// A component; `factory` makes a new, detached unit each call (on a control thread).
    public init(_ description: AudioComponentDescription, name: String, version: UInt32 = 0x0001_0000, origin: String,
                identifier: String = "", factory: @escaping @Sendable () throws(AudioUnitError) -> AudioUnit) {
        componentDescription = description
        self.name = name
        self.version = version
        self.origin = origin
        self.identifier = identifier
        self.factory = factory
    }

    /// A new unit of this kind: `AudioComponentInstanceNew`.
    /// - Throws: the unit's own error (a plugin that fails to instantiate:
    ///   ``AudioUnitError/failedInitialization``).
    /// - Thread: control thread; allocates.
    public func instantiate() throws(AudioUnitError) -> AudioUnit { try factory() }

    /// For example `aufx/lpas/appl Apple: AULowpass`.
    public var description: String { "\(componentDescription) \(name)" }
}

/// Something that finds components outside the engine, e.g. the LV2 and LADSPA plugins
/// installed on the machine. Registered with ``AudioComponentRegistry/addProvider(_:)``.
public protocol AudioComponentProvider: Sendable {
    /// Every component the provider can make now. Called on a control thread, never the render
    /// thread; may take time (scanning plugin folders).
    func scan() -> [AudioComponent]
}

/// Every component the process can make: the built-in units, components registered by the
/// application, and those of providers (plugins), found once and refreshed on request. The
/// `AudioComponentFindNext` / `AudioComponentCount` / `AudioComponentRegister` analogue.
/// Thread: any; calls take a lock (a control-side registry, never used by the render thread).
public enum AudioComponentRegistry {
    struct State {
        var registered: [AudioComponent] = []
        var providers: [AudioComponentProvider] = []
        var scanned: [AudioComponent]?
    }
    static let state = ControlLock(State())
    /// Held while providers scan, so threads that look up at once scan once: the others wait
    /// and take what the first found (a plugin scan loads every LV2 bundle and LADSPA library).
    /// Never taken inside `state`'s lock, which scanning does not hold.
    static let scanning = ControlLock(())

    /// Every component, built-ins first, then registered ones, then providers' (scanning them
    /// the first time; a thread that asks while another scans waits for its answer).
    public static var all: [AudioComponent] {
        if let known = state.withLock({ s in s.scanned.map { (s.registered, $0) } }) { return builtIns + known.0 + known.1 }
        return scanning.withLock { _ in
            let (registered, providers, scanned) = state.withLock { ($0.registered, $0.providers, $0.scanned) }
            if let scanned { return builtIns + registered + scanned }
            let found = providers.flatMap { $0.scan() }
            state.withLock { if $0.scanned == nil { $0.scanned = found } }
            return builtIns + registered + found
        }
    }

    /// The components matching `description` (0 fields match anything), in ``all``'s order.
    public static func components(matching description: AudioComponentDescription) -> [AudioComponent] {
        all.filter { description.matches($0.componentDescription) }
    }

    /// How many components match: `AudioComponentCount`.
    public static func count(matching description: AudioComponentDescription) -> Int {
        components(matching: description).count
    }

    /// The first component after `previous` that matches `description` (`previous` nil: the
    /// first one): `AudioComponentFindNext`. Nil when there is none.
    public static func findNext(after previous: AudioComponent? = nil, matching description: AudioComponentDescription) -> AudioComponent? {
        let matching = components(matching: description)
        guard let previous else { return matching.first }
        guard let index = matching.firstIndex(where: { $0 === previous }) else { return nil }
        return index + 1 < matching.count ? matching[index + 1] : nil
    }

    /// Registers an application's own component: `AudioComponentRegister`.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` when the description has a 0 field or
    ///   is already registered (built-ins included).
    public static func register(_ component: AudioComponent) throws(AudioUnitError) {
        let d = component.componentDescription
        guard d.componentType != 0, d.componentSubType != 0, d.componentManufacturer != 0 else { throw .invalidPropertyValue }
        let known = all  // scans the providers if need be, outside the lock
        // Checked again and appended under one lock, so two threads cannot take the same codes.
        let taken = state.withLock { state -> Bool in
            if (known + state.registered).contains(where: { $0.componentDescription == d }) { return true }
            state.registered.append(component)
            return false
        }
        if taken { throw .invalidPropertyValue }
    }

    /// Adds a provider (plugins); its components appear at the next ``all`` after a ``refresh()``
    /// (or at the first use).
    public static func addProvider(_ provider: AudioComponentProvider) {
        state.withLock {
            $0.providers.append(provider)
            $0.scanned = nil
        }
    }

    /// Forgets what providers found; the next lookup scans again (plugins installed since).
    public static func refresh() {
        state.withLock { $0.scanned = nil }
    }
}

extension AudioGraph {
    /// Adds a node made from the first component matching `description`: `AUGraphAddNode` with
    /// a description.
    /// - Throws: ``AudioUnitError/invalidAudioUnit`` when no component matches; the component's
    ///   own error when it cannot be made; as ``addNode(_:)-(AudioUnit)`` otherwise. Nothing changes on a throw.
    /// - Thread: control thread; allocates.
    public func addNode(_ description: AudioComponentDescription) throws(AudioUnitError) -> AUNode {
        guard let component = AudioComponentRegistry.findNext(matching: description) else { throw .invalidAudioUnit }
        return try addNode(try component.instantiate())
    }
}

// Plugins: the LV2 and LADSPA providers that put installed plugins into AudioComponentRegistry.
import AudioGraph

/// Installed LV2 plugins as components (lilv's world, `LV2_PATH`). Codes: see
/// ``PluginInfo/componentDescription``. Thread: ``scan()`` on a control thread.
public struct LV2Provider: AudioComponentProvider {
    /// A provider; nothing is scanned until the registry asks.
    public init() {}
    /// Every installed LV2 plugin that can be hosted (audio outputs, no required port of
    /// another kind); slow the first time (lilv loads every bundle's metadata).
    public func scan() -> [AudioComponent] { LV2.scan().compactMap(PluginComponents.component) }
}

/// LADSPA plugins in `LADSPA_PATH` as components. Thread: ``scan()`` on a control thread.
public struct LADSPAProvider: AudioComponentProvider {
    /// A provider; nothing is scanned until the registry asks.
    public init() {}
    /// Every plugin of every library in ``LADSPA/searchPath`` that can be hosted.
    public func scan() -> [AudioComponent] { LADSPA.scan().compactMap(PluginComponents.component) }
}

/// Registration of both providers.
public enum PluginComponents {
    /// Adds ``LV2Provider`` and ``LADSPAProvider`` to ``AudioComponentRegistry`` (once per
    /// process; later calls do nothing). Scanning happens at the registry's first lookup, off
    /// the render thread; ``AudioComponentRegistry/refresh()`` scans again.
    /// Thread: control thread.
    public static func register() { _ = registered }

    private static let registered: Bool = {
        AudioComponentRegistry.addProvider(LV2Provider())
        AudioComponentRegistry.addProvider(LADSPAProvider())
        return true
    }()

    /// The component of one plugin, or nil when it cannot be hosted. Its name is
    /// "Maker: Name"; its ``AudioComponent/identifier`` the URI or `library:label`; its
    /// instances are ``PluginUnit``s (a plugin that fails to instantiate throws
    /// ``AudioUnitError/failedInitialization``).
    static func component(_ info: PluginInfo) -> AudioComponent? {
        guard info.hostingProblem == nil else { return nil }
        return AudioComponent(info.componentDescription, name: "\(info.maker.isEmpty ? info.standard.rawValue : info.maker): \(info.name)",
                              origin: info.standard.rawValue, identifier: info.identifier) { () throws(AudioUnitError) -> AudioUnit in
            do { return try PluginUnit(info) } catch { throw .failedInitialization }
        }
    }
}

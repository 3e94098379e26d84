// AudioGraphJACK: the driver's patchbay — connecting ports by name, pattern or physical order, and their pretty names.
import CJack
#if canImport(Glibc)
import Glibc
#endif

/// Routing: the calls that connect this client's ports to others and label them, as jack2's
/// `jack_connect`, `jack_lsp` and `jack-property` tools do. All of them talk to the server.
extension JACKDriver {
    /// Connects two ports by their exact full names (`client:port`; matched literally, so names
    /// with `+ ( ) [ ] .` work), in signal-flow order. Connecting ports that are already
    /// connected succeeds. A port that does not exist yet is waited for up to `timeout` seconds
    /// (polled every 50 ms), for clients that register their ports a moment after starting.
    /// - Throws: ``JACKDriverError/portNotFound(_:)`` after the timeout,
    ///   ``JACKDriverError/connectionFailed(source:destination:code:)``.
    /// - Thread: control thread (never from a JACK callback); may wait up to `timeout`.
    public func connect(_ source: String, to destination: String, timeout: Double = 0) throws(JACKDriverError) {
        guard let client, !isShutDown else { throw .serverShutDown(reason: shutdownReason) }
        var waited = 0.0
        for name in [source, destination] {
            while jack_port_by_name(client, name) == nil {
                guard waited < timeout, !isShutDown else { throw .portNotFound(name) }
                usleep(50_000)
                waited += 0.05
            }
        }
        // A port exists as soon as it is registered, but can be connected only once its client
        // is active: within the timeout, a refusal is retried too.
        while true {
            let code = jack_connect(client, source, destination)
            if code == 0 || code == EEXIST { return }
            guard waited < timeout, !isShutDown else { throw .connectionFailed(source: source, destination: destination, code: code) }
            usleep(50_000)
            waited += 0.05
        }
    }

    /// The server's physical ports of one direction, in server order.
    /// - Parameter capture: `true` for capture ports (outputs, which feed us), `false` for playback.
    /// - Thread: control thread.
    public func physicalPorts(capture: Bool) -> [String] {
        guard let client else { return [] }
        let flags = JackPortIsPhysical.rawValue | (capture ? JackPortIsOutput.rawValue : JackPortIsInput.rawValue)
        return portNames(client, matching: nil, flags: flags)
    }

    /// The ports connected to a port, whichever client they belong to (`jack_lsp -c` lists the
    /// same): for a playback port, the outputs that feed it; for a capture port, the inputs it
    /// feeds.
    /// - Parameter port: a full port name (`system:playback_1`), matched literally.
    /// - Returns: full port names in server order; empty when the port has no connections, does
    ///   not exist, or the client is closed or shut down.
    /// - Thread: control thread, never a JACK callback (it asks the server).
    public func connections(ofPort port: String) -> [String] {
        guard let client, !isShutDown, let handle = jack_port_by_name(client, port),
              let list = jack_port_get_all_connections(client, handle) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var names: [String] = []
        var i = 0
        while let name = list[i] { names.append(String(cString: name)); i += 1 }
        return names
    }

    /// A port's latency range as JACK last computed it (`jack_port_get_latency_range`), in
    /// frames: for `capture`, how long ago the port's samples entered the system (capture
    /// latency); otherwise how long until they leave it (playback latency). A netjack2 slave's
    /// `system` ports report the network latency this way.
    /// - Parameters:
    ///   - port: a full port name, matched literally.
    ///   - capture: true for the capture latency, false for the playback latency.
    /// - Returns: (min, max) frames, or nil when the port does not exist or the client is closed.
    /// - Thread: control thread, never a JACK callback.
    public func latencyRange(ofPort port: String, capture: Bool) -> (min: Int, max: Int)? {
        guard let client, !isShutDown, let handle = jack_port_by_name(client, port) else { return nil }
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(handle, capture ? JackCaptureLatency : JackPlaybackLatency, &range)
        return (Int(range.min), Int(range.max))
    }

    /// Connects physical capture port k to `in_k` and `out_k` to physical playback port k, for as
    /// many ports as both sides have.
    /// - Returns: the connections made, as (source, destination) pairs.
    /// - Throws: ``JACKDriverError/connectionFailed(source:destination:code:)``.
    /// - Thread: control thread.
    @discardableResult
    public func connectPhysicalPorts() throws(JACKDriverError) -> [(String, String)] {
        var made: [(String, String)] = []
        for (capture, input) in zip(physicalPorts(capture: true), inputPortNames) {
            try connect(capture, to: input); made.append((capture, input))
        }
        for (output, playback) in zip(outputPortNames, physicalPorts(capture: false)) {
            try connect(output, to: playback); made.append((output, playback))
        }
        return made
    }

    /// Finds ports by name or pattern, as `jack_lsp` does.
    ///
    /// An exact full port name is taken literally (so `+ ( ) [ ] .` in names work); anything
    /// else is a POSIX extended regular expression matched anywhere in the full name
    /// (`jack_get_ports`), e.g. `system:capture_.*`. Pattern matches exclude this client's own
    /// ports (connecting them to themselves would be a feedback loop) and come in server order.
    /// - Parameters:
    ///   - spec: a full port name or a pattern.
    ///   - sources: `true` for ports that produce audio (JACK output ports, e.g. capture),
    ///     `false` for ports that take it (JACK input ports, e.g. playback). Applies to patterns.
    ///   - timeout: seconds to wait, polling every 50 ms, for a matching port to appear (0: none).
    /// - Returns: one or more full port names.
    /// - Throws: ``JACKDriverError/invalidPortPattern(_:)`` (not a name, and not a valid
    ///   regex), ``JACKDriverError/portNotFound(_:)`` (nothing matched within the timeout),
    ///   ``JACKDriverError/serverShutDown(reason:)``.
    /// - Thread: control thread (never from a JACK callback); may wait up to `timeout`.
    public func ports(matching spec: String, sources: Bool, timeout: Double = 0) throws(JACKDriverError) -> [String] {
        guard let client, !isShutDown else { throw .serverShutDown(reason: shutdownReason) }
        var regex = regex_t()
        let isPattern = regcomp(&regex, spec, REG_EXTENDED | REG_NOSUB) == 0
        if isPattern { regfree(&regex) }
        var waited = 0.0
        while true {
            if jack_port_by_name(client, spec) != nil { return [spec] }
            guard isPattern else { throw .invalidPortPattern(spec) }
            let flags = sources ? JackPortIsOutput.rawValue : JackPortIsInput.rawValue
            let found = portNames(client, matching: spec, flags: flags).filter { !$0.hasPrefix(clientName + ":") }
            if !found.isEmpty { return found }
            guard waited < timeout, !isShutDown else { throw .portNotFound(spec) }
            usleep(50_000)
            waited += 0.05
        }
    }

    /// Gives a port a display name through JACK metadata (`jack_set_property` with
    /// `JACK_METADATA_PRETTY_NAME`, "http://jackaudio.org/metadata/pretty-name"), which
    /// patchbays such as qjackctl and Carla show instead of the port name. Removed again by
    /// ``close()`` for this client's ports.
    /// - Parameters:
    ///   - prettyName: the display name, e.g. "Mic L"; UTF-8.
    ///   - port: a full port name (any client's).
    /// - Throws: ``JACKDriverError/portNotFound(_:)``, ``JACKDriverError/metadataFailed(port:)``,
    ///   ``JACKDriverError/serverShutDown(reason:)``.
    /// - Thread: control thread, never a JACK callback (it talks to the server and waits).
    public func setPrettyName(_ prettyName: String, forPort port: String) throws(JACKDriverError) {
        guard let client, !isShutDown else { throw .serverShutDown(reason: shutdownReason) }
        guard let handle = jack_port_by_name(client, port) else { throw .portNotFound(port) }
        let uuid = jack_port_uuid(handle)
        guard jack_set_property(client, uuid, audiograph_jack_pretty_name_key(), prettyName, nil) == 0 else {
            throw .metadataFailed(port: port)
        }
        if port.hasPrefix(clientName + ":") && !prettyNamedPorts.contains(uuid) { prettyNamedPorts.append(uuid) }
    }

    /// A port's display name from JACK metadata (`JACK_METADATA_PRETTY_NAME`), or nil when it
    /// has none or the port does not exist.
    /// - Thread: control thread, never a JACK callback.
    public func prettyName(ofPort port: String) -> String? {
        guard let client, !isShutDown, let handle = jack_port_by_name(client, port) else { return nil }
        var value: UnsafeMutablePointer<CChar>?
        var type: UnsafeMutablePointer<CChar>?
        guard jack_get_property(jack_port_uuid(handle), audiograph_jack_pretty_name_key(), &value, &type) == 0, let value else { return nil }
        defer { jack_free(value); if let type { jack_free(type) } }
        return String(cString: value)
    }

    /// Removes the pretty names this client set on its own ports (JACK's metadata store
    /// outlives the ports). Called by ``close()`` while the client is still open.
    /// - Thread: control thread.
    func removeOwnPrettyNames(_ client: OpaquePointer) {
        if !isShutDown { for uuid in prettyNamedPorts { jack_remove_property(client, uuid, audiograph_jack_pretty_name_key()) } }
        prettyNamedPorts = []
    }

    /// Full names of the audio ports `jack_get_ports` lists for a pattern (nil: all) and flags,
    /// in server order.
    private func portNames(_ client: OpaquePointer, matching pattern: String?, flags: UInt32) -> [String] {
        guard let list = jack_get_ports(client, pattern, JACK_DEFAULT_AUDIO_TYPE, UInt(flags)) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var names: [String] = []
        var i = 0
        while let name = list[i] { names.append(String(cString: name)); i += 1 }
        return names
    }
}

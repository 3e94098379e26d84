// AudioGraphJACK: interruptions and configuration changes — notifications an app observes, and reconnecting after the server went away.
import AudioGraph
import CJack
#if canImport(Glibc)
import Glibc
#endif

extension JACKDriver {
    /// What the server runs at: the part of its state a client must follow.
    public struct Configuration: Sendable, Equatable, CustomStringConvertible {
        /// Frames per second (`jack_get_sample_rate`).
        public var sampleRate: Int
        /// The period in frames (`jack_get_buffer_size`).
        public var bufferSize: Int
        /// Whether the server runs freewheeling (as fast as it can, no real-time deadline).
        public var isFreewheeling: Bool

        /// A configuration.
        public init(sampleRate: Int, bufferSize: Int, isFreewheeling: Bool) {
            self.sampleRate = sampleRate
            self.bufferSize = bufferSize
            self.isFreewheeling = isFreewheeling
        }

        /// `48000 Hz, period 256` (and `, freewheeling`).
        public var description: String {
            "\(sampleRate) Hz, period \(bufferSize)\(isFreewheeling ? ", freewheeling" : "")"
        }
    }

    /// A connection between two ports, by full name (`client:port`), in signal-flow order.
    public struct PortConnection: Sendable, Hashable, CustomStringConvertible {
        /// The output port.
        public var source: String
        /// The input port.
        public var destination: String
        /// A connection from `source` to `destination`.
        public init(source: String, destination: String) {
            self.source = source
            self.destination = destination
        }
        /// `system:capture_1 → graphthru:in_1`.
        public var description: String { "\(source) → \(destination)" }
    }

    /// What happened to the client's server, as AVAudioSession posts its interruption and
    /// route-change notifications: observe them with ``addObserver(_:)``; the control thread
    /// delivers them with ``dispatchNotifications()``.
    public enum Notification: Sendable, Equatable, CustomStringConvertible {
        /// The server shut down or dropped the client (`jack_on_info_shutdown`); `reason` is the
        /// server's text. Nothing renders until ``JACKDriver/reconnect()`` succeeds.
        case interruptionBegan(reason: String)
        /// ``JACKDriver/reconnect()`` opened the client again: same name, same ports, the graph
        /// running. `downtime` is the time from the shutdown to the client running again, in
        /// seconds (0 when the shutdown time is unknown); `configuration` is the server's now.
        case interruptionEnded(downtime: Double, configuration: Configuration)
        /// The server's rate, period or freewheel mode changed (also after an interruption,
        /// when the new server runs otherwise). A new rate has already been followed when the
        /// notification comes from ``JACKDriver/reconnect()``; otherwise the main loop calls
        /// ``JACKDriver/followSampleRate()``.
        case configurationChanged(from: Configuration, to: Configuration)
        /// Physical ports this client was connected to went away while the server ran on (a
        /// netjack2 slave re-creates its `system:` ports when its master comes back; a driver
        /// restarted with `jack_control`); each connection is made again when its port is back
        /// (``JACKDriver/pendingConnections`` until then). Connections to other clients' ports
        /// that go away are not awaited: the client left, as JACK says.
        case connectionsLost([PortConnection])
        /// Awaited connections (``connectionsLost(_:)``, or after a ``JACKDriver/reconnect()``)
        /// made again now that their ports are back.
        case connectionsRestored([PortConnection])

        /// One line: `interruption began (reason)`, `interruption ended after 1.23 s (44100 Hz,
        /// period 256)`, `configuration changed: 48000 Hz, period 256 → 48000 Hz, period 64`.
        public var description: String {
            switch self {
            case .interruptionBegan(let reason):
                return "interruption began\(reason.isEmpty ? "" : " (\(reason))")"
            case .interruptionEnded(let downtime, let configuration):
                let seconds = Double(Int((downtime * 100).rounded())) / 100
                return "interruption ended after \(seconds) s (\(configuration))"
            case .configurationChanged(let from, let to):
                return "configuration changed: \(from) → \(to)"
            case .connectionsLost(let connections):
                return "port(s) gone, connection(s) awaited: \(connections.map(\.description).joined(separator: ", "))"
            case .connectionsRestored(let connections):
                return "connection(s) made again: \(connections.map(\.description).joined(separator: ", "))"
            }
        }
    }

    /// An observer's registration, for ``removeObserver(_:)``.
    public struct ObserverToken: Sendable, Hashable {
        let value: Int
    }

    /// What the server runs at now, as the callbacks last recorded it. Thread: any.
    public var configuration: Configuration {
        Configuration(sampleRate: sampleRate, bufferSize: bufferSize,
                      isFreewheeling: state.freewheeling.load(ordering: .relaxed))
    }

    /// A file descriptor that becomes readable when a notification is due (an interruption,
    /// a new rate, period or freewheel mode): a `poll`-based main loop sleeps on it and calls
    /// ``dispatchNotifications()`` when it wakes. The same pipe as ``shutdownFileDescriptor``.
    /// -1 if the pipe could not be made. Owned by the driver. Thread: any.
    public var notificationFileDescriptor: Int32 { state.shutdownPipe.read }

    /// Calls `handler` with every notification from now on, on the thread that calls
    /// ``dispatchNotifications()`` or ``reconnect()`` (the control thread), in order.
    /// - Returns: a token for ``removeObserver(_:)``.
    /// - Thread: control thread.
    @discardableResult
    public func addObserver(_ handler: @escaping (Notification) -> Void) -> ObserverToken {
        nextObserverToken += 1
        observers.append((nextObserverToken, handler))
        return ObserverToken(value: nextObserverToken)
    }

    /// Stops calling an observer. Unknown tokens are ignored. Thread: control thread.
    public func removeObserver(_ token: ObserverToken) {
        observers.removeAll { $0.token == token.value }
    }

    /// Empties the notification pipe and posts what changed since the last call: an
    /// interruption that began (once per shutdown), connections lost or made again (once the
    /// server's graph state shows the change: see ``dispatchDelay``), then a configuration
    /// change. JACK's callbacks only record; this is where observers hear of it.
    /// - Thread: control thread (never from a JACK callback).
    public func dispatchNotifications() {
        state.drainNotifications()
        if isShutDown {
            guard !interruptionPosted else { return }
            interruptionPosted = true
            // The dead client is closed at once, while no server of its name runs: libjack
            // crashes closing it once a new server of that name has started (measured, 1.9.21).
            close()
            post(.interruptionBegan(reason: shutdownReason))
            return
        }
        let cycles = state.cycles.load(ordering: .relaxed)
        if state.patchbayChanged.exchange(false, ordering: .relaxed) { patchbayChangeCycle = cycles }
        if let changed = patchbayChangeCycle, cycles &- changed >= 2 {
            patchbayChangeCycle = nil
            notePatchbay()
        }
        postConfigurationChange()
    }

    /// The connections a ``reconnect()`` makes again: this client's connections as last seen
    /// while its server ran (made by this process or by any patchbay: `jack_connect`, qjackctl),
    /// `(source, destination)` in signal-flow order. Thread: control thread.
    public var rememberedConnections: [(source: String, destination: String)] { knownConnections }

    /// Connections a ``reconnect()`` could not make yet because a peer's port was not there (its
    /// client not back yet); each is made when its port appears. Thread: control thread.
    public var pendingConnections: [(source: String, destination: String)] { awaitedConnections }

    /// Milliseconds after which ``dispatchNotifications()`` has work although no notification
    /// arrives, or -1 when it has none: a main loop polling ``notificationFileDescriptor`` uses it
    /// as its longest timeout. A reported connection or port change is noted only two cycles of
    /// this client after the report: jack2 keeps connections in a double-buffered graph state
    /// that the server switches to at the start of a process cycle (JackGraphManager), while it
    /// looks port names up at once, so a read right after a change can still list a connection
    /// to a port already unregistered, or miss one just made; a netjack2 slave waiting for its
    /// master runs few cycles for seconds, and its reads stay stale that long. Meanwhile this is
    /// a period (at least 1 ms). Thread: control thread.
    public var dispatchDelay: Int32 {
        guard patchbayChangeCycle != nil else { return -1 }
        let rate = max(1, Int(state.sampleRate.load(ordering: .relaxed)))
        return Int32(max(1, Int(state.bufferSize.load(ordering: .relaxed)) * 1000 / rate))
    }

    /// After the server reported a change: notes this client's connections (a snapshot that
    /// holds only while the server runs: a shutdown under way leaves the last good one) and
    /// makes the awaited connections whose ports exist now. A connection to a physical port that
    /// is gone, or was re-created (another port id under the same name), is awaited and posted
    /// as ``Notification/connectionsLost(_:)``, and so is one whose port is there again under
    /// the same id after ports were unregistered (jack2 reuses a port's slot); one to a port
    /// that stayed was broken by a patchbay and is forgotten. Thread: control thread.
    private func notePatchbay() {
        guard let client else { return }
        func snapshot() -> [(source: String, destination: String)] {
            var seen: [(source: String, destination: String)] = []
            for port in inputPortNames { seen += connections(ofPort: port).map { ($0, port) } }
            for port in outputPortNames { seen += connections(ofPort: port).map { (port, $0) } }
            return seen
        }
        var seen = snapshot()
        // A snapshot taken as the server goes away reads every port as unconnected: keep the last good one.
        let alive = !isShutDown && jack_port_by_name(client, inputPortNames.first ?? outputPortNames.first ?? "") != nil
        let own = Set(inputPortNames + outputPortNames)
        func peer(_ pair: (source: String, destination: String)) -> String { own.contains(pair.source) ? pair.destination : pair.source }
        var lost: [PortConnection] = []
        let unregistered = state.portsUnregistered.load(ordering: .relaxed)
        if alive {
            for pair in knownConnections where !seen.contains(where: { $0 == pair }) {
                guard let id = physicalPeers[peer(pair)], !awaitedConnections.contains(where: { $0 == pair }) else { continue }
                // Still the same port, and none went away meanwhile: a patchbay broke it.
                if let port = jack_port_by_name(client, peer(pair)), jack_port_uuid(port) == id, unregistered == unregistrationsNoted { continue }
                awaitedConnections.append(pair)
                lost.append(PortConnection(source: pair.source, destination: pair.destination))
            }
        }
        var restored: [PortConnection] = []
        if !awaitedConnections.isEmpty {
            awaitedConnections.removeAll { pair in
                let made = jack_port_by_name(client, pair.source) != nil && jack_port_by_name(client, pair.destination) != nil
                    && [0, EEXIST].contains(jack_connect(client, pair.source, pair.destination))
                if made { restored.append(PortConnection(source: pair.source, destination: pair.destination)) }
                return made
            }
        }
        guard alive else { return }
        unregistrationsNoted = unregistered
        // Not read again: a read right after jack_connect can miss what it made (see
        // dispatchDelay); the notifications it causes bring a settled read.
        seen.removeAll { pair in awaitedConnections.contains { $0 == pair } }
        for made in restored where !seen.contains(where: { $0 == (made.source, made.destination) }) {
            seen.append((made.source, made.destination))
        }
        knownConnections = seen
        var peers: [String: jack_uuid_t] = [:]
        for pair in seen {
            let name = peer(pair)
            guard let port = jack_port_by_name(client, name) else {
                // Listed as connected but not found by name: read while its driver unregisters it
                // (netjack2's slave losing its master). Keep what was known of it, or the loss
                // that follows would be taken for a patchbay's.
                if let id = physicalPeers[name] { peers[name] = id }
                continue
            }
            guard (UInt32(bitPattern: jack_port_flags(port)) & JackPortIsPhysical.rawValue) != 0 else { continue }
            peers[name] = jack_port_uuid(port)
        }
        physicalPeers = peers
        if !lost.isEmpty { post(.connectionsLost(lost)) }
        if !restored.isEmpty { post(.connectionsRestored(restored)) }
    }

    /// Makes the remembered connections again on a client just reopened; those whose peer is
    /// not there yet wait in ``pendingConnections``. Thread: control thread.
    private func restoreConnections() {
        guard let client else { return }
        let wanted = knownConnections + awaitedConnections
        awaitedConnections = []
        for pair in wanted {
            let code = jack_connect(client, pair.source, pair.destination)
            if code != 0 && code != EEXIST && !awaitedConnections.contains(where: { $0 == pair }) { awaitedConnections.append(pair) }
        }
        knownConnections = wanted.filter { pair in !awaitedConnections.contains { $0 == pair } }
    }

    /// Opens the client again after the server shut down or dropped it, as it was: the same
    /// name (exactly: ``clientName``), the same ports `in_k` and `out_k`, the same callbacks;
    /// the graph follows the new server's rate when it differs (see ``followSampleRate()``)
    /// and runs again; the counters go on counting. The client's connections as last seen
    /// (``rememberedConnections``: made by this process or any patchbay) are made again; those
    /// whose peer is not back yet are made when its port appears (``pendingConnections``).
    /// Posts ``Notification/interruptionEnded(downtime:configuration:)`` (after
    /// ``Notification/interruptionBegan(reason:)`` when that was not yet delivered), then
    /// ``Notification/configurationChanged(from:to:)`` when the new server runs otherwise.
    /// Does nothing while the client is connected. Never waits for a server: a loop calls it
    /// again, gently (graphthru: every 250 ms), until it succeeds.
    /// - Throws: ``JACKDriverError/serverNotRunning(server:)`` while no server answers (the
    ///   usual case; try again later); ``JACKDriverError/invalidClientName(_:reason:)`` when
    ///   another client took the name meanwhile; ``JACKDriverError/portRegistrationFailed(_:)``,
    ///   ``JACKDriverError/activationFailed``, ``JACKDriverError/clientOpenFailed(status:)``;
    ///   ``JACKDriverError/graph(_:)`` when the graph cannot run at the new rate (it is left
    ///   uninitialized). After any throw the driver is closed and interrupted as before, and
    ///   a later call tries again.
    /// - Thread: control thread (never from a JACK callback); allocates.
    public func reconnect() throws(JACKDriverError) {
        guard isShutDown || client == nil else { return }
        if isShutDown && !interruptionPosted { dispatchNotifications() }
        let wentAway = state.shutdownTime.load(ordering: .relaxed)
        close()  // the dead client: its threads are gone once this returns
        var again = options
        again.clientName = clientName
        again.useExactName = true
        again.startServer = false
        let (client, _) = try JACKDriver.openClient(again)
        // From here the state belongs to the new client: no callback of the old one runs.
        let reason = String(cString: state.shutdownReason)
        state.resetAfterShutdown()
        do {
            _ = try JACKDriver.prepare(client, named: clientName, state: state)
        } catch {
            markShutDown(reason)
            throw error
        }
        self.client = client
        do throws(JACKDriverError) {
            if Double(sampleRate) != io.deviceOutputFormat.sampleRate {
                do throws(AudioUnitError) { try reconfigureGraphForServerRate() } catch { throw JACKDriverError.graph(error) }
            }
            try start()
        } catch {
            close()
            markShutDown(reason)
            throw error
        }
        interruptionPosted = false
        var downtime = 0.0
        if wentAway > 0 {
            downtime = Double(monotonicNanoseconds() &- wentAway) / 1e9
        }
        restoreConnections()
        post(.interruptionEnded(downtime: downtime, configuration: configuration))
        postConfigurationChange()
    }

    /// Puts the state back to "shut down" after a reconnect that failed half-way, so that the
    /// next ``reconnect()`` starts from the same place (the reason is kept).
    private func markShutDown(_ reason: String) {
        var i = 0
        for byte in reason.utf8.prefix(JACKRenderState.reasonCapacity - 1) { state.shutdownReason[i] = CChar(bitPattern: byte); i += 1 }
        state.shutdownReason[i] = 0
        state.shutDown.store(true, ordering: .releasing)
        interruptionPosted = true
    }

    private func postConfigurationChange() {
        let now = configuration
        guard now != lastConfiguration else { return }
        let before = lastConfiguration
        lastConfiguration = now
        if now.bufferSize != before.bufferSize, let voice = state.voiceIO {
            // A voice-processing unit's latency follows the period: the plan reports it again,
            // and the ports' latency ranges with it.
            try? voice.setExpectedSliceFrames(now.bufferSize)
            recomputeLatency()
        }
        post(.configurationChanged(from: before, to: now))
    }

    private func post(_ notification: Notification) {
        for observer in observers { observer.handler(notification) }
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds, the clock of ``JACKRenderState/shutdownTime``.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

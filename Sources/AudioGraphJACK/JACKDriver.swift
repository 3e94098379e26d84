// AudioGraphJACK: the driver — a JACK client that opens, configures the IO unit, pulls the graph each period and closes.
import AudioGraph
import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A JACK client whose process callback pulls an `AudioGraph`: the graph's device.
///
/// It registers one input port per device input channel (`in_1…in_N`, fed to IO element 1) and
/// one output port per device output channel (`out_1…out_N`, fed from IO element 0). The ports
/// are ordinary JACK ports: route them with `jack_connect`, qjackctl or Carla, or with
/// ``connectPhysicalPorts()`` and ``connect(_:to:timeout:)``.
///
/// Order (as in jack2's example clients): ``init(graph:options:)`` opens the client, sets the
/// callbacks and registers the ports; ``start()`` initializes and starts the graph and
/// activates; then connect. ``close()`` deactivates and closes.
///
/// The process callback is real-time safe (no allocation, lock, I/O or blocking; `@_noLocks`).
/// Server shutdown sets a flag (``isShutDown``) and writes a byte to ``notificationFileDescriptor``,
/// nothing else; the control thread hears of it as a ``Notification`` (``dispatchNotifications()``)
/// and may ``reconnect()`` once a server runs again; xruns are counted; a period
/// change needs no reallocation, because the graph renders long periods as several slices.
///
/// Thread: control thread, one at a time; the counters are readable from any thread.
/// SAFETY (`@unchecked Sendable`): client, isActive and prettyNamedPorts change on the control thread only; JACK's threads see JACKRenderState.
public final class JACKDriver: @unchecked Sendable {
    /// How to open the client.
    public struct Options: Sendable {
        /// Client name, 1…63 bytes. JACK appends a suffix when it is taken (see ``JACKDriver/clientName``).
        public var clientName: String = "audiograph"
        /// Server to connect to; nil uses `$JACK_DEFAULT_SERVER` or "default".
        public var serverName: String? = nil
        /// Let libjack start a server when none runs (`jack_client_open` without `JackNoStartServer`).
        public var startServer: Bool = false
        /// Fail instead of accepting a suffixed name when the name is taken (`JackUseExactName`).
        public var useExactName: Bool = false
        /// Input ports (IO element 1 channels), 1…64.
        public var inputChannels: Int = 2
        /// Output ports (IO element 0 channels), 1…64.
        public var outputChannels: Int = 2
        /// When the server's rate changes (``JACKDriver/followSampleRate()``, or a
        /// ``JACKDriver/reconnect()`` to a server at another rate): true moves every stream format
        /// the application set at the old server rate to the new one (`AudioGraph.moveSetFormats(from:to:)`:
        /// formats set at the server's rate only to choose a channel count follow the server, and
        /// nothing is converted); false (the default, as AUGraph does) keeps them at their rate
        /// and converts, with the latency that adds. Formats set at another rate are converted either way.
        public var setFormatsFollowServerRate: Bool = false
        /// How many of the first ports on each side carry latency onward: the outputs report the
        /// largest capture latency of the first `latencyPorts` inputs plus the graph's, the
        /// inputs the largest playback latency of the first `latencyPorts` outputs plus the
        /// graph's; nil (the default) counts every port. For ports whose path the graph already
        /// accounts for: graphrun's returns from another server, whose round trip a unit in the
        /// graph reports, so JACK must not add the network latency of the ports feeding them again.
        public var latencyPorts: Int? = nil
        /// Short names for the output ports, one per output channel (nil: `out_1…out_N`), so
        /// that one device output can carry several port groups: graphvoice's `out_1…` (the
        /// speaker) and `uplink_1…` (the processed microphone). A count other than
        /// ``outputChannels`` is ``JACKDriverError/invalidChannelCount(_:)``; a name JACK refuses
        /// (empty, taken twice) is ``JACKDriverError/portRegistrationFailed(_:)``.
        public var outputPortNames: [String]? = nil
        /// Creates options with the defaults above.
        public init() {}
    }

    /// The graph this client pulls.
    public let graph: AudioGraph
    /// The name the server gave the client (may carry a suffix such as `-01`).
    public let clientName: String
    /// Full names of the input ports, `client:in_1…`.
    public let inputPortNames: [String]
    /// Full names of the output ports, `client:out_1…`.
    public let outputPortNames: [String]

    /// The open client; nil once closed. Internal: the patchbay extension talks to it.
    var client: OpaquePointer?
    let state: JACKRenderState
    /// The graph's IO unit, configured to the server here and again by ``followSampleRate()``.
    let io: IOUnit
    var isActive = false
    /// The options the client was opened with (``reconnect()`` opens the next one alike).
    let options: Options
    /// Observers of ``Notification``s, by token, called on the control thread.
    var observers: [(token: Int, handler: (Notification) -> Void)] = []
    var nextObserverToken = 0
    /// The configuration the last notification (or the opening) told of.
    var lastConfiguration: Configuration
    /// Whether ``Notification/interruptionBegan(reason:)`` was posted for the current shutdown.
    var interruptionPosted = false
    /// This client's connections as last seen while the server ran, `(source, destination)`:
    /// made again by ``reconnect()``. Updated when the server reports a connection change.
    var knownConnections: [(source: String, destination: String)] = []
    /// Connections ``reconnect()`` could not make yet (a peer's port not there): made when the
    /// port registers.
    var awaitedConnections: [(source: String, destination: String)] = []
    /// Peer ports of ``knownConnections`` that were physical (`JackPortIsPhysical`: a driver's
    /// `system:` ports) when last seen, with their port ids (a re-created port has another).
    /// Control thread.
    var physicalPeers: [String: jack_uuid_t] = [:]
    /// The server's port unregistrations counted when ``knownConnections`` was last noted.
    var unregistrationsNoted: UInt64 = 0
    /// This client's cycle count when the latest connection or port change was reported and not
    /// yet noted (see ``JACKDriver/dispatchDelay``); nil when none waits. Control thread.
    var patchbayChangeCycle: UInt64?
    /// This client's ports that carry a pretty name, removed again by ``close()``.
    var prettyNamedPorts: [jack_uuid_t] = []

    /// Opens a JACK client for `graph`, sets its callbacks, registers its ports and configures the
    /// graph's `IOUnit` to the server's sample rate and the port counts. Does not activate.
    /// - Parameters:
    ///   - graph: an uninitialized graph with one `IOUnit` node.
    ///   - options: name, server and channel counts.
    /// - Throws: ``JACKDriverError/serverNotRunning(server:)``, ``JACKDriverError/invalidClientName(_:reason:)``,
    ///   ``JACKDriverError/invalidServerName(_:reason:)`` (empty, or over 255 bytes),
    ///   ``JACKDriverError/clientOpenFailed(status:)``, ``JACKDriverError/invalidChannelCount(_:)``,
    ///   ``JACKDriverError/portRegistrationFailed(_:)``, ``JACKDriverError/graph(_:)``
    ///   (no IO node: outputNodeErr; initialized with other formats: initialized). On failure the
    ///   client is closed again.
    /// - Thread: control thread; allocates.
    public init(graph: AudioGraph, options: Options = Options()) throws(JACKDriverError) {
        let name = options.clientName
        if let reason = JACKDriver.problem(withClientName: name) { throw .invalidClientName(name, reason: reason) }
        if let (server, reason) = JACKDriver.problem(withServerOf: options) { throw .invalidServerName(server, reason: reason) }
        for n in [options.inputChannels, options.outputChannels] where n < 1 || n > 64 { throw .invalidChannelCount(n) }
        if let names = options.outputPortNames, names.count != options.outputChannels { throw .invalidChannelCount(names.count) }
        guard let io = graph.ioUnit else { throw .graph(.outputNodeErr) }

        let (client, actualName) = try JACKDriver.openClient(options)
        let rate = jack_get_sample_rate(client)
        do {
            try io.configureDevice(inputChannels: UInt32(options.inputChannels), outputChannels: UInt32(options.outputChannels),
                                   sampleRate: Double(rate))
        } catch {
            jack_client_close(client)
            throw .graph(error)
        }

        let state = JACKRenderState(graph: graph.renderContext, inputCount: options.inputChannels, outputCount: options.outputChannels,
                                    latencyPorts: options.latencyPorts)
        if let names = options.outputPortNames { state.outputShortNames = names }
        // Render workers (AudioGraph.setRenderThreads) run at the process thread's priority, as
        // jack_client_create_thread would start them; -1: the server is not real-time.
        graph.renderWorkerPriority = max(0, jack_client_real_time_priority(client))
        if let voice = io as? VoiceProcessingIOUnit {
            // Its latency is set for the server's period; the latency callback gives it the echo path.
            try? voice.setExpectedSliceFrames(Int(jack_get_buffer_size(client)))
            // Its worker runs just below the process thread (never preempting it); a server
            // without real-time scheduling (-1) gets an ordinary worker.
            let priority = jack_client_real_time_priority(client)
            voice.workerPriority = priority > 1 ? priority - 1 : 0
            state.voiceIO = voice
        }
        let (inputNames, outputNames) = try JACKDriver.prepare(client, named: actualName, state: state)

        self.graph = graph
        self.io = io
        self.serverName = options.serverName ?? Self.environmentServer ?? "default"
        self.client = client
        self.state = state
        self.clientName = actualName
        self.inputPortNames = inputNames
        self.outputPortNames = outputNames
        self.options = options
        lastConfiguration = Configuration(sampleRate: Int(rate), bufferSize: Int(jack_get_buffer_size(client)), isFreewheeling: false)
    }

    deinit { close() }

    /// Opens a client as `options` say (libjack's messages routed first).
    /// - Throws: ``JACKDriverError/serverNotRunning(server:)``, ``JACKDriverError/invalidClientName(_:reason:)``
    ///   (the name is taken and exact naming was asked for), ``JACKDriverError/clientOpenFailed(status:)``.
    static func openClient(_ options: Options) throws(JACKDriverError) -> (OpaquePointer, String) {
        var raw = JackNullOption.rawValue
        if !options.startServer { raw |= JackNoStartServer.rawValue }
        if options.useExactName { raw |= JackUseExactName.rawValue }
        if options.serverName != nil { raw |= JackServerName.rawValue }
        routeLibjackMessages()
        var status = jack_status_t(rawValue: 0)
        let opened: OpaquePointer? = options.serverName.withOptionalCString { server in
            audiograph_jack_client_open(options.clientName, jack_options_t(rawValue: raw), &status, server)
        }
        guard let client = opened else {
            // JackServerFailed: nothing answered. JackServerError alone: a server answered and refused.
            if status.rawValue & JackServerFailed.rawValue != 0 {
                throw .serverNotRunning(server: options.serverName ?? Self.environmentServer)
            }
            // jack2 answers a taken exact name with JackFailure|JackServerError (0x21), as it
            // answers a server still shutting down: a look at the clients tells them apart.
            if status.rawValue & JackNameNotUnique.rawValue != 0 || (options.useExactName && isClientConnected(options)) {
                throw .invalidClientName(options.clientName, reason: "a client of that name is already connected")
            }
            throw .clientOpenFailed(status: status.rawValue)
        }
        return (client, String(cString: jack_get_client_name(client)))
    }

    /// Whether a client named `options.clientName` is connected to the server `options` name,
    /// seen by a short-lived probe client (false when none can be opened). Thread: control thread.
    static func isClientConnected(_ options: Options) -> Bool {
        var status = jack_status_t(rawValue: 0)
        let raw = JackNoStartServer.rawValue | (options.serverName != nil ? JackServerName.rawValue : 0)
        let opened: OpaquePointer? = options.serverName.withOptionalCString { server in
            audiograph_jack_client_open("audiograph-probe", jack_options_t(rawValue: raw), &status, server)
        }
        guard let probe = opened else { return false }
        defer { jack_client_close(probe) }
        guard let uuid = jack_get_uuid_for_client_name(probe, options.clientName) else { return false }
        jack_free(uuid)
        return true
    }

    /// Records the server's rate and period in `state`, sets the callbacks and registers the
    /// ports `in_1…`, `out_1…` (or the state's output names) of a client just opened (inactive).
    /// Closes the client on failure.
    /// - Returns: the ports' full names.
    /// - Throws: ``JACKDriverError/portRegistrationFailed(_:)``.
    static func prepare(_ client: OpaquePointer, named name: String, state: JACKRenderState) throws(JACKDriverError) -> ([String], [String]) {
        state.sampleRate.store(jack_get_sample_rate(client), ordering: .relaxed)
        state.bufferSize.store(jack_get_buffer_size(client), ordering: .relaxed)
        // Callbacks before ports and activation (jack.h: they may only be set while inactive).
        state.install(on: client)
        var inputNames: [String] = [], outputNames: [String] = []
        func register(_ short: String, flags: JackPortFlags) throws(JACKDriverError) -> OpaquePointer {
            guard let port = jack_port_register(client, short, JACK_DEFAULT_AUDIO_TYPE, UInt(flags.rawValue), 0) else {
                jack_client_close(client)
                throw .portRegistrationFailed("\(name):\(short)")
            }
            return port
        }
        for c in 0..<state.inputCount {
            state.inputPorts[c] = try register("in_\(c + 1)", flags: JackPortIsInput)
            inputNames.append("\(name):in_\(c + 1)")
        }
        for c in 0..<state.outputCount {
            let short = c < state.outputShortNames.count ? state.outputShortNames[c] : "out_\(c + 1)"
            state.outputPorts[c] = try register(short, flags: JackPortIsOutput)
            outputNames.append("\(name):\(short)")
        }
        return (inputNames, outputNames)
    }

    /// The longest client name jack2 accepts, in bytes: its `JACK_CLIENT_NAME_SIZE` is 64
    /// including the terminating NUL (measured on jack2 1.9.21, whose `jack_client_name_size()`
    /// reports one more).
    public static let maximumClientNameLength = 63

    /// The longest server name libjack takes, in bytes: jack2 copies it into buffers of
    /// `JACK_SERVER_NAME_SIZE` = 256 including the NUL, and libjack 1.9.21 aborts the process
    /// (a smashed stack) for names of 265 bytes or more. A server can serve far shorter names
    /// only (its socket path must fit 108 bytes: about 85 on this machine), but those fail cleanly.
    public static let maximumServerNameLength = 255

    /// The server name `options` would reach (its `serverName`, else `$JACK_DEFAULT_SERVER`)
    /// and why it cannot be passed to libjack, or nil when it can (nil too for no name: "default").
    /// Thread: any.
    static func problem(withServerOf options: Options) -> (String, String)? {
        let fromEnvironment = options.serverName == nil
        guard let name = options.serverName ?? environmentServer else { return nil }
        let origin = fromEnvironment ? "JACK_DEFAULT_SERVER" : "the server name"
        if name.isEmpty {
            return (name, fromEnvironment ? "JACK_DEFAULT_SERVER is set to nothing; name a server or unset it for \"default\""
                                          : "it is empty; name a server, or omit it for $JACK_DEFAULT_SERVER or \"default\"")
        }
        if name.utf8.count > maximumServerNameLength {
            return (name, "\(origin) has \(name.utf8.count) bytes; JACK allows at most \(maximumServerNameLength)")
        }
        return nil
    }

    /// Why JACK would refuse `name` as a client name, or nil when it is acceptable: 1…63 bytes,
    /// no `:` (it separates client and port in full port names).
    /// Thread: any.
    public static func problem(withClientName name: String) -> String? {
        if name.isEmpty { return "it is empty" }
        if name.utf8.count > maximumClientNameLength { return "JACK allows at most \(maximumClientNameLength) bytes, this has \(name.utf8.count)" }
        if name.utf8.contains(UInt8(ascii: ":")) { return "':' separates client and port names" }
        return nil
    }

    /// libjack prints its own diagnostics (several lines for a missing server, socket errors
    /// when the server dies) around ours, which already say what happened. They are silenced
    /// unless `AUDIOGRAPH_JACK_VERBOSE=1` is set, which prints them as `jack: …` lines.
    static func routeLibjackMessages() {
        if let verbose = getenv("AUDIOGRAPH_JACK_VERBOSE"), String(cString: verbose) == "1" {
            let printer: @convention(c) (UnsafePointer<CChar>?) -> Void = { message in
                guard let message else { return }
                let line = "jack: " + String(cString: message) + "\n"
                _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            }
            jack_set_error_function(printer)
            jack_set_info_function(printer)
        } else {
            jack_set_error_function { _ in }
            jack_set_info_function { _ in }
        }
    }

    private static var environmentServer: String? {
        guard let value = getenv("JACK_DEFAULT_SERVER") else { return nil }
        return String(cString: value)
    }

    /// The server's sample rate in Hz (updated by the sample-rate callback). Thread: any.
    public var sampleRate: Int { Int(state.sampleRate.load(ordering: .relaxed)) }
    /// Whether the server's rate differs from the rate the graph was configured for: the
    /// sample-rate callback stored a new rate and ``followSampleRate()`` has not run yet.
    /// Thread: any.
    public var sampleRateChanged: Bool {
        Double(sampleRate) != io.deviceOutputFormat.sampleRate
    }

    /// Reconfigures the graph for the server's current sample rate after a change: the graph
    /// stops (the process callback renders silence meanwhile, it never waits), the IO unit's
    /// device sides take the new rate, formats the application never set follow it, formats
    /// it did set are converted from then on (or, with ``Options/setFormatsFollowServerRate``,
    /// those set at the old server rate move to the new one), parameters whose bound moved with
    /// the rate (a cutoff above the new rate/2) are clamped, and the graph initializes and starts again. A
    /// main loop calls it when ``sampleRateChanged`` becomes true (graphthru polls it).
    /// Does nothing when the rate did not change.
    /// - Throws: ``JACKDriverError/graph(_:)`` with the code when the graph cannot run at the new
    ///   rate (a conversion libsamplerate cannot do); the graph is then left uninitialized.
    /// - Thread: control thread (never from a JACK callback).
    public func followSampleRate() throws(JACKDriverError) {
        guard sampleRateChanged else { return }
        let wasRunning = graph.isRunning
        do {
            try reconfigureGraphForServerRate()
            if wasRunning { try graph.start() }
        } catch {
            throw .graph(error)
        }
        recomputeLatency()
    }

    /// Uninitializes the graph, moves the formats set at the old rate when
    /// ``Options/setFormatsFollowServerRate`` says so, sets the IO unit's device sides to the
    /// server's rate and initializes again (the graph is left stopped). Thread: control thread.
    func reconfigureGraphForServerRate() throws(AudioUnitError) {
        try graph.uninitialize()
        if options.setFormatsFollowServerRate {
            try graph.moveSetFormats(from: io.deviceOutputFormat.sampleRate, to: Double(sampleRate))
        }
        try io.configureDevice(inputChannels: io.deviceInputFormat.channelsPerFrame,
                               outputChannels: io.deviceOutputFormat.channelsPerFrame,
                               sampleRate: Double(sampleRate))
        try graph.initialize()
    }

    /// Stores a sample rate as the sample-rate callback would (package-internal: jack2 changes
    /// rates only by restarting the server, so tests drive ``followSampleRate()`` this way).
    package func recordSampleRateForTesting(_ rate: Int) {
        state.sampleRate.store(UInt32(rate), ordering: .relaxed)
    }

    /// The server's period in frames (updated by the buffer-size callback). Thread: any.
    public var bufferSize: Int { Int(state.bufferSize.load(ordering: .relaxed)) }

    /// Asks the server for a new period (`jack_set_buffer_size`): the analogue of
    /// `AVAudioSession.setPreferredIOBufferDuration` (duration = frames / ``sampleRate``), except
    /// that a JACK period is the whole server's: every client's period changes, as with
    /// `jack_bufsize`. The graph needs nothing reallocated: it renders any period as slices of at
    /// most its MaximumFramesPerSlice. Returns once the server has applied it (``bufferSize``
    /// then reads the new value).
    /// - Parameter frames: a power of two, 16…8192.
    /// - Throws: ``JACKDriverError/invalidBufferSize(_:)`` (nothing is asked),
    ///   ``JACKDriverError/bufferSizeRefused(frames:code:)`` (the period stays as it was),
    ///   ``JACKDriverError/serverShutDown(reason:)``.
    /// - Thread: control thread (never from a JACK callback).
    public func setBufferSize(_ frames: Int) throws(JACKDriverError) {
        guard (16...8192).contains(frames), frames & (frames - 1) == 0 else { throw .invalidBufferSize(frames) }
        guard let client, !isShutDown else { throw .serverShutDown(reason: shutdownReason) }
        let code = jack_set_buffer_size(client, jack_nframes_t(frames))
        guard code == 0 else { throw .bufferSizeRefused(frames: frames, code: code) }
        // jack2 applies the change before it answers; the callback may still be on its way.
        state.bufferSize.store(jack_get_buffer_size(client), ordering: .relaxed)
        guard bufferSize == frames else { throw .bufferSizeRefused(frames: frames, code: 0) }
    }
    /// xruns the server reported since the client opened. Thread: any.
    public var xrunCount: UInt64 { state.xruns.load(ordering: .relaxed) }
    /// The graph's sample time (`AudioGraph.sampleTime`, frames) when each of the first 64
    /// xruns was reported, in order: where the audio around it may have a gap or a repeat.
    /// Thread: any.
    public var xrunSampleTimes: [UInt64] {
        (0..<Int(min(xrunCount, UInt64(JACKRenderState.xrunTimeCapacity)))).map { state.xrunTimes[$0].load(ordering: .acquiring) }
    }
    /// Process cycles run since the client opened. Thread: any.
    public var processCycleCount: UInt64 { state.cycles.load(ordering: .relaxed) }
    /// The server's DSP load in percent (`jack_cpu_load`), 0 when closed. Thread: control thread.
    public var cpuLoad: Float {
        guard let client, !isShutDown else { return 0 }
        return jack_cpu_load(client)
    }
    /// Whether the server shut down or dropped this client; ``close()`` it then, or
    /// ``reconnect()`` once a server runs again. Thread: any.
    public var isShutDown: Bool { state.shutDown.load(ordering: .acquiring) }
    /// A file descriptor that becomes readable when the server shuts down or drops the client,
    /// for `poll`-based main loops that would otherwise wake up to check ``isShutDown``. It is
    /// ``notificationFileDescriptor``: it also becomes readable for a new rate, period or
    /// freewheel mode, and ``dispatchNotifications()`` empties it.
    /// -1 if the pipe could not be made. Owned by the driver. Thread: any.
    public var shutdownFileDescriptor: Int32 { state.shutdownPipe.read }
    /// The server's reason for the shutdown, empty before one. Thread: any (after ``isShutDown``).
    public var shutdownReason: String { isShutDown ? String(cString: state.shutdownReason) : "" }
    /// The name of the server this client joined: the one asked for, else
    /// `$JACK_DEFAULT_SERVER`, else "default" (libjack's own order).
    public let serverName: String

    /// Initializes the graph if needed, starts it, and activates the client: the process
    /// callback begins pulling the graph.
    /// - Throws: ``JACKDriverError/graph(_:)`` when the graph cannot initialize (its code),
    ///   ``JACKDriverError/activationFailed``, ``JACKDriverError/serverShutDown(reason:)``.
    /// - Thread: control thread.
    public func start() throws(JACKDriverError) {
        guard let client, !isShutDown else { throw .serverShutDown(reason: shutdownReason) }
        do {
            try graph.initialize()
            try graph.start()
        } catch {
            throw .graph(error)
        }
        guard isActive || jack_activate(client) == 0 else {
            graph.stop()
            throw .activationFailed
        }
        isActive = true
    }

    /// Asks JACK to recompute its latencies, so the ports report the graph's current latency
    /// (`AudioGraph.renderLatency`: conversions and units' processing). JACK does this by
    /// itself whenever connections change; call it after an `AudioGraph.update()` that changed
    /// the latency (a resampling conversion or a unit with latency added or removed). No-op
    /// when the client is not active.
    /// - Thread: control thread (never from a JACK callback).
    public func recomputeLatency() {
        guard let client, isActive, !isShutDown else { return }
        _ = jack_recompute_total_latencies(client)
    }

    /// Stops the graph, deactivates and closes the client. Safe to call twice, and after a
    /// server shutdown. The graph stays initialized. Pretty names this client set on its own
    /// ports are removed first (JACK's metadata store outlives the ports).
    /// - Thread: control thread (never from a JACK callback).
    public func close() {
        guard let client else { return }
        removeOwnPrettyNames(client)
        self.client = nil
        graph.stop()
        if isActive && !isShutDown { jack_deactivate(client) }
        isActive = false
        if isShutDown && !processThreadEnded(within: 2) {
            // libjack's process thread is still on its way out of a dead server (its error path
            // asks the server to deactivate it, holding the channel's lock): closing now cancels
            // it with that lock held, and the close then waits on the lock forever (caught with
            // gdb under load, jack2 1.9.21). Left open instead: a dead client's memory, no hang.
            return
        }
        jack_client_close(client)
    }

    /// Whether libjack's process thread for this client has ended (or never started), waiting
    /// up to `seconds` for it (/proc/self/task/TID, polled every 10 ms).
    private func processThreadEnded(within seconds: Double) -> Bool {
        let tid = state.processThreadID.load(ordering: .relaxed)
        guard tid != 0 else { return true }
        var waited = 0.0
        while access("/proc/self/task/\(tid)", F_OK) == 0 {
            guard waited < seconds else { return false }
            usleep(10_000)
            waited += 0.01
        }
        return true
    }
}

extension Optional where Wrapped == String {
    /// Calls `body` with the string as a C string, or with NULL when nil (libjack's optional names).
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let s): return s.withCString { body($0) }
        case .none: return body(nil)
        }
    }
}

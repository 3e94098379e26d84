import AudioGraph
import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// State the JACK threads touch. Atomics and preallocated pointer arrays only; it outlives the
/// client (released after `jack_client_close` returns).
final class JACKRenderState: @unchecked Sendable {
    let graph: GraphRenderContext
    let inputCount: Int
    let outputCount: Int
    let inputPorts: UnsafeMutablePointer<OpaquePointer?>
    let outputPorts: UnsafeMutablePointer<OpaquePointer?>
    let inputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let outputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let xruns = Atomic<UInt64>(0)
    let cycles = Atomic<UInt64>(0)
    let bufferSize = Atomic<UInt32>(0)
    let sampleRate = Atomic<UInt32>(0)
    let shutDown = Atomic<Bool>(false)
    /// Becomes readable when the server shuts down (a self-pipe: write(2) is safe in the callback).
    let shutdownPipe: (read: Int32, write: Int32)
    /// Reason text from the shutdown callback, NUL-terminated, copied without allocating.
    let shutdownReason: UnsafeMutablePointer<CChar>
    static let reasonCapacity = 256

    init(graph: GraphRenderContext, inputCount: Int, outputCount: Int) {
        self.graph = graph
        self.inputCount = inputCount
        self.outputCount = outputCount
        inputPorts = .allocate(capacity: max(1, inputCount))
        inputPorts.initialize(repeating: nil, count: max(1, inputCount))
        outputPorts = .allocate(capacity: max(1, outputCount))
        outputPorts.initialize(repeating: nil, count: max(1, outputCount))
        // Placeholder pointers; replaced by jack_port_get_buffer every cycle before use.
        let dummy = UnsafeMutablePointer<Float>.allocate(capacity: 1)
        dummy.initialize(to: 0)
        placeholder = dummy
        inputBuffers = .allocate(capacity: max(1, inputCount))
        inputBuffers.initialize(repeating: dummy, count: max(1, inputCount))
        outputBuffers = .allocate(capacity: max(1, outputCount))
        outputBuffers.initialize(repeating: dummy, count: max(1, outputCount))
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        } else {
            fds = [-1, -1]
        }
        shutdownPipe = (fds[0], fds[1])
        shutdownReason = .allocate(capacity: JACKRenderState.reasonCapacity)
        shutdownReason.initialize(repeating: 0, count: JACKRenderState.reasonCapacity)
    }
    private let placeholder: UnsafeMutablePointer<Float>

    deinit {
        inputPorts.deallocate(); outputPorts.deallocate()
        inputBuffers.deallocate(); outputBuffers.deallocate()
        shutdownReason.deallocate(); placeholder.deallocate()
        if shutdownPipe.read >= 0 { Glibc.close(shutdownPipe.read); Glibc.close(shutdownPipe.write) }
    }
}

/// The JACK process callback body: fetch port buffers, pull the graph. Never fails: returns 0.
/// Thread: JACK's real-time process thread. `@_noLocks`; the only escape is
/// `jack_port_get_buffer` (real-time safe per jack.h: it is meant to be called every cycle).
/// The call into the core's `GraphRenderContext.render` is checked too: that function is
/// `@_noLocks` in its own module.
@_noLocks
func audiographJACKProcess(_ frames: jack_nframes_t, _ arg: UnsafeMutableRawPointer) -> Int32 {
    Unmanaged<JACKRenderState>.fromOpaque(arg)._withUnsafeGuaranteedRef { s in
        let n = Int(frames)
        // jack_port_get_buffer does not fail for a registered port; if it ever did, skip the
        // cycle (JACK then plays what its buffers hold) rather than trap on the audio thread.
        for c in 0..<s.inputCount {
            let port = s.inputPorts[c]
            guard let buffer = _unsafePerformance({ jack_port_get_buffer(port, frames) }) else { return }
            s.inputBuffers[c] = buffer.assumingMemoryBound(to: Float.self)
        }
        for c in 0..<s.outputCount {
            let port = s.outputPorts[c]
            guard let buffer = _unsafePerformance({ jack_port_get_buffer(port, frames) }) else { return }
            s.outputBuffers[c] = buffer.assumingMemoryBound(to: Float.self)
        }
        let graph = s.graph
        let input = UnsafePointer(s.inputBuffers), inputCount = s.inputCount
        let output = UnsafePointer(s.outputBuffers), outputCount = s.outputCount
        graph.render(frameCount: n, input: input, inputChannelCount: inputCount,
                     output: output, outputChannelCount: outputCount)
        s.cycles.store(s.cycles.load(ordering: .relaxed) &+ 1, ordering: .relaxed)  // single writer
    }
    return 0
}

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
/// Server shutdown sets a flag (``isShutDown``) and writes a byte to ``shutdownFileDescriptor``,
/// nothing else; xruns are counted; a period
/// change needs no reallocation, because the graph renders long periods as several slices.
///
/// Thread: control thread, one at a time; the counters are readable from any thread.
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

    private var client: OpaquePointer?
    private let state: JACKRenderState
    /// The graph's IO unit, configured to the server here and again by ``followSampleRate()``.
    private let io: IOUnit
    private var isActive = false
    private var prettyNamedPorts: [jack_uuid_t] = []

    /// Opens a JACK client for `graph`, sets its callbacks, registers its ports and configures the
    /// graph's `IOUnit` to the server's sample rate and the port counts. Does not activate.
    /// - Parameters:
    ///   - graph: an uninitialized graph with one `IOUnit` node.
    ///   - options: name, server and channel counts.
    /// - Throws: ``JACKDriverError/serverNotRunning(server:)``, ``JACKDriverError/invalidClientName(_:reason:)``,
    ///   ``JACKDriverError/clientOpenFailed(status:)``, ``JACKDriverError/invalidChannelCount(_:)``,
    ///   ``JACKDriverError/portRegistrationFailed(_:)``, ``JACKDriverError/graph(_:)``
    ///   (no IO node: outputNodeErr; initialized with other formats: initialized). On failure the
    ///   client is closed again.
    /// - Thread: control thread; allocates.
    public init(graph: AudioGraph, options: Options = Options()) throws(JACKDriverError) {
        let name = options.clientName
        if let reason = JACKDriver.problem(withClientName: name) { throw .invalidClientName(name, reason: reason) }
        if let server = options.serverName, server.isEmpty { throw .serverNotRunning(server: server) }
        for n in [options.inputChannels, options.outputChannels] where n < 1 || n > 64 { throw .invalidChannelCount(n) }
        guard let io = graph.ioUnit else {
            throw .graph(AudioUnitError.outputNodeErr.rawValue)
        }

        var raw = JackNullOption.rawValue
        if !options.startServer { raw |= JackNoStartServer.rawValue }
        if options.useExactName { raw |= JackUseExactName.rawValue }
        if options.serverName != nil { raw |= JackServerName.rawValue }
        JACKDriver.routeLibjackMessages()
        var status = jack_status_t(rawValue: 0)
        let opened: OpaquePointer? = options.serverName.withOptionalCString { server in
            audiograph_jack_client_open(name, jack_options_t(rawValue: raw), &status, server)
        }
        guard let client = opened else {
            // JackServerFailed: nothing answered. JackServerError alone: a server answered and refused.
            if status.rawValue & JackServerFailed.rawValue != 0 {
                throw .serverNotRunning(server: options.serverName ?? Self.environmentServer)
            }
            if status.rawValue & JackNameNotUnique.rawValue != 0 {
                throw .invalidClientName(name, reason: "a client of that name is already connected")
            }
            throw .clientOpenFailed(status: status.rawValue)
        }
        let actualName = String(cString: jack_get_client_name(client))
        let rate = jack_get_sample_rate(client)
        do {
            try io.configureDevice(inputChannels: UInt32(options.inputChannels), outputChannels: UInt32(options.outputChannels),
                                   sampleRate: Double(rate))
        } catch {
            jack_client_close(client)
            throw .graph(error.rawValue)
        }

        let state = JACKRenderState(graph: graph.renderContext, inputCount: options.inputChannels, outputCount: options.outputChannels)
        state.sampleRate.store(rate, ordering: .relaxed)
        state.bufferSize.store(jack_get_buffer_size(client), ordering: .relaxed)
        let arg = Unmanaged.passUnretained(state).toOpaque()

        // Callbacks before ports and activation (jack.h: they may only be set while inactive).
        jack_set_process_callback(client, { frames, arg in
            guard let arg else { return 0 }
            return audiographJACKProcess(frames, arg)
        }, arg)
        jack_set_xrun_callback(client, { arg in
            guard let arg else { return 0 }
            Unmanaged<JACKRenderState>.fromOpaque(arg).takeUnretainedValue().xruns.add(1, ordering: .relaxed)
            return 0
        }, arg)
        jack_set_buffer_size_callback(client, { frames, arg in
            // The graph renders any period as slices of at most MaximumFramesPerSlice: nothing to reallocate.
            guard let arg else { return 0 }
            Unmanaged<JACKRenderState>.fromOpaque(arg).takeUnretainedValue().bufferSize.store(frames, ordering: .relaxed)
            return 0
        }, arg)
        jack_set_sample_rate_callback(client, { rate, arg in
            guard let arg else { return 0 }
            Unmanaged<JACKRenderState>.fromOpaque(arg).takeUnretainedValue().sampleRate.store(rate, ordering: .relaxed)
            return 0
        }, arg)
        // Latency (jack.h, jack_set_latency_callback): each output reports the largest latency
        // of the inputs it comes from plus the delay the graph's format conversions add (its
        // resamplers' FIFOs), and each input the largest of the outputs it goes to plus the
        // same; `jack_lsp -l` then shows the true path latency.
        jack_set_latency_callback(client, { mode, arg in
            guard let arg else { return }
            let s = Unmanaged<JACKRenderState>.fromOpaque(arg).takeUnretainedValue()
            let capture = mode == JackCaptureLatency
            let (from, fromCount, to, toCount) = capture
                ? (s.inputPorts, s.inputCount, s.outputPorts, s.outputCount)
                : (s.outputPorts, s.outputCount, s.inputPorts, s.inputCount)
            var range = jack_latency_range_t(min: 0, max: 0)
            var first = true
            for i in 0..<fromCount {
                var r = jack_latency_range_t()
                jack_port_get_latency_range(from[i], mode, &r)
                if first { range = r; first = false } else { range.min = min(range.min, r.min); range.max = max(range.max, r.max) }
            }
            let extra = jack_nframes_t(s.graph.latencyFrames)
            range.min += extra
            range.max += extra
            for i in 0..<toCount { jack_port_set_latency_range(to[i], mode, &range) }
        }, arg)
        // Like a signal handler: record and return; the control thread closes the client.
        jack_on_info_shutdown(client, { _, reason, arg in
            guard let arg else { return }
            let s = Unmanaged<JACKRenderState>.fromOpaque(arg).takeUnretainedValue()
            var i = 0
            if let reason {
                while i < JACKRenderState.reasonCapacity - 1, reason[i] != 0 { s.shutdownReason[i] = reason[i]; i += 1 }
            }
            s.shutdownReason[i] = 0
            s.shutDown.store(true, ordering: .releasing)
            var byte: UInt8 = 1
            _ = write(s.shutdownPipe.write, &byte, 1)
        }, arg)

        var inputNames: [String] = [], outputNames: [String] = []
        func register(_ short: String, flags: JackPortFlags) throws(JACKDriverError) -> OpaquePointer {
            guard let port = jack_port_register(client, short, JACK_DEFAULT_AUDIO_TYPE, UInt(flags.rawValue), 0) else {
                jack_client_close(client)
                throw .portRegistrationFailed("\(actualName):\(short)")
            }
            return port
        }
        for c in 0..<options.inputChannels {
            state.inputPorts[c] = try register("in_\(c + 1)", flags: JackPortIsInput)
            inputNames.append("\(actualName):in_\(c + 1)")
        }
        for c in 0..<options.outputChannels {
            state.outputPorts[c] = try register("out_\(c + 1)", flags: JackPortIsOutput)
            outputNames.append("\(actualName):out_\(c + 1)")
        }

        self.graph = graph
        self.io = io
        self.serverName = options.serverName ?? Self.environmentServer ?? "default"
        self.client = client
        self.state = state
        self.clientName = actualName
        self.inputPortNames = inputNames
        self.outputPortNames = outputNames
    }

    deinit { close() }

    /// The longest client name jack2 accepts, in bytes: its `JACK_CLIENT_NAME_SIZE` is 64
    /// including the terminating NUL (measured on jack2 1.9.21, whose `jack_client_name_size()`
    /// reports one more).
    public static let maximumClientNameLength = 63

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
    /// it did set are converted from then on, and the graph initializes and starts again. A
    /// main loop calls it when ``sampleRateChanged`` becomes true (graphthru polls it).
    /// Does nothing when the rate did not change.
    /// - Throws: ``JACKDriverError/graph(_:)`` with the code when the graph cannot run at the new
    ///   rate (a conversion libsamplerate cannot do); the graph is then left uninitialized.
    /// - Thread: control thread (never from a JACK callback).
    public func followSampleRate() throws(JACKDriverError) {
        guard sampleRateChanged else { return }
        let wasRunning = graph.isRunning
        do {
            try graph.uninitialize()
            try io.configureDevice(inputChannels: io.deviceInputFormat.channelsPerFrame,
                                   outputChannels: io.deviceOutputFormat.channelsPerFrame,
                                   sampleRate: Double(sampleRate))
            try graph.initialize()
            if wasRunning { try graph.start() }
        } catch {
            throw .graph(error.rawValue)
        }
        recomputeLatency()
    }

    /// Stores a sample rate as the sample-rate callback would (package-internal: jack2 changes
    /// rates only by restarting the server, so tests drive ``followSampleRate()`` this way).
    package func recordSampleRateForTesting(_ rate: Int) {
        state.sampleRate.store(UInt32(rate), ordering: .relaxed)
    }

    /// The server's period in frames (updated by the buffer-size callback). Thread: any.
    public var bufferSize: Int { Int(state.bufferSize.load(ordering: .relaxed)) }
    /// xruns the server reported since the client opened. Thread: any.
    public var xrunCount: UInt64 { state.xruns.load(ordering: .relaxed) }
    /// Process cycles run since the client opened. Thread: any.
    public var processCycleCount: UInt64 { state.cycles.load(ordering: .relaxed) }
    /// The server's DSP load in percent (`jack_cpu_load`), 0 when closed. Thread: control thread.
    public var cpuLoad: Float {
        guard let client, !isShutDown else { return 0 }
        return jack_cpu_load(client)
    }
    /// Whether the server shut down or dropped this client; ``close()`` it then. Thread: any.
    public var isShutDown: Bool { state.shutDown.load(ordering: .acquiring) }
    /// A file descriptor that becomes readable when the server shuts down or drops the client,
    /// for `poll`-based main loops that would otherwise wake up to check ``isShutDown``.
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
            throw .graph(error.rawValue)
        }
        guard isActive || jack_activate(client) == 0 else {
            graph.stop()
            throw .activationFailed
        }
        isActive = true
    }

    /// Asks JACK to recompute its latencies, so the ports report the graph's current
    /// conversion latency (`AudioGraph.renderLatency`). JACK does this by itself whenever
    /// connections change; call it after an `AudioGraph.update()` that added or removed a
    /// resampling conversion. No-op when the client is not active.
    /// - Thread: control thread (never from a JACK callback).
    public func recomputeLatency() {
        guard let client, isActive, !isShutDown else { return }
        _ = jack_recompute_total_latencies(client)
    }

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
        guard let list = jack_get_ports(client, nil, JACK_DEFAULT_AUDIO_TYPE, UInt(flags)) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var names: [String] = []
        var i = 0
        while let name = list[i] { names.append(String(cString: name)); i += 1 }
        return names
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

    // MARK: - Patchbay

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
            var found: [String] = []
            if let list = jack_get_ports(client, spec, JACK_DEFAULT_AUDIO_TYPE, UInt(flags)) {
                var i = 0
                while let name = list[i] { found.append(String(cString: name)); i += 1 }
                jack_free(UnsafeMutableRawPointer(mutating: list))
            }
            found.removeAll { $0.hasPrefix(clientName + ":") }
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

    /// Stops the graph, deactivates and closes the client. Safe to call twice, and after a
    /// server shutdown. The graph stays initialized. Pretty names this client set on its own
    /// ports are removed first (JACK's metadata store outlives the ports).
    /// - Thread: control thread (never from a JACK callback).
    public func close() {
        guard let client else { return }
        self.client = nil
        if !isShutDown { for uuid in prettyNamedPorts { jack_remove_property(client, uuid, audiograph_jack_pretty_name_key()) } }
        prettyNamedPorts = []
        graph.stop()
        if isActive && !isShutDown { jack_deactivate(client) }
        isActive = false
        jack_client_close(client)
    }
}

extension Optional where Wrapped == String {
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let s): return s.withCString { body($0) }
        case .none: return body(nil)
        }
    }
}

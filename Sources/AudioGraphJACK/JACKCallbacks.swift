// AudioGraphJACK: the JACK callbacks — the state JACK's threads share with the driver, and the named functions libjack calls.
import AudioGraph
import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// State the JACK threads touch. Atomics and preallocated pointer arrays only; it outlives the
/// client (released after `jack_client_close` returns). The port handles are written before
/// activation; the buffer arrays only by the process thread; `shutdownReason` only by the
/// shutdown callback, before its releasing store to `shutDown`.
// SAFETY: buffers live from init to deinit (after the client closed); shared fields are atomics or published by shutDown.
final class JACKRenderState: @unchecked Sendable {
    let graph: GraphRenderContext
    let inputCount: Int
    let outputCount: Int
    /// How many of the first input and output ports the latency callback reads (the rest are
    /// set, not read): ``JACKDriver/Options/latencyPorts``.
    let latencyInputCount: Int
    /// The graph's voice-processing IO unit, if it has one: the latency callback gives it the
    /// capture and playback latencies (its echo canceller's delay hint). Set before activation.
    var voiceIO: VoiceProcessingIOUnit?
    /// The output ports' short names when not `out_1…` (``JACKDriver/Options/outputPortNames``).
    var outputShortNames: [String] = []
    let latencyOutputCount: Int
    let inputPorts: UnsafeMutablePointer<OpaquePointer?>
    let outputPorts: UnsafeMutablePointer<OpaquePointer?>
    let inputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let outputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let xruns = Atomic<UInt64>(0)
    /// The graph's sample time at each of the first ``xrunTimeCapacity`` xruns.
    let xrunTimes: UnsafeMutablePointer<Atomic<UInt64>>
    static let xrunTimeCapacity = 64
    let cycles = Atomic<UInt64>(0)
    let bufferSize = Atomic<UInt32>(0)
    let sampleRate = Atomic<UInt32>(0)
    let shutDown = Atomic<Bool>(false)
    /// The kernel id of the client's process thread (libjack's), from the thread-init callback; 0 before.
    let processThreadID = Atomic<Int32>(0)
    /// Whether the server is freewheeling (the freewheel callback's last word).
    let freewheeling = Atomic<Bool>(false)
    /// Whether a connection or a port somewhere on the server came or went since the control
    /// thread last looked (the port-connect and port-registration callbacks set it).
    let patchbayChanged = Atomic<Bool>(false)
    /// Ports unregistered on the server so far (any client's): a connection to a physical port
    /// that vanished across one is awaited, not forgotten (the control thread compares).
    let portsUnregistered = Atomic<UInt64>(0)
    /// When the shutdown callback ran, CLOCK_MONOTONIC nanoseconds; 0 before.
    let shutdownTime = Atomic<UInt64>(0)
    /// Becomes readable when a notification is due: the server shut down, the period, rate or
    /// freewheel mode changed, or a port or connection came or went (a self-pipe: write(2) is safe in a callback). The control thread
    /// drains it (``drainNotifications()``).
    let shutdownPipe: (read: Int32, write: Int32)
    /// Reason text from the shutdown callback, NUL-terminated, copied without allocating.
    let shutdownReason: UnsafeMutablePointer<CChar>
    static let reasonCapacity = 256

    init(graph: GraphRenderContext, inputCount: Int, outputCount: Int, latencyPorts: Int? = nil) {
        self.graph = graph
        self.inputCount = inputCount
        self.outputCount = outputCount
        latencyInputCount = min(inputCount, latencyPorts ?? inputCount)
        latencyOutputCount = min(outputCount, latencyPorts ?? outputCount)
        xrunTimes = .allocate(capacity: JACKRenderState.xrunTimeCapacity)
        for k in 0..<JACKRenderState.xrunTimeCapacity { (xrunTimes + k).initialize(to: Atomic(0)) }
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
        xrunTimes.deinitialize(count: JACKRenderState.xrunTimeCapacity)
        xrunTimes.deallocate()
        inputPorts.deallocate(); outputPorts.deallocate()
        inputBuffers.deallocate(); outputBuffers.deallocate()
        shutdownReason.deallocate(); placeholder.deallocate()
        if shutdownPipe.read >= 0 { Glibc.close(shutdownPipe.read); Glibc.close(shutdownPipe.write) }
    }

    /// Wakes the control thread: one byte into the notification pipe (non-blocking; a full
    /// pipe already wakes it). Thread: any, JACK's callbacks included.
    func notify() {
        var byte: UInt8 = 1
        _ = write(shutdownPipe.write, &byte, 1)
    }

    /// Reads every byte the pipe holds, so that `poll` sleeps again until the next notification.
    /// Thread: control thread.
    func drainNotifications() {
        guard shutdownPipe.read >= 0 else { return }
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(shutdownPipe.read, &bytes, bytes.count) > 0 {}
    }

    /// Forgets the last client's shutdown before a new client is opened on this state (the old
    /// one is closed: no callback of it can run any more). Thread: control thread.
    func resetAfterShutdown() {
        shutdownReason[0] = 0
        shutdownTime.store(0, ordering: .relaxed)
        freewheeling.store(false, ordering: .relaxed)
        shutDown.store(false, ordering: .releasing)
        processThreadID.store(0, ordering: .relaxed)
        drainNotifications()
    }

    /// Sets every callback on `client`, with `self` (unretained) as their argument. jack.h: only
    /// while the client is inactive, so before its ports are used and before `jack_activate`.
    /// - Thread: control thread.
    func install(on client: OpaquePointer) {
        let arg = Unmanaged.passUnretained(self).toOpaque()
        jack_set_process_callback(client, audiographJACKProcess, arg)
        jack_set_xrun_callback(client, audiographJACKXrun, arg)
        jack_set_buffer_size_callback(client, audiographJACKBufferSize, arg)
        jack_set_sample_rate_callback(client, audiographJACKSampleRate, arg)
        jack_set_latency_callback(client, audiographJACKLatency, arg)
        jack_set_freewheel_callback(client, audiographJACKFreewheel, arg)
        jack_set_port_connect_callback(client, audiographJACKPortConnect, arg)
        jack_set_port_registration_callback(client, audiographJACKPortRegistration, arg)
        jack_on_info_shutdown(client, audiographJACKShutdown, arg)
        jack_set_thread_init_callback(client, audiographJACKThreadInit, arg)
    }
}

/// The state behind a callback's `arg`, without retaining it (the driver keeps it alive).
private func renderState(_ arg: UnsafeMutableRawPointer) -> JACKRenderState {
    Unmanaged<JACKRenderState>.fromOpaque(arg).takeUnretainedValue()
}

/// The JACK process callback: fetch port buffers, pull the graph. Never fails: returns 0.
/// Thread: JACK's real-time process thread. `@_noLocks`; the only escape is
/// `jack_port_get_buffer` (real-time safe per jack.h: it is meant to be called every cycle).
/// The call into the core's `GraphRenderContext.render` is checked too: that function is
/// `@_noLocks` in its own module.
@_noLocks
func audiographJACKProcess(_ frames: jack_nframes_t, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    guard let arg else { return 0 }
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

/// xrun callback: counts, and notes the graph's sample time of the first
/// ``JACKRenderState/xrunTimeCapacity``. Thread: a JACK thread.
func audiographJACKXrun(_ arg: UnsafeMutableRawPointer?) -> Int32 {
    guard let arg else { return 0 }
    let s = renderState(arg)
    let k = s.xruns.add(1, ordering: .acquiringAndReleasing).oldValue
    if k < UInt64(JACKRenderState.xrunTimeCapacity) { s.xrunTimes[Int(k)].store(s.graph.sampleTime, ordering: .releasing) }
    return 0
}

/// Buffer-size callback: records the new period. The graph renders any period as slices of at
/// most MaximumFramesPerSlice, so nothing is reallocated. Thread: a JACK thread.
func audiographJACKBufferSize(_ frames: jack_nframes_t, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    guard let arg else { return 0 }
    let s = renderState(arg)
    s.bufferSize.store(frames, ordering: .relaxed)
    s.notify()
    return 0
}

/// Sample-rate callback: records the rate only; the control thread's
/// `JACKDriver.followSampleRate()` reconfigures the graph. Thread: a JACK thread.
func audiographJACKSampleRate(_ rate: jack_nframes_t, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    guard let arg else { return 0 }
    let s = renderState(arg)
    s.sampleRate.store(rate, ordering: .relaxed)
    s.notify()
    return 0
}

/// Freewheel callback: records the mode and wakes the control thread. Thread: a JACK thread.
func audiographJACKFreewheel(_ starting: Int32, _ arg: UnsafeMutableRawPointer?) {
    guard let arg else { return }
    let s = renderState(arg)
    s.freewheeling.store(starting != 0, ordering: .relaxed)
    s.notify()
}

/// Port-connect callback: any connection on the server made or broken. Only flags it and wakes
/// the control thread, which notes this client's connections (restored after a reconnect).
/// Thread: JACK's notification thread.
func audiographJACKPortConnect(_ a: jack_port_id_t, _ b: jack_port_id_t, _ connect: Int32, _ arg: UnsafeMutableRawPointer?) {
    guard let arg else { return }
    let s = renderState(arg)
    s.patchbayChanged.store(true, ordering: .relaxed)
    s.notify()
}

/// Port-registration callback: a port registered or gone; a connection waiting for its port may
/// be made now (flagged for the control thread, as above). Thread: JACK's notification thread.
func audiographJACKPortRegistration(_ port: jack_port_id_t, _ registered: Int32, _ arg: UnsafeMutableRawPointer?) {
    guard let arg else { return }
    let s = renderState(arg)
    if registered == 0 { s.portsUnregistered.add(1, ordering: .relaxed) }
    s.patchbayChanged.store(true, ordering: .relaxed)
    s.notify()
}

/// Latency callback (jack.h, `jack_set_latency_callback`): each output reports the largest
/// latency of the inputs it comes from plus the delay the graph's format conversions add (its
/// resamplers' FIFOs), and each input the largest of the outputs it goes to plus the same;
/// `jack_lsp -l` then shows the true path latency. Only the first ``JACKDriver/Options/latencyPorts``
/// ports of a side are read, when set. Thread: a JACK thread.
func audiographJACKLatency(_ mode: jack_latency_callback_mode_t, _ arg: UnsafeMutableRawPointer?) {
    guard let arg else { return }
    let s = renderState(arg)
    let capture = mode == JackCaptureLatency
    let (from, fromCount, to, toCount) = capture
        ? (s.inputPorts, s.latencyInputCount, s.outputPorts, s.outputCount)
        : (s.outputPorts, s.latencyOutputCount, s.inputPorts, s.inputCount)
    var range = jack_latency_range_t(min: 0, max: 0)
    var first = true
    for i in 0..<fromCount {
        var r = jack_latency_range_t()
        jack_port_get_latency_range(from[i], mode, &r)
        if first { range = r; first = false } else { range.min = min(range.min, r.min); range.max = max(range.max, r.max) }
    }
    // The device side's own latency (before the graph's is added) is the echo path's.
    if let voice = s.voiceIO {
        if capture { voice.setDeviceLatency(captureFrames: Int(range.max)) } else { voice.setDeviceLatency(playbackFrames: Int(range.max)) }
    }
    let extra = jack_nframes_t(s.graph.latencyFrames)
    range.min += extra
    range.max += extra
    for i in 0..<toCount { jack_port_set_latency_range(to[i], mode, &range) }
}

/// Thread-init callback (jack.h, `jack_set_thread_init_callback`): runs once in the client's
/// process thread as it starts; notes the thread's kernel id. Thread: the JACK process thread.
func audiographJACKThreadInit(_ arg: UnsafeMutableRawPointer?) {
    guard let arg else { return }
    renderState(arg).processThreadID.store(Int32(audiograph_thread_id()), ordering: .relaxed)
}

/// Shutdown callback. Like a signal handler: copies the reason without allocating, notes the
/// time, sets the flag and writes a byte to the notification pipe; the control thread closes the client.
/// Thread: a JACK thread.
func audiographJACKShutdown(_ code: jack_status_t, _ reason: UnsafePointer<CChar>?, _ arg: UnsafeMutableRawPointer?) {
    guard let arg else { return }
    let s = renderState(arg)
    var i = 0
    if let reason {
        while i < JACKRenderState.reasonCapacity - 1, reason[i] != 0 { s.shutdownReason[i] = reason[i]; i += 1 }
    }
    s.shutdownReason[i] = 0
    s.shutdownTime.store(monotonicNanoseconds(), ordering: .relaxed)  // clock_gettime: async-signal-safe, as everything here
    s.shutDown.store(true, ordering: .releasing)
    s.notify()
}

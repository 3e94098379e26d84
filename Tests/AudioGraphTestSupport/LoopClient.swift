// Test support: a JACK client that plays a buffer over and over from its `out` port and counts the cycles it ran — the soak's endless speech.
import CJack
import Foundation
import Synchronization

/// What the loop client's process callback touches: the buffer, its position, counters.
// SAFETY (@unchecked Sendable): the buffer and port are set before activation and never change; the rest are atomics.
public final class LoopState: @unchecked Sendable {
    let samples: UnsafeMutableBufferPointer<Float>
    var port: OpaquePointer?
    let position = Atomic<Int>(0)
    /// Process cycles run since the client opened.
    public let cycles = Atomic<Int>(0)
    /// xruns the server reported to this client.
    public let xruns = Atomic<Int>(0)

    init(_ samples: [Float]) {
        self.samples = .allocate(capacity: max(1, samples.count))
        self.samples.initialize(repeating: 0)
        _ = self.samples.update(fromContentsOf: samples)
    }
    deinit { samples.deallocate() }
}

/// A client with one output port, `NAME:out`, playing `samples` in a loop from activation on.
public final class LoopClient {
    public let client: OpaquePointer
    public let state: LoopState
    public let name: String
    /// The full name of the output port.
    public var outPort: String { "\(name):out" }

    /// Opens the client on `server` and activates it; nil when no server answers.
    public init?(server: String, name: String, samples: [Float]) {
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue | JackUseExactName.rawValue)
        guard let client = audiograph_jack_client_open(name, options, &status, server) else { return nil }
        self.client = client
        self.name = String(cString: jack_get_client_name(client))
        state = LoopState(samples)
        state.port = jack_port_register(client, "out", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0)
        jack_set_process_callback(client, { frames, arg in
            let s = Unmanaged<LoopState>.fromOpaque(arg!).takeUnretainedValue()
            let out = jack_port_get_buffer(s.port, frames)!.assumingMemoryBound(to: Float.self)
            var position = s.position.load(ordering: .relaxed)
            for f in 0..<Int(frames) {
                out[f] = s.samples[position]
                position += 1
                if position == s.samples.count { position = 0 }
            }
            s.position.store(position, ordering: .relaxed)
            s.cycles.add(1, ordering: .relaxed)
            return 0
        }, Unmanaged.passUnretained(state).toOpaque())
        jack_set_xrun_callback(client, { arg in
            Unmanaged<LoopState>.fromOpaque(arg!).takeUnretainedValue().xruns.add(1, ordering: .relaxed)
            return 0
        }, Unmanaged.passUnretained(state).toOpaque())
        precondition(jack_activate(client) == 0, "jack_activate failed for the loop client")
    }

    deinit {
        jack_deactivate(client)
        jack_client_close(client)
    }
}

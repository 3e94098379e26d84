// AudioGraphJACK: the in-process server — a jackd started inside this process through libjackserver, for machines with none.
import CJack
import CJackServer
#if canImport(Glibc)
import Glibc
#endif

/// A JACK server running inside this process, started through libjackserver's control API
/// (`jack/control.h`: `jackctl_server_create2` → `jackctl_server_open` → `jackctl_server_start`),
/// for machines where no server runs yet. Clients of this or any other process join it by
/// its name, as they would join a `jackd`.
///
/// libjackserver is loaded at run time (`dlopen` with `RTLD_DEEPBIND`), not linked: it exports
/// the JACK client API too, and linked beside libjack it would take over ordinary clients
/// (measured on jack2 1.9.21: `jack_client_open` then crashes when no in-process server runs).
///
/// Stop it with ``stop()`` (also done on deinit) before the process exits: jack2 keeps a
/// machine-wide registry of 8 servers, and a server that is not stopped keeps its entry.
/// Thread: control thread, never a JACK callback.
// SAFETY: its one mutable field, the server handle, changes only in init and stop, on the control thread.
public final class JACKServer: @unchecked Sendable {
    /// The server's name, as clients give it (`-s NAME`, `$JACK_DEFAULT_SERVER`).
    public let name: String
    /// The backend driver, for example "dummy" (no sound card) or "alsa".
    public let driver: String
    private var handle = audiograph_jackserver()

    /// Starts a server.
    /// - Parameters:
    ///   - name: server name, 1…127 bytes; must not be in use on this machine.
    ///   - driver: a libjackserver driver name: "dummy" (default; needs no hardware), "alsa",
    ///     "loopback", "net", …
    ///   - sampleRate: Hz, set on drivers that have a "rate" parameter (dummy, alsa); 0 keeps
    ///     the driver's default.
    ///   - period: frames per period, set on drivers that have a "period" parameter; 0 keeps
    ///     the driver's default.
    ///   - realtime: ask for real-time scheduling (jack2 falls back to normal scheduling when
    ///     it is not permitted). Default: on for real drivers, off for "dummy".
    /// - Throws: ``JACKDriverError/serverStartFailed(name:reason:)`` — a server of that name
    ///   already runs, libjackserver is missing, no such driver, or the device is busy.
    /// - Thread: control thread; loads a library, starts the server's threads.
    public init(name: String, driver: String = "dummy", sampleRate: Int = 48_000, period: Int = 256,
                realtime: Bool? = nil) throws(JACKDriverError) {
        guard !name.isEmpty, name.utf8.count <= 127 else { throw .serverStartFailed(name: name, reason: "a server name is 1…127 bytes") }
        guard !driver.isEmpty else { throw .serverStartFailed(name: name, reason: "no driver named") }
        guard (0...768_000).contains(sampleRate), (0...8192).contains(period) else {
            throw .serverStartFailed(name: name, reason: "sample rate \(sampleRate) or period \(period) out of range")
        }
        if JACKServer.isRunning(name) {
            throw .serverStartFailed(name: name, reason: "a JACK server of that name is already running; join it instead")
        }
        self.name = name
        self.driver = driver
        var error = [CChar](repeating: 0, count: 512)
        let ok = audiograph_jackserver_start(&handle, name, driver, UInt32(sampleRate), UInt32(period),
                                             realtime ?? (driver != "dummy"), &error, error.count)
        guard ok else {
            throw .serverStartFailed(name: name, reason: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    /// Whether the server still runs (``stop()`` not yet called).
    public var isRunning: Bool { handle.server != nil }

    /// Stops, closes and destroys the server; its clients (in any process) are told it shut
    /// down. Safe to call twice. Thread: control thread, never a JACK callback.
    public func stop() {
        audiograph_jackserver_stop(&handle)
    }

    deinit { stop() }

    /// Whether a JACK server named `name` answers, found by opening and closing a client
    /// (never starting a server). Thread: control thread.
    public static func isRunning(_ name: String) -> Bool {
        JACKDriver.routeLibjackMessages()
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackServerName.rawValue)
        guard let client = audiograph_jack_client_open("audiograph-probe", options, &status, name) else { return false }
        jack_client_close(client)
        return true
    }
}

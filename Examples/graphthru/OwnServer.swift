// graphthru: its own JACK server (--start-server) — a child jackd started before the client and stopped after it.
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

/// graphthru's own JACK server (--start-server), a child jackd: started before the client,
/// stopped at exit whatever the path to exit, after the client has closed (and by its watchdog
/// if graphthru is killed).
enum OwnServer {
    // SAFETY: set once on the main thread before the atexit handler (which captures nothing) can read it.
    nonisolated(unsafe) private static var running: JACKServer?

    /// Starts the server `options` asks for (see `ServerStartOptions.start`) and points the
    /// client at it; nil when none is asked for. Exits 1 when it cannot start (a server of that
    /// name runs, jackd is missing, no such driver, no netjack2 master answered).
    static func start(for options: inout Options, tool: Tool) -> JACKServer? {
        guard let server = options.server.start(for: &options.client, tool: tool) else { return nil }
        running = server
        atexit { OwnServer.running?.stop() }
        return running
    }
}

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

    /// Starts the server `options` asks for, under the name asked for (else
    /// `$JACK_DEFAULT_SERVER`, else "default"), and points the client at it; nil when none is
    /// asked for. Exits 1 when it cannot start (a server of that name runs, jackd is missing, no such driver).
    static func start(for options: inout Options, tool: Tool) -> JACKServer? {
        guard let driver = options.startServer else { return nil }
        let environment = getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }
        let name = options.client.server ?? (environment?.isEmpty == false ? environment! : "default")
        // JACKServer's bound: a name jackd can bind a socket for. Past it, a bad option (2).
        if name.utf8.count > JACKServer.maximumNameLength {
            tool.fail("--start-server: a server name is 1…\(JACKServer.maximumNameLength) bytes; '\(name.prefix(40))…' has \(name.utf8.count)", status: ExitStatus.usage)
        }
        do {
            running = try JACKServer(name: name, driver: driver)
        } catch {
            tool.fail("\(error)")
        }
        options.client.server = name
        atexit { OwnServer.running?.stop() }
        return running
    }
}

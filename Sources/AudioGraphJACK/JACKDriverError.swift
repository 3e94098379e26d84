// AudioGraphJACK: the driver's errors — one case per way JACK or the graph can refuse, each described in one actionable line.
import AudioGraph
import CJack

/// Why the JACK driver could not do what was asked. Each case's description is one line a user
/// can act on.
public enum JACKDriverError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No JACK server is running (and starting one was not asked for). `server` is the name
    /// tried (nil: the default, or `$JACK_DEFAULT_SERVER`).
    case serverNotRunning(server: String?)
    /// The server name (from the options or `$JACK_DEFAULT_SERVER`) is empty or longer than
    /// ``JACKDriver/maximumServerNameLength`` (255) bytes; refused before libjack sees it.
    case invalidServerName(String, reason: String)
    /// `jack_client_open` failed for another reason; `status` is the `jack_status_t` bit set.
    case clientOpenFailed(status: UInt32)
    /// The client name is empty, too long for JACK (over ``JACKDriver/maximumClientNameLength`` = 63 bytes),
    /// contains `:`, or (with exact naming) is in use.
    case invalidClientName(String, reason: String)
    /// `jack_port_register` failed for this port name.
    case portRegistrationFailed(String)
    /// `jack_activate` failed.
    case activationFailed
    /// No port of that exact name exists.
    case portNotFound(String)
    /// `jack_connect` failed for this pair with this return code.
    case connectionFailed(source: String, destination: String, code: Int32)
    /// The channel count is outside 1…64.
    case invalidChannelCount(Int)
    /// The graph refused, with the graph's own error (for example `.outputNodeErr`: no IO node).
    case graph(AudioUnitError)
    /// The server shut down or dropped this client.
    case serverShutDown(reason: String)
    /// A server of our own (``JACKServer``, a child jackd) could not start; `reason` says why
    /// (often jackd's own last line).
    case serverStartFailed(name: String, reason: String)
    /// A port pattern is not a valid POSIX extended regular expression.
    case invalidPortPattern(String)
    /// Setting or reading JACK metadata (a pretty name) failed for this port.
    case metadataFailed(port: String)
    /// A requested period is not a power of two in 16…8192 frames.
    case invalidBufferSize(Int)
    /// The server refused a period it was asked for (`jack_set_buffer_size` returned `code`;
    /// some backends take only certain sizes, and every client must agree).
    case bufferSizeRefused(frames: Int, code: Int32)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .invalidServerName(let name, let reason):
            let shown = name.utf8.count > 40 ? String(name.prefix(40)) + "…" : name
            return "invalid JACK server name '\(shown)': \(reason)"
        case .serverNotRunning(let server):
            let name = server ?? "default"
            let flag = name == "default" ? "" : "-n \(name) "
            return "no JACK server named '\(name)' is running; start one with `jackd \(flag)-d alsa` (sound card) or `jackd --no-realtime \(flag)-d dummy -r 48000 -p 256` (no sound card)"
        case .clientOpenFailed(let status):
            let bits = JACKDriverError.statusNames.filter { status & $0.bit != 0 }.map(\.name).joined(separator: "|")
            let hint = status & JackServerError.rawValue != 0
                ? "a server still starting or shutting down answers so: try again, or check it with `jack_lsp`"
                : "if the name is taken and too long to make unique, choose another; otherwise check the server with `jack_lsp`"
            return "the JACK server refused the client (jack_status_t 0x\(String(status, radix: 16))\(bits.isEmpty ? "" : ": " + bits)); \(hint)"
        case .invalidClientName(let name, let reason):
            return "the JACK client name '\(name)' cannot be used: \(reason)"
        case .portRegistrationFailed(let name):
            return "could not register JACK port '\(name)'"
        case .activationFailed:
            return "could not activate the JACK client"
        case .portNotFound(let name):
            return "no JACK port named or matching '\(name)' (list them with `jack_lsp`)"
        case .connectionFailed(let source, let destination, let code):
            return "could not connect '\(source)' to '\(destination)' (jack_connect returned \(code)); check port directions with `jack_lsp -p`"
        case .invalidChannelCount(let n):
            return "channel count \(n) is outside 1…64"
        case .graph(let error):
            return "the graph refused to run: \(error)"
        case .serverShutDown(let reason):
            return "the JACK server shut down or dropped the client: \(reason)"
        case .serverStartFailed(let name, let reason):
            return "could not start a JACK server named '\(name)': \(reason)"
        case .invalidPortPattern(let pattern):
            return "'\(pattern)' is neither a JACK port name nor a valid regular expression (POSIX extended, as jack_lsp takes)"
        case .invalidBufferSize(let frames):
            return "a JACK period of \(frames) frames is not possible: ask for a power of two from 16 to 8192"
        case .bufferSizeRefused(let frames, let code):
            return "the JACK server refused a period of \(frames) frames (jack_set_buffer_size returned \(code)); the period is unchanged (check it with `jack_bufsize`)"
        case .metadataFailed(let port):
            return "could not set JACK metadata on '\(port)' (jack_set_property failed; the server's metadata store may be unavailable)"
        }
    }

    /// jack_status_t's bits as jack/types.h names them, for ``clientOpenFailed(status:)``'s text.
    static let statusNames: [(bit: UInt32, name: String)] = [
        (JackFailure.rawValue, "JackFailure"), (JackInvalidOption.rawValue, "JackInvalidOption"),
        (JackNameNotUnique.rawValue, "JackNameNotUnique"), (JackServerStarted.rawValue, "JackServerStarted"),
        (JackServerFailed.rawValue, "JackServerFailed"), (JackServerError.rawValue, "JackServerError"),
        (JackNoSuchClient.rawValue, "JackNoSuchClient"), (JackLoadFailure.rawValue, "JackLoadFailure"),
        (JackInitFailure.rawValue, "JackInitFailure"), (JackShmFailure.rawValue, "JackShmFailure"),
        (JackVersionError.rawValue, "JackVersionError"), (JackBackendError.rawValue, "JackBackendError"),
        (JackClientZombie.rawValue, "JackClientZombie"),
    ]
}

// graphthru: the options — the help text, the command line parsed and checked, and the JACK server (a child jackd) it may ask for.
import AudioGraph
import AudioGraphPlugins
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

let usage = """
usage: graphthru [options]

Monitors JACK input through an AudioGraph to JACK output, with a click-free mute.
  IO in → [plugins] → [low-pass] → mute gate → mixer → IO out

options:
  --name NAME         JACK client name (default: graphthru)
  --server NAME       JACK server to join (default: $JACK_DEFAULT_SERVER or "default")
\(ServerStartOptions.usage)
  --channels N        input and output channels, 1…64 (default: 2)
  --no-autoconnect    do not connect to the physical capture/playback ports
  --input PORT        connect PORT to the next in_k instead of physical capture (repeatable);
                      an exact port name, or a pattern as jack_lsp takes (system:capture_.*)
                      whose matches fill the next in_k in order
  --output PORT       connect the next out_k to PORT instead of physical playback (repeatable;
                      names or patterns as for --input)
  --reconnect         when the server goes away, wait for it (a try every 250 ms) and resume:
                      same client name and ports, the connections above made again, the graph
                      following the server's rate if it changed (without it: exit 1)
  --muted             start muted
  --lowpass HZ        start with a low-pass filter at HZ (10…sampleRate/2; `l` toggles it;
                      without this option `l` inserts one at 1000 Hz)
  --insert PLUGIN     put an LV2 plugin (its URI) or a LADSPA plugin (its label or unique ID,
                      from LADSPA_PATH) into the chain before the gate, at its defaults
                      (repeatable, in order; graphrun --list TEXT finds plugins); a plugin
                      that is unknown or cannot take --channels is refused (status 2)
  --meter dbfs|lufs   what the status shows of the levels (default: dbfs): dbfs, each input and
                      output channel's RMS and peak level in dBFS; lufs, the EBU R128 loudness
                      of the outputs (libebur128): momentary (0.4 s), short-term (3 s) and
                      integrated loudness in LUFS, loudness range in LU and true peak in dBTP,
                      counted from when it was switched on (`u` or `meter` switches live)
  --quiet             print nothing on stdout except answers to `status`, `dump` and `help`
  --json              print one JSON object per line on stdout instead (for scripts and
                      dashboards): a status object when anything changes, once a second and
                      as the answer to `status` (levels in dBFS, null for silence), and
                      start-up, notice, message and stop lines; errors stay text on stderr
  --dump              print the graph (nodes, formats, connections, conversions, state) once
                      it runs, like CAShow; the `dump` command prints it again
  --record FILE       record what goes to the outputs to FILE (.wav, .flac, .opus, .ogg, .mp3); at exit it prints
                      "recorded N frames to FILE (D dropped)"; a write that fails while
                      running (disk full) is reported at once and stops the recording (the
                      file keeps what was written) while monitoring goes on (the exit status
                      is then 1)
  --record-format F   int16, int24 or float32 (default: float32 for WAV, int24 for FLAC)
  --help              show this help

control:
  terminal keys:      m mute · l low-pass · + / - output volume ±3 dB · u dBFS/LUFS · ? help
                      · q quit
  otherwise (lines):  mute | unmute | toggle | lowpass [on|off|HZ] | volume [+|-|DB] | + | -
                      | meter [dbfs|lufs] | status | dump | help | quit
                      (end of input keeps running)
  SIGINT / SIGTERM / SIGHUP / SIGQUIT quit cleanly with status 0.

output: in a terminal, a status area redrawn in place (mute, volume, low-pass, xruns, non-finite
samples replaced with 0 (NaN/Inf at the inputs never reach the outputs or a recording), DSP load,
server, sample rate, period, meters, and errors and notices for 5 s each, all printed below it
at exit); otherwise plain lines such as `mute: on`, `volume: -3.0 dB`, `low-pass: on (1000 Hz)`,
`xruns: 2`, `non-finite: 512 sample(s) replaced with 0`, `meter: lufs`, and one `status: …`
line per `status` command, ending with `; loudness: momentary -23.0 LUFS, short-term -23.0 LUFS,
integrated -23.0 LUFS, range 0.0 LU, true peak -23.0 dBTP` when the meter is lufs (errors on
stderr); with --json, JSON lines such as
{"event":"status",…,"mute":false,"volumeDB":0.0,"lowpassHz":1000,"xruns":0,"dspLoad":2.6,
"nonFiniteSamples":0,"renderErrors":0,"input":[{"rmsDB":-12.1,"peakDB":null}],…,"meter":"lufs",
"loudness":{"momentaryLUFS":-23.0,"shortTermLUFS":-23.0,"integratedLUFS":-23.0,"rangeLU":0.0,
"truePeakDBTP":-23.0}} (loudness null with --meter dbfs; a reading null for silence).

exit status: 0 after quit or a signal (1 if a --record write failed: the file lacks audio); 1
when JACK fails (no server, server gone without --reconnect, port errors, a --start-server
that cannot start); 2 for bad options (including a name JACK cannot take, a --lowpass outside
10…rate/2, a --meter other than dbfs or lufs, or a --record file that cannot be created in
that format: refused before joining JACK).
"""

/// The JACK client name without --name. Under another name (--name, or the `graphthru-01` JACK
/// gives a second graphthru) the ports' pretty names start with the client's name.
let defaultClientName = "graphthru"

/// What the status shows of the levels: each channel's RMS and peak level in dBFS, or the EBU
/// R128 loudness of the outputs in LUFS (with true peak in dBTP). The raw values are the words
/// `--meter` and the `meter` command take.
enum MeterScale: String { case dbfs, lufs }

/// What the command line asked for.
struct Options {
    /// Name, server, channels and routing of the JACK client.
    var client = ClientOptions()
    var muted = false
    /// The low-pass to start with, in Hz (checked against the server's rate once it is known).
    var lowpass: Float?
    var quiet = false
    /// --meter: what the status shows of the levels at start (`u` and `meter` switch it live).
    var meter = MeterScale.dbfs
    /// --json: JSON lines on stdout instead of the status area or plain lines.
    var json = false
    /// A server to start (a child jackd: --start-server, --net-*), or none to join a running one.
    var server = ServerStartOptions()
    var record: String?
    var recordFormat: RecordingSettings.SampleFormat?
    var dump = false
    /// --insert: the plugins to put before the gate, in order.
    var inserts: [PluginInfo] = []

    /// The options of this process's command line; exits 0 for --help, 2 for anything wrong
    /// (a --record file that cannot be created included).
    static func parse(tool: Tool) -> Options {
        var o = Options()
        var arguments = Arguments(tool: tool)
        while let arg = arguments.next() {
            if o.client.parse(arg, from: &arguments) || o.server.parse(arg, from: &arguments) { continue }
            switch arg {
            case "--help", "-h": tool.help(usage)
            case "--muted": o.muted = true
            case "--quiet", "-q": o.quiet = true
            case "--json": o.json = true
            case "--dump": o.dump = true
            case "--lowpass":
                let v = arguments.value(for: arg)
                guard let hz = Float(v), hz.isFinite, hz > 0 else { tool.fail("--lowpass needs a frequency in Hz, not '\(v)'", status: ExitStatus.usage) }
                // The top (rate/2) is checked once the server's rate is known; the bottom now.
                guard hz >= 10 else { tool.fail("--lowpass \(hz) Hz is outside 10…sampleRate/2 Hz (below 10 Hz)", status: ExitStatus.usage) }
                o.lowpass = hz
            case "--meter":
                let v = arguments.value(for: arg)
                guard let scale = MeterScale(rawValue: v.lowercased()) else { tool.fail("--meter takes dbfs or lufs, not '\(v)'", status: ExitStatus.usage) }
                o.meter = scale
            case "--record": o.record = arguments.value(for: arg)
            case "--record-format": o.recordFormat = arguments.sampleFormat(for: arg)
            case "--insert":
                let name = arguments.value(for: arg)
                do throws(PluginError) {
                    o.inserts.append(name.contains(":") ? try LV2.find(uri: name) : try LADSPA.find(label: name))
                } catch {
                    tool.fail("--insert: \(error)", status: ExitStatus.usage)
                }
            default: arguments.unknown(arg)
            }
        }
        o.server.check(tool: tool)
        if o.recordFormat != nil && o.record == nil { tool.fail("--record-format needs --record FILE", status: ExitStatus.usage) }
        let channels = o.client.channels == 1 ? "1 channel" : "\(o.client.channels) channels"
        for (flag, given) in [("--input", o.client.routing.inputs), ("--output", o.client.routing.outputs)] where given.count > o.client.channels {
            tool.fail("\(given.count) \(flag) ports but only \(channels) (raise --channels)", status: ExitStatus.usage)
        }
        for plugin in o.inserts {
            if let problem = plugin.hostingProblem { tool.fail("--insert: \(problem)", status: ExitStatus.usage) }
            if plugin.audioInputs.isEmpty {
                tool.fail("--insert: \(plugin.description) has no audio input, so it cannot go in the chain (a generator: use it as a source node in a graphrun file)", status: ExitStatus.usage)
            }
            let outputs = plugin.audioOutputs.count
            guard o.client.channels % outputs == 0 else {
                tool.fail("--insert: \(plugin.description) has \(outputs) audio outputs: it cannot process \(channels) (--channels must be a multiple of \(outputs))", status: ExitStatus.usage)
            }
            // Instantiated once here, so a plugin whose library does not load or whose
            // instantiate fails is refused as a bad option, before JACK is joined.
            do throws(PluginError) { _ = try PluginUnit(plugin, channels: o.client.channels) } catch {
                tool.fail("--insert: \(error)", status: ExitStatus.usage)
            }
        }
        if let path = o.record {
            var info = stat()
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { tool.fail("--record: \(path) is a directory; name a file in it", status: ExitStatus.usage) }
            do {
                // The type and sample format, and whether the file type can hold them with these
                // channels (FLAC cannot hold float32): checked at 48 kHz, refused before JACK.
                let settings = try RecordingSettings.forPath(path, sampleFormat: o.recordFormat)
                try settings.check(sampleRate: 48_000, channels: o.client.channels)
            } catch { tool.fail("--record: \(error)", status: ExitStatus.usage) }
            if let problem = cannotCreate(path) { tool.fail("--record: cannot create \(path): \(problem)", status: ExitStatus.usage) }
        }
        return o
    }

    /// Why `path` cannot be created or overwritten, or nil when it can: checked before any JACK
    /// server is started or joined. A new file is created, written a block and removed again (a
    /// missing directory, no permission, a full or read-only file system, a file-size limit all
    /// show); an existing path is left as it is: a directory is refused, a regular file must be
    /// writable, anything else (a FIFO, a device) is left to the recorder to open.
    static func cannotCreate(_ path: String) -> String? {
        var info = stat()
        if stat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { return String(cString: strerror(EISDIR)) }
            if (info.st_mode & S_IFMT) == S_IFREG, access(path, W_OK) != 0 { return String(cString: strerror(errno)) }
            return nil
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        // A block as big as a recording's header: a disk with no room fails here, not in JACK.
        let block = [UInt8](repeating: 0, count: 4096)
        var failure: String?
        var offset = 0
        while offset < block.count {
            let n = block[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            // A short write is retried: the next one says why (ENOSPC, EFBIG).
            if n <= 0 { failure = String(cString: strerror(n < 0 ? errno : ENOSPC)); break }
            offset += n
        }
        close(fd)
        unlink(path)
        return failure
    }
}

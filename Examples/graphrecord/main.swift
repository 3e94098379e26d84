// graphrecord: records JACK input to a WAV, FLAC, Opus, Vorbis or MP3 file until SIGINT/SIGTERM/SIGHUP/SIGQUIT or a --duration, showing every input channel's level (the example of the TapsMetersRecording article, Sources/AudioGraph/AudioGraph.docc).
//
// The chain is IO input → IO output (a monitor); a Recorder and a LevelMeter watch IO element 1
// (the device input). Every write updates the file's header, so even `kill -9` leaves a
// readable file; SIGINT/SIGTERM/SIGHUP/SIGQUIT stop the recorder, which writes the rest and closes the file.
// Options are checked, the file's included, before the client joins JACK (see `usage`).
import AudioGraph
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

let usage = """
usage: graphrecord [options] FILE

Records JACK input to FILE (WAV, FLAC, Opus, Vorbis or MP3, by its extension) until SIGINT (Ctrl-C), SIGTERM,
SIGHUP or SIGQUIT, or for --duration seconds, printing every input channel's level once a second.
  in_1…in_N → IO unit → recorder and level meter on the device input
  out_1…out_N play what comes in, as it comes (to monitor; connected only by you)

options:
  --name NAME         JACK client name (default: graphrecord)
  --server NAME       JACK server to join (default: $JACK_DEFAULT_SERVER or "default")
\(ServerStartOptions.usage)
  --channels N        input ports in_1…in_N and channels in the file, 1…64 (default: 2)
  --input PORT        connect PORT to the next in_k (repeatable): an exact port name, or a
                      pattern as jack_lsp takes (system:capture_.*) whose matches fill the next
                      in_k in order; ports not connected record silence (connect them later
                      with jack_connect or a patchbay; nothing is connected by itself)
  --reconnect         when the server goes away, wait for it (a try every 250 ms) and go on
                      recording into the same file once it is back, the --input ports connected
                      again; the gap is not in the file: it is said (`gap: …`) and counted at the
                      end; a server back at another rate is resampled to the file's rate
                      (without --reconnect: exit 1, the file complete up to the shutdown)
  --format F          int16, int24 or float32 (default: float32 for WAV, int24 for FLAC, which
                      holds integers only); not for the compressed types
  --quality Q         for .opus, .ogg and .mp3: 0 (smallest file) … 1 (best); default the
                      codec's (Opus: 6 + 250 × Q kbit/s per channel)
  --bit-rate BPS      for .opus: the target bit rate, all channels, 6000…256000 per channel
                      (so 12000…512000 for 2 channels); instead of --quality, not with it
  --rate HZ           the file's sample rate, 1…768000, converted from the server's (default:
                      the server's; within 1/256…256 times it)
  --duration SECONDS  stop by itself once the file holds SECONDS × rate frames, exactly (the
                      rate is --rate's, else the server's)
  --help              show this help

FILE: .wav or .wave (RIFF WAVE, RF64 past 4 GiB), .flac, .opus (Ogg Opus: 8, 12, 16, 24 or
48 kHz; another --rate is recorded at the next of those and said), .ogg or .oga (Ogg Vorbis),
.mp3 (at the MPEG rates, likewise), any case; AAC/.m4a is not available (libsndfile has no AAC
encoder: Opus is its equivalent). An existing file is replaced. A WAV or FLAC header is
rewritten on every write, so even `kill -9` leaves a readable file.

output: `recording graphrecord:in_1… to FILE (wav, float32, 48000 Hz)` at start; once a second
`level (dBFS RMS/peak): in_1 -20.0/-6.5, in_2 -160.0/-160.0; 237568 frames written` (-160.0 is
digital silence); at the end `recorded N frames to FILE (D dropped)` and the EBU R128 loudness
of what came in, `integrated loudness -23.0 LUFS, true peak -23.0 dBTP` (libebur128). With --reconnect, each
time the server is back `gap: 2.41 s (115680 frames at 48000 Hz) missing after frame 96000 of
the file`, and at the end `gaps: 1 interruption, 2.41 s in all, not in the file`. At the end,
when not zero: `clipped: N sample(s) beyond ±1.0 written as full scale (int24)`, `dropped: N
frame(s) the writer fell behind on (disk too slow), in G gap(s):` with one line per gap
(`N frames at sample time T (file frame F)`), and `xruns: N reported by JACK during the
recording, at sample time(s) T1, T2 (×2), …` (each time once, with how often JACK reported it).
A write that fails while recording (disk full) is said at once, `writing FILE failed: …; the
file holds the N frames written before the failure`, and the recording stops there.

exit status: 0 after SIGINT / SIGTERM / SIGHUP / SIGQUIT or the --duration, with the file complete; 1 when JACK
fails (no server, server gone without --reconnect, a port that does not exist) or a write fails
(disk full: said at once, the recording stops, the file keeps what was written); 2 for bad options, refused before JACK is joined: an unknown
option, a second FILE, a name JACK cannot take, a FILE that cannot be created (an extension
other than those above, a missing or read-only directory), a --format the type cannot hold,
a --quality or --bit-rate out of range or for a type that takes none, or both together,
a bad --rate or --duration (a --rate too far from the server's is found once it is joined).
"""

let tool = Tool(name: "graphrecord")

/// One decimal place.
func tenths(_ x: Float) -> String { String(Float(Int((x * 10).rounded())) / 10) }

/// Frames in `seconds` at `rate`, or exits 2 when that is not one frame or more.
func frames(in seconds: Double, at rate: Double) -> UInt64 {
    let frames = (seconds * rate).rounded()
    guard frames >= 1, frames < 1e15 else {
        tool.fail("--duration \(seconds) is \(frames < 1 ? "less than one frame" : "too long") at \(Int(rate)) Hz", status: ExitStatus.usage)
    }
    return UInt64(frames)
}

// 1. Options, the file's included: every mistake is refused (status 2) before JACK is joined.
// The client's options without autoconnect: only the --input ports are recorded.
Tool.parkClosedStandardStreams()
var client = ClientOptions()
client.routing.autoconnect = false
var ownServer = ServerStartOptions()
var sampleFormat: RecordingSettings.SampleFormat?
var rate: Double?
var duration: Double?
var quality: Double?
var bitRate: Int?
var bitRateText: String?
var path: String?
var arguments = Arguments(tool: tool)
while let argument = arguments.next() {
    if client.parse(argument, from: &arguments, accepted: [.name, .server, .channels, .inputs, .reconnect])
        || ownServer.parse(argument, from: &arguments) { continue }
    switch argument {
    case "--help", "-h": tool.help(usage)
    case "--format": sampleFormat = arguments.sampleFormat(for: argument)
    case "--rate": rate = Double(arguments.integer(for: argument, in: 1...Int(StreamFormat.maximumSampleRate)))
    case "--quality":
        let text = arguments.value(for: argument)
        guard let q = Double(text), q >= 0, q <= 1 else { tool.fail("--quality takes 0 (smallest) … 1 (best), not '\(text)'", status: ExitStatus.usage) }
        quality = q
    case "--bit-rate": bitRateText = arguments.value(for: argument)   // checked per channel once --channels is known
    case "--duration":
        let text = arguments.value(for: argument)
        guard let seconds = Double(text), seconds.isFinite, seconds > 0 else {
            tool.fail("--duration takes a number of seconds above 0, not '\(text)'", status: ExitStatus.usage)
        }
        duration = seconds
    case let arg where arg.hasPrefix("-") && arg != "-": arguments.unknown(arg)
    case let arg:
        guard path == nil else { tool.fail("one file only ('\(path!)' and '\(arg)')", status: ExitStatus.usage) }
        path = arg
    }
}
guard let path else { tool.fail("say which file to record to (see --help)", status: ExitStatus.usage) }
ownServer.check(tool: tool)
if let text = bitRateText {
    // The range is per channel (the encoder's), so the total it allows depends on --channels.
    let range = (6_000 * client.channels)...(256_000 * client.channels)
    guard let bps = Int(text), range.contains(bps) else {
        let total = client.channels == 1 ? "" : " (\(range.lowerBound)…\(range.upperBound) in all for \(client.channels) channels)"
        tool.fail("--bit-rate takes 6000…256000 bit/s per channel\(total), not '\(text)'", status: ExitStatus.usage)
    }
    // libsndfile has one knob: a bit rate is turned into the compression level a quality sets.
    if quality != nil { tool.fail("--bit-rate and --quality both set the Opus encoder's rate: give one (--bit-rate is for .opus only; --quality for .opus, .ogg and .mp3)", status: ExitStatus.usage) }
    bitRate = bps
}
if client.routing.inputs.count > client.channels {
    tool.fail("\(client.routing.inputs.count) --input ports but only \(client.channels) channel\(client.channels == 1 ? "" : "s") (raise --channels)", status: ExitStatus.usage)
}
var settings = tool.recordingSettings(path: path, sampleFormat: sampleFormat, sampleRate: rate, channels: client.channels,
                                      frameLimit: duration.flatMap { seconds in rate.map { frames(in: seconds, at: $0) } },
                                      quality: quality, bitRate: bitRate)

// Signals only wake the main loop; it stops the recorder (never the handler). A second signal
// does not cut the recording short: the recorder finishes writing.
QuitSignals.install([SIGINT, SIGTERM, SIGHUP, SIGQUIT], secondSignalExits: false)

// 2. The graph: the device input straight to the device output.
let graph = AudioGraph()
let io = IOUnit()
let ioNode: AUNode
do {
    ioNode = try graph.addNode(io)
    try io.setInputEnabled(true)
    try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, ioNode, destinationInputElement: IOUnit.outputElement)
} catch {
    tool.fail("\(error)")
}

// 3. The client (registers in_1…, out_1…); the server's rate sets the length of a --duration
// without --rate. Then started (initializes the graph), connected, recording.
let ownJACKServer = ownServer.startForProcess(for: &client, tool: tool)
let driver = tool.openDriver(graph: graph, options: client.driverOptions(defaultName: "graphrecord"))
// The limit counts frames at the file's rate: the server's (or --rate's), or the codec's next.
if let duration { settings.frameLimit = frames(in: duration, at: settings.fileRate(for: rate ?? Double(driver.sampleRate)).rate) }
let meter: LevelMeter, recorder: Recorder, loudness: LoudnessMeter
do {
    try driver.start()
    // Unconnected channels record silence, as asked; ports left over are said.
    for note in try client.routing.connect(driver) { tool.complain(note) }
    meter = try graph.installLevelMeter(on: ioNode, element: IOUnit.inputElement)
    // EBU R128 loudness of what comes in while recording (libebur128, off the render thread).
    loudness = try LoudnessMeter(graph: graph, node: ioNode, element: IOUnit.inputElement)
} catch {
    driver.close()
    tool.fail("\(error)", status: (error as? JACKDriverError).map(ExitStatus.connecting) ?? ExitStatus.failure)
}
do throws(RecorderError) {
    recorder = try Recorder(graph: graph, node: ioNode, element: IOUnit.inputElement, path: path, settings: settings)
} catch {
    driver.close()
    // The file's settings against the server's rate, or a file that could not be created after all: bad options.
    switch error {
    case .unsupportedSettings, .cannotCreate: tool.fail("\(error)", status: ExitStatus.usage)
    default: tool.fail("\(error)")
    }
}
let fileRate = Int(recorder.settings.sampleRate!)
var length = ""
if let duration, let limit = recorder.settings.frameLimit { length = " for \(duration) s (\(limit) frames)" }
let encoding = !settings.fileType.isCompressed ? settings.sampleFormat.rawValue
    : bitRate.map { "\($0) bit/s" } ?? quality.map { "quality \($0)" } ?? "the codec's default quality"
// The codec's rate, and where the audio really comes from: the server's rate, converted once.
if let note = recorder.rateNote { tool.complain("note: \(note), converted from the server's \(driver.sampleRate) Hz") }
tool.say("recording \(driver.clientName):in_1… to \(path) (\(settings.fileType.rawValue), \(encoding), \(fileRate) Hz)\(length)\(ownJACKServer.map { "; server '\($0.name)' started as a child jackd, driver \($0.driver)" } ?? "")")

/// Every input channel's average and peak, and the frames in the file.
func levelLine() -> String {
    let channels = (0..<driver.inputPortNames.count).map { c in
        let (average, peak) = (try? meter.levels(channel: c)) ?? (LevelMeter.silence, LevelMeter.silence)
        return "in_\(c + 1) \(tenths(average))/\(tenths(peak))"
    }
    return "level (dBFS RMS/peak): \(channels.joined(separator: ", ")); \(recorder.framesWritten) frames written"
}

// 4. Until a signal or the --duration: the level once a second. With a duration the loop also
// looks 50 times a second whether the file is complete (the recorder itself stops at the limit).
let loop = MainLoop(tool: tool, driver: driver)
var nextLevel = monotonicMilliseconds() + 1000
// With --reconnect the file goes on: the downtime is not recorded (nothing rendered), so it is
// said where it falls, in the file's frames, and summed for the end.
loop.follow(client)
var gaps: [Double] = []
driver.addObserver { notification in
    guard case .interruptionEnded(let downtime, _) = notification else { return }
    gaps.append(downtime)
    let missing = UInt64((downtime * Double(fileRate)).rounded())
    tool.say("gap: \(Double(Int((downtime * 100).rounded())) / 100) s (\(missing) frames at \(fileRate) Hz) missing after frame \(recorder.framesWritten) of the file")
}
// A server back at a rate the file's cannot be resampled from would record nothing: the run
// ends there, with status 1, the file closed holding what it has.
var unusableRate: String?
loop.onSampleRateFollowed = {
    let ratio = Double(fileRate) / Double(driver.sampleRate)
    guard ratio < 1.0 / 256 || ratio > 256 else { return }
    unusableRate = "the server runs at \(driver.sampleRate) Hz now, which cannot be resampled to the file's \(fileRate) Hz (the ratio must be within 1/256…256); stopping with the \(recorder.framesWritten) frames the file holds"
}
loop.isDone = { recorder.isComplete || unusableRate != nil }
// A write that failed (disk full) ends the run at once, status 1: the frame count would only
// freeze while level lines go on. Looked at every turn (a lock and a load), so at the latest
// when the next level line is due.
var writeFailureSaid = false
loop.failure = {
    guard let message = writeFailureMessage(recorder) else { return nil }
    writeFailureSaid = true
    return message
}
loop.onWake = {
    // Failed since the loop looked: no level line, round again at once to say it.
    if recorder.writeError != nil { return 0 }
    if monotonicMilliseconds() >= nextLevel {
        tool.say(levelLine())
        nextLevel += 1000
    }
    let untilLevel = Int32(max(0, nextLevel - monotonicMilliseconds()))
    return duration == nil ? untilLevel : min(untilLevel, 20)
}
var status = loop.run()
if let unusableRate {
    tool.complain(unusableRate)
    status = ExitStatus.failure
}

// 5. The recorder writes the rest and closes the file; then the client closes.
do throws(RecorderError) {
    try recorder.stop()
    try? loudness.stop()
    tool.say("recorded \(recorder.framesWritten) frames to \(path) (\(recorder.framesDropped) dropped)\(ownJACKServer.map { "; server '\($0.name)' (child jackd) stopped" } ?? "")")
    for line in recordingReport(recorder, xruns: driver.xrunCount, xrunTimes: driver.xrunSampleTimes) { tool.say(line) }
    func one(_ x: Double) -> String { tenths(Float(x)) }
    tool.say("integrated loudness \(loudness.integratedLoudness.map { one($0) + " LUFS" } ?? "none (nothing above the -70 LUFS gate)"), true peak \(loudness.truePeak.map { one($0) + " dBTP" } ?? "none (digital silence)")")
    if !gaps.isEmpty {
        let total = Double(Int((gaps.reduce(0, +) * 100).rounded())) / 100
        tool.say("gaps: \(gaps.count) interruption\(gaps.count == 1 ? "" : "s"), \(total) s in all, not in the file")
    }
} catch {
    if !writeFailureSaid { tool.complain(writeFailureMessage(recorder) ?? "\(error)") }
    status = ExitStatus.failure
}
QuitSignals.withDeadline(seconds: 2, exitStatus: status) { driver.close() }
exit(status)

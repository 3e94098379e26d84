// graphvoice: a voice-processing IO unit on JACK — the far end from a file to the speaker ports, the microphone with its echo cancelled (WebRTC), noise suppressed and AGC to the uplink ports and a file, with a status line.
//
// The graph: VoiceProcessingIOUnit (auou/vpio). Its element 1 (in_1… processed) feeds a merger's
// second input; an AudioPlayer (--play) feeds its first; the merger feeds element 0, whose ports
// are out_1… (the speaker: the far end, and the canceller's reference) then uplink_1… (the
// processed microphone, for another client). A Recorder (--record) and a level meter watch
// element 1.
import AudioGraph
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

let usage = """
usage: graphvoice [options]

Voice processing on JACK, as Apple's VoiceProcessingIO unit does it: the microphone (in_1…) with
the echo of what the speaker ports (out_1…) play removed, noise suppressed and, with --agc, its
level controlled, sent on to uplink_1… and, with --record, to a file. A status line once a second.
  in_1…in_N     the microphone (autoconnected to the physical capture ports unless --input or
                --no-autoconnect)
  out_1…out_N   the speaker: --play FILE (the far end), the echo canceller's reference
                (autoconnected to the physical playback ports unless --output or --no-autoconnect)
  uplink_1…N    the processed microphone, for another client (connected only with --uplink)

options:
  --play FILE           the far end, played to out_1… (any file libsndfile reads; converted to the
                        server's rate and --channels); without it the speaker is silent
  --loop                play FILE again and again (default: once)
  --record FILE         record the processed microphone to FILE (.wav, .flac, .opus, .ogg, .mp3)
  --no-voice-processing bypass the processing (kAUVoiceIOProperty_BypassVoiceProcessing): the
                        microphone passes as it comes, with the same latency
  --agc                 automatic gain control on (kAUVoiceIOProperty_VoiceProcessingEnableAGC;
                        off by default here, on by default in the unit as in Apple's)
  --agc-target DBFS     the AGC's target peak level, -31…0 dBFS (default: -3); with --agc
  --noise-suppression L off, low, moderate, high or very-high (about 0, 6, 10, 15, 20 dB; default moderate)
  --echo-delay MS       the echo path's delay for the canceller's starting hint, 0…500 ms,
                        instead of the capture + playback latency JACK reports for the ports
                        (give it when other clients sit between graphvoice and the room: JACK
                        adds up their latencies, in a loop even graphvoice's own); the canceller
                        finds the true delay from the hint, in seconds when it is close
  --channels N          microphone, speaker and uplink ports each, 1…8 (default: 1)
  --name NAME           JACK client name (default: graphvoice)
  --server NAME         JACK server to join (default: $JACK_DEFAULT_SERVER or "default")
\(ServerStartOptions.usage)
  --input PORT          connect PORT to the next in_k (repeatable; exact name or jack_lsp pattern)
  --output PORT         connect the next out_k to PORT (repeatable)
  --uplink PORT         connect the next uplink_k to PORT (repeatable)
  --no-autoconnect      connect nothing by itself
  --duration SECONDS    stop by itself after SECONDS (default: until a signal)
  --help                show this help

output: `graphvoice: graphvoice:in_1… → voice processing (echo cancellation, noise suppression
moderate, AGC off) → uplink_1… and FILE; FILE (looping) → out_1…; latency 29.3 ms` at start; once
a second `ERLE 31 dB, uplink -42.0 dBFS, far end -18.3 dBFS, voice 0, gain -28.1 dB, delay hint
11 ms (metric 4 ms), late 0 frames` (uplink and far end: every channel's RMS level, separated by
"/"; ERLE "-" until the canceller has a figure, and while bypassed); at the end the 10 ms frames
processed, the sample frames that came too late from the worker (sent as silence) and the xruns.

exit status: 0 after SIGINT / SIGTERM / SIGHUP / SIGQUIT or --duration (which stops about then,
within a period); 1 when JACK fails (no server, a port that does not exist, the server gone) or a
recording write fails; 2 for bad options, refused before JACK is joined (an unknown option, an
option missing its value, a --play file that cannot be read, a --record file that cannot be
created, --agc-target without --agc, a value out of range).
"""

let tool = Tool(name: "graphvoice")

/// One decimal place.
func tenths(_ x: Float) -> String { x.isFinite ? String(Float(Int((x * 10).rounded())) / 10) : "-" }

// 1. Options: every mistake is refused (status 2) before JACK is joined.
Tool.parkClosedStandardStreams()
var client = ClientOptions(channels: 1)
var ownServer = ServerStartOptions()
var playPath: String?
var loops = false
var recordPath: String?
var bypass = false
var agc = false
var agcTarget = -3
var agcTargetGiven = false
var noiseLevel = 2
var echoDelay = 0.0
var echoDelayGiven = false
var uplinks: [String] = []
var duration: Double?
let noiseLevels = ["off", "low", "moderate", "high", "very-high"]
var arguments = Arguments(tool: tool)
while let argument = arguments.next() {
    if client.parse(argument, from: &arguments, accepted: [.name, .server, .inputs, .outputs, .noAutoconnect])
        || ownServer.parse(argument, from: &arguments) { continue }
    switch argument {
    case "--help", "-h": tool.help(usage)
    case "--play": playPath = arguments.value(for: argument)
    case "--loop": loops = true
    case "--record": recordPath = arguments.value(for: argument)
    case "--no-voice-processing": bypass = true
    case "--agc": agc = true
    case "--agc-target":
        agcTarget = arguments.integer(for: argument, in: -31...0)
        agcTargetGiven = true
    case "--noise-suppression":
        let text = arguments.value(for: argument)
        guard let level = noiseLevels.firstIndex(of: text) ?? Int(text).flatMap({ (0...4).contains($0) ? $0 : nil }) else {
            tool.fail("--noise-suppression takes \(noiseLevels.joined(separator: ", ")) (or 0…4), not '\(text)'", status: ExitStatus.usage)
        }
        noiseLevel = level
    case "--echo-delay": echoDelay = Double(arguments.integer(for: argument, in: 0...500)) / 1000; echoDelayGiven = true
    case "--channels": client.channels = arguments.integer(for: argument, in: 1...8)
    case "--uplink": uplinks.append(arguments.value(for: argument))
    case "--duration":
        let text = arguments.value(for: argument)
        guard let seconds = Double(text), seconds.isFinite, seconds > 0 else {
            tool.fail("--duration takes a number of seconds above 0, not '\(text)'", status: ExitStatus.usage)
        }
        duration = seconds
    case let arg where arg.hasPrefix("-"): arguments.unknown(arg)
    case let arg: tool.fail("graphvoice takes no file argument ('\(arg)'): --play FILE, --record FILE", status: ExitStatus.usage)
    }
}
ownServer.check(tool: tool)
if agcTargetGiven && !agc { tool.fail("--agc-target sets the AGC's target: add --agc", status: ExitStatus.usage) }
let channels = client.channels
for (given, what) in [(client.routing.inputs.count, "--input"), (client.routing.outputs.count, "--output"), (uplinks.count, "--uplink")] where given > channels {
    tool.fail("\(given) \(what) ports but only \(channels) channel\(channels == 1 ? "" : "s") (raise --channels)", status: ExitStatus.usage)
}
// The far end's file is read now, so a bad one is refused before JACK is joined.
if let playPath {
    let probe = AudioFilePlayerUnit()
    do throws(AudioUnitError) { try probe.open(playPath) } catch {
        tool.fail("--play \(playPath): cannot read it: \(probe.openFailureReason ?? "\(error)")", status: ExitStatus.usage)
    }
    guard let file = probe.fileFormat, file.frames > 0 else { tool.fail("--play \(playPath): it holds no audio frames", status: ExitStatus.usage) }
}
let recordSettings = recordPath.map { tool.recordingSettings(path: $0, sampleFormat: nil, sampleRate: nil, channels: channels) }
// The file itself, made and removed again now: a place that cannot hold it (a read-only or
// virtual file system) is a bad option, found before JACK is joined. (The recorder replaces it.)
if let recordPath {
    var info = stat()
    if stat(recordPath, &info) == 0 {
        if (info.st_mode & S_IFMT) == S_IFDIR { tool.fail("--record \(recordPath): it is a directory", status: ExitStatus.usage) }
        if access(recordPath, W_OK) != 0 { tool.fail("--record \(recordPath): cannot write it: \(String(cString: strerror(errno)))", status: ExitStatus.usage) }
    } else {
        let fd = open(recordPath, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        if fd < 0 { tool.fail("--record \(recordPath): cannot create it: \(String(cString: strerror(errno)))", status: ExitStatus.usage) }
        close(fd)
        unlink(recordPath)
    }
}

QuitSignals.install([SIGINT, SIGTERM, SIGHUP, SIGQUIT], secondSignalExits: false)

// 2. The graph: element 1 (processed) and the far end side by side into element 0.
let graph = AudioGraph()
let voice = VoiceProcessingIOUnit()
let ioNode: AUNode, mergerNode: AUNode
do {
    ioNode = try graph.addNode(voice)
    try voice.setInputEnabled(true)
    voice.farEndChannels = channels
    voice.bypassesVoiceProcessing = bypass
    voice.enablesAGC = agc
    voice.extraEchoPathDelay = echoDelay
    // --echo-delay replaces JACK's figure: through other clients it adds up their latencies.
    voice.usesDeviceLatency = !echoDelayGiven
    try voice.setParameter(VoiceProcessingIOUnit.Parameter.noiseSuppression, Float(noiseLevel), scope: .global)
    try voice.setParameter(VoiceProcessingIOUnit.Parameter.agcTargetLevel, Float(agcTarget), scope: .global)
    let merger = try MergerUnit(inputChannels: [channels, channels])
    // The far end and the uplink are independent streams: neither waits for the other's latency.
    merger.alignsInputs = false
    mergerNode = try graph.addNode(merger)
    try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, mergerNode, destinationInputElement: 1)
    try graph.connectNodeInput(mergerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
} catch {
    tool.fail("\(error)")
}

// 3. The client: in_1…N, out_1…N then uplink_1…N.
let ownJACKServer = ownServer.startForProcess(for: &client, tool: tool)
var options = client.driverOptions(defaultName: "graphvoice")
options.outputChannels = 2 * channels
options.outputPortNames = (1...channels).map { "out_\($0)" } + (1...channels).map { "uplink_\($0)" }
let driver = tool.openDriver(graph: graph, options: options)
let uplinkMeter: LevelMeter
var farMeter: LevelMeter?
do {
    try driver.start()
    for note in try client.routing.connect(driver, channels: channels) { tool.complain(note) }
    for (spec, ours) in zip(uplinks, driver.outputPortNames[channels...]) {
        guard let theirs = try driver.ports(matching: spec, sources: false, timeout: 2).first else { throw JACKDriverError.portNotFound(spec) }
        try driver.connect(ours, to: theirs, timeout: 2)
    }
    uplinkMeter = try graph.installLevelMeter(on: ioNode, element: IOUnit.inputElement)
} catch {
    driver.close()
    tool.fail("\(error)", status: (error as? JACKDriverError).map(ExitStatus.connecting) ?? ExitStatus.failure)
}
/// The far end's player, playing (or nil without --play); exits 1 when it cannot start.
@MainActor func startPlayer() -> AudioPlayer? {
    guard let playPath else { return nil }
    do throws(AudioPlayerError) {
        let p = try AudioPlayer(contentsOf: playPath, graph: graph, destination: mergerNode, element: 0)
        p.numberOfLoops = loops ? -1 : 0
        p.isMeteringEnabled = true
        guard p.play() else { throw .audioUnit(p.lastError ?? .failedInitialization) }
        return p
    } catch {
        driver.close()
        tool.fail("--play \(playPath): \(error)")
    }
}
/// The uplink's recorder (or nil without --record); exits 1 when it cannot start.
@MainActor func startRecorder() -> Recorder? {
    guard let recordPath, let recordSettings else { return nil }
    do throws(RecorderError) {
        return try Recorder(graph: graph, node: ioNode, element: IOUnit.inputElement, path: recordPath, settings: recordSettings)
    } catch {
        driver.close()
        tool.fail("--record \(recordPath): \(error)")
    }
}
let player = startPlayer()
let recorder = startRecorder()
let latency = Double(voice.statistics.latencyFrames) / Double(driver.sampleRate)
let processing = bypass ? "bypassed" : "echo cancellation, noise suppression \(noiseLevels[noiseLevel]), AGC \(agc ? "on, target \(agcTarget) dBFS" : "off")"
tool.say("graphvoice: \(driver.clientName):in_1… → voice processing (\(processing)) → uplink_1…\(recordPath.map { " and \($0)" } ?? ""); "
         + "\(playPath.map { "\($0)\(loops ? " (looping)" : "")" } ?? "silence") → out_1…; latency \(tenths(Float(latency * 1000))) ms"
         + "\(ownJACKServer.map { "; server '\($0.name)' started as a child jackd, driver \($0.driver)" } ?? "")")

/// The status line: the canceller's ERLE, levels, the voice activity, the processing's gain, the delay.
@MainActor func statusLine() -> String {
    func parameter(_ id: AudioUnitParameterID) -> Float { (try? voice.parameter(id, scope: .global)) ?? .nan }
    let stats = voice.statistics
    let uplink = (0..<channels).map { tenths((try? uplinkMeter.averagePower(channel: $0)) ?? LevelMeter.silence) }.joined(separator: "/")
    player?.updateMeters()
    let far = (0..<channels).map { c in tenths(player.map { $0.averagePower(forChannel: c) } ?? LevelMeter.silence) }
        .joined(separator: "/")
    let erle = parameter(VoiceProcessingIOUnit.Parameter.echoReturnLossEnhancement)
    let shownERLE = erle.isFinite && !voice.bypassesVoiceProcessing ? "\(Int(erle)) dB" : "-"
    return "ERLE \(shownERLE), uplink \(uplink) dBFS, far end \(far) dBFS, "
        + "voice \(Int(parameter(VoiceProcessingIOUnit.Parameter.voiceActivity))), gain \(tenths(parameter(VoiceProcessingIOUnit.Parameter.processingGain))) dB, "
        + "delay hint \(stats.echoPathDelayMilliseconds) ms (metric \(stats.delayEstimateMilliseconds.map { "\($0) ms" } ?? "-")), late \(stats.lateFrames) frames"
}

// 4. Until a signal or the --duration: the status once a second.
let loop = MainLoop(tool: tool, driver: driver)
let start = monotonicMilliseconds()
var nextStatus = start + 1000
loop.isDone = { duration.map { Double(monotonicMilliseconds() - start) / 1000 >= $0 } ?? false }
loop.failure = { recorder?.writeError.map { "writing \(recordPath!) failed: \($0)" } }
loop.onWake = {
    if monotonicMilliseconds() >= nextStatus {
        tool.say(statusLine())
        nextStatus += 1000
    }
    let untilStatus = Int32(max(0, nextStatus - monotonicMilliseconds()))
    return duration == nil ? untilStatus : min(untilStatus, 20)
}
var status = loop.run()

// 5. The end: the recorder closes its file, the figures, the client closes.
if let recorder {
    do throws(RecorderError) {
        try recorder.stop()
        tool.say("recorded \(recorder.framesWritten) frames to \(recordPath!) (\(recorder.framesDropped) dropped)")
    } catch {
        tool.complain("\(error)")
        status = ExitStatus.failure
    }
}
let stats = voice.statistics
tool.say("processed \(stats.frames) frames of 10 ms; \(stats.lateFrames) sample frames came too late from the worker (sent as silence); worker \(stats.workerIsRealTime ? "real-time (SCHED_FIFO, priority \(voice.workerPriority))" : "an ordinary thread (the server is not real-time, or SCHED_FIFO was refused)"); xruns \(driver.xrunCount)"
         + "\(ownJACKServer.map { "; server '\($0.name)' (child jackd) stopped" } ?? "")")
QuitSignals.withDeadline(seconds: 2, exitStatus: status) { driver.close() }
exit(status)

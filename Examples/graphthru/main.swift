// graphthru: the tool's life — live monitoring, microphone → speakers through an AudioGraph pulled by JACK.
//
//   IO element 1 (in_1…in_N) → [low-pass] → mute gate → mixer input 0 → IO element 0 (out_1…out_N)
//
// With the mute off, the volume at 0 dB and no filter, every sample passes bit for bit.
// In a terminal it shows a status area redrawn in place and takes single keys; otherwise it
// prints plain lines and reads line commands (see `usage` in Options.swift).
//
// The steps below are those of jack2's simple_client.c: options, graph, open the client,
// start, connect, loop, close. The parts live beside this file: Options.swift (the command
// line), Monitor.swift (the graph and its live edits), StatusView.swift (what is shown),
// Commands.swift (keys and line commands), ServerStartOptions in ToolSupport (--start-server).
import AudioGraph
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

let tool = Tool(name: "graphthru")

// Closed standard streams are parked first, so the files libjack opens cannot take their numbers.
Tool.parkClosedStandardStreams()

// A file-size limit (`ulimit -f`) reached by --record is a failed write, reported while
// monitoring goes on, as a full disk is (and refused with the options when the file cannot
// even start); by default SIGXFSZ would kill the process, JACK client and all.
signal(SIGXFSZ, SIG_IGN)

// 1. Options: every mistake is refused (status 2) before anything starts, a --record file that
// cannot be created included (before any server is started or joined).
var options = Options.parse(tool: tool)

// Quit signals only wake the main loop (through a pipe), whichever thread takes them; a second
// one while closing ends the process at once. Run in the background, it must never be stopped
// for touching the terminal: a stopped JACK client stalls the whole server.
QuitSignals.install([SIGINT, SIGTERM, SIGHUP, SIGQUIT])
Commands.ignoreTerminalStops()

// Our own server (a child jackd) when asked for: it must run before the client can join it.
let server = options.server.startForProcess(for: &options.client, tool: tool)

// 2. The graph: the chain above, uninitialized; the driver initializes it when it starts.
let monitor: Monitor
do { monitor = try Monitor(options) } catch { tool.fail("could not build the graph: \(error)") }

// 3. Open the client: it registers in_k and out_k and sets the IO unit to the server's rate.
let driver = tool.openDriver(graph: monitor.graph, options: options.client.driverOptions(defaultName: defaultClientName))

// The server's rate is known only now: it sets the mixer's output format and the cutoff's top.
do { try monitor.configure(for: driver, lowpass: options.lowpass) } catch {
    driver.close()
    tool.fail(error.message, status: error.status)
}
let view = StatusView(quiet: options.quiet, json: options.json, monitor: monitor, driver: driver, server: server)

// 4. Start: JACK begins pulling the graph. Ports can be named and connected only once active.
do {
    try driver.start()
    try monitor.namePorts(of: driver)
    for note in try options.client.routing.connect(driver) { view.notice(note) }
} catch {
    driver.close()
    tool.fail("\(error)", status: ExitStatus.connecting(error))
}
view.startupReport(lowpass: options.lowpass)
if options.dump { view.say(monitor.graph.description) }

// Meters and the recorder watch the running graph from their own threads; meters are optional.
do { try monitor.installMeters() } catch { view.complain("level meters unavailable: \(error)") }
if options.meter == .lufs {
    do { try monitor.setLoudness(true) } catch { view.complain("loudness meter unavailable: \(error)") }
}
if let path = options.record {
    do { try monitor.startRecording(path: path, format: options.recordFormat) } catch {
        driver.close()
        tool.fail("--record: \(error)", status: ExitStatus.usage)
    }
}

// Control: keys in a terminal we own, lines otherwise.
let commands = Commands(monitor: monitor, view: view)
commands.enterKeyModeIfForeground()
view.report("mute: \(view.muteText)")
if monitor.loudness != nil { view.report("meter: \(view.meterText)") }
if view.display == .terminal { view.redraw() }

// 5. The loop, until quit, a signal or the server's end: it follows the server's rate, and on
// each wake-up says a failed recording once, shows xruns and redraws.
let loop = MainLoop(tool: tool, driver: driver, input: commands.interactive ? .keys(commands.key) : .lines(commands.line))
loop.complain = { view.complain($0) }
loop.readsInputNow = { !commands.interactive || commands.keyMode }
loop.onBackground = { commands.leaveKeyMode() }
// Waiting for the server and its return are notices ("graphthru: …"; with --json `notice` objects).
loop.report = { view.notice($0) }
// A new period or freewheel mode is said as it happens (a new rate when the graph followed it).
driver.addObserver { notification in
    guard case .configurationChanged(let from, let to) = notification else { return }
    if from.bufferSize != to.bufferSize { view.report("period: \(to.bufferSize) frames") }
    if from.isFreewheeling != to.isFreewheeling { view.report("freewheel: \(to.isFreewheeling ? "on" : "off")") }
}
loop.follow(options.client) { try monitor.namePorts(of: driver) }
loop.onSampleRateFollowed = {
    var note: String?
    do { note = try monitor.clampCutoffToRate() } catch { view.complain("\(error)") }
    view.report("sample rate: \(driver.sampleRate) Hz")
    if let note { view.notice(note) }
}
loop.onWake = {
    if let failure = monitor.newRecordingFailure() {
        view.complain("\(failure); the recording stopped there, monitoring goes on")
    }
    view.refresh()
    if commands.interactive { commands.enterKeyModeIfForeground() }
    return view.wakeInterval(waitingForForeground: commands.interactive && !commands.keyMode && loop.inputOpen)
}
var status = loop.run()

// 6. Close: the terminal back as it was, the recording finished (the recorder writes the rest),
// the status area drawn a last time with the run's messages below it, then the client and the
// server, given 2 s rather than hang on a wedged server. A recording that lost audio to a failed
// write exits 1 whatever ended the run: the file is not what was asked for, as with graphrecord.
commands.leaveKeyMode()
if let recorder = monitor.recorder {
    do throws(RecorderError) { try recorder.stop() } catch {
        if !monitor.recordingFailureWasShown { view.complain(writeFailureMessage(recorder) ?? "\(error)") }
    }
    // Stopped already when the failure was said (a second stop throws nothing): the error decides.
    if recorder.writeError != nil { status = ExitStatus.failure }
}
view.closeStatusArea()
if let recorder = monitor.recorder {
    let incomplete = recorder.writeError != nil ? "; incomplete: writing failed (see above), so the exit status is 1" : ""
    view.say("graphthru: recorded \(recorder.framesWritten) frames to \(recorder.path) (\(recorder.framesDropped) dropped)\(incomplete)")
    for line in recordingReport(recorder, xruns: driver.xrunCount, xrunTimes: driver.xrunSampleTimes, prefix: "graphthru: ") { view.say(line) }
}
let xruns = driver.xrunCount, load = driver.cpuLoad
QuitSignals.withDeadline(seconds: 2, exitStatus: status) {
    driver.close()
    server?.stop()
}
view.closingReport(xruns: xruns, load: load)
exit(status)

// graphthru: the status view — the redrawn status area, meters, plain status lines and the message line.
import AudioGraph
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

/// Where the status goes: a status area redrawn in place (stdout is a terminal), plain lines
/// (stdout is a pipe or file), one JSON object per line (--json, wherever stdout goes), or
/// nothing but answers (--quiet; JSON answers with --json too).
enum Display { case terminal, lines, json, quiet }

/// A level in dB with one decimal, "-inf dB" for silence.
func dB(_ value: Float) -> String {
    value.isFinite && value > LevelMeter.silence ? String(format1: value) + " dB" : "-inf dB"
}

/// A loudness reading with one decimal and its unit ("-23.0 LUFS", "0.0 LU", "-1.2 dBTP"),
/// "-inf UNIT" when there is none (silence, or nothing above the gates yet).
func loudnessText(_ value: Double?, _ unit: String) -> String {
    value.map { String(format1: Float($0)) + " " + unit } ?? "-inf \(unit)"
}

extension String {
    /// One decimal, without Foundation: -3.0, 12.0, 0.0.
    init(format1 value: Float) {
        let tenths = Int((abs(value) * 10).rounded())
        self = (value < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}

/// A line graphthru says while it runs that is not a state change: an error it survives
/// (stderr) or a notice (stdout), each "graphthru: …".
struct Message {
    enum Kind { case error, notice }
    let kind: Kind
    let text: String
    /// How many times in a row it was said (shown as "(×N)" after the first).
    var repeats = 1
    /// Until when (monotonic seconds) the message lines show it.
    var shownUntil: Double
    /// Whether it was written as a line already; if not, it is printed when the area closes.
    var written: Bool

    var line: String { repeats > 1 ? "\(text) (×\(repeats))" : text }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// What graphthru shows of the monitor and the client, and every line it prints.
///
/// In a terminal, errors and notices do not go to the terminal as lines while the status area
/// is drawn (the next redraw, ≤ 100 ms later, would wipe them and leave a copy of the header
/// above the area): they show in the area's message lines, the latest ``messageLines`` for
/// ``messageSeconds`` each, and are printed below the area when it closes at exit.
/// Thread: the main thread.
@MainActor
final class StatusView {
    let display: Display
    /// --json: every line on stdout is one JSON object (answers included, with --quiet too).
    let json: Bool
    private let monitor: Monitor
    private let driver: JACKDriver
    private let server: JACKServer?
    /// Lines of the status area now on screen (the cursor is below them); 0 when none.
    private var drawnLines = 0
    private var xrunsShown: UInt64 = 0
    private var nonFiniteShown: UInt64 = 0
    /// When (monotonic seconds) the last periodic JSON status line was printed.
    private var lastTick: Double = 0
    /// Messages of this run, oldest first (at most ``keptMessages``).
    private var messages: [Message] = []
    /// Messages dropped from the front of ``messages`` before they were printed.
    private var messagesNotKept = 0
    /// Whether the status area was closed for good (at exit): from then on lines are plain.
    private var areaClosed = false
    /// How long a message stays in the message lines, seconds.
    static let messageSeconds: Double = 5
    /// How many message lines the status area shows at most (the latest).
    static let messageLines = 3
    /// How many messages are kept for printing at exit.
    static let keptMessages = 50

    init(quiet: Bool, json: Bool = false, monitor: Monitor, driver: JACKDriver, server: JACKServer?) {
        display = quiet ? .quiet : json ? .json : (isatty(STDOUT_FILENO) == 1 ? .terminal : .lines)
        self.json = json
        self.monitor = monitor
        self.driver = driver
        self.server = server
    }

    var muteText: String { monitor.isMuted ? "on" : "off" }
    var lowpassText: String { monitor.filterNode == nil ? "off" : "on (\(Int(monitor.cutoff.rounded())) Hz)" }
    /// What the status shows of the levels: `dbfs` (level meters) or `lufs` (loudness).
    var meterText: String { (monitor.loudness == nil ? MeterScale.dbfs : .lufs).rawValue }

    /// The loudness readings as one text, "momentary -23.0 LUFS, short-term …, true peak -23.0
    /// dBTP", or nil while the meter is dbfs.
    var loudnessLine: String? {
        guard let meter = monitor.loudness else { return nil }
        return "momentary \(loudnessText(meter.momentaryLoudness, "LUFS")), short-term \(loudnessText(meter.shortTermLoudness, "LUFS")), "
            + "integrated \(loudnessText(meter.integratedLoudness, "LUFS")), range \(loudnessText(meter.loudnessRange, "LU")), "
            + "true peak \(loudnessText(meter.truePeak, "dBTP"))"
    }

    /// A bar for a level from −60 to 0 (dBFS or LUFS), `width` cells.
    private func bar(_ value: Float, width: Int = 30) -> String {
        let fraction = value.isFinite ? max(0, min(1, (value + 60) / 60)) : 0
        let filled = Int((fraction * Float(width)).rounded())
        return "▕" + String(repeating: "█", count: filled) + String(repeating: "─", count: width - filled) + "▏ "
    }

    private func meterBar(_ reading: MeterReading) -> String {
        bar(reading.average) + "\(dB(reading.average)) (peak \(dB(reading.peak)))"
    }

    /// The status area's loudness lines (the meter is lufs): momentary and short-term as bars,
    /// then integrated, range and true peak.
    private func loudnessLines(_ meter: LoudnessMeter) -> [String] {
        let momentary = meter.momentaryLoudness, shortTerm = meter.shortTermLoudness
        return [
            "out momentary  " + bar(Float(momentary ?? -.infinity)) + loudnessText(momentary, "LUFS"),
            "out short-term " + bar(Float(shortTerm ?? -.infinity)) + loudnessText(shortTerm, "LUFS"),
            "out integrated \(loudnessText(meter.integratedLoudness, "LUFS")) · range \(loudnessText(meter.loudnessRange, "LU")) · true peak \(loudnessText(meter.truePeak, "dBTP")) (EBU R128)",
        ]
    }

    /// The status area's parts: client and server, the monitor's state (`head`); a meter bar per
    /// channel and side (`meters`); the message lines, latest last (`messages`, none when no
    /// message is recent or `withMessages` is false); the keys.
    private func statusParts(withMessages: Bool) -> (head: [String], meters: [String], messages: [String], keys: String) {
        let period = driver.bufferSize
        let ms = String(format1: Float(period) * 1000 / Float(max(driver.sampleRate, 1)))
        let head = [
            "graphthru · client '\(driver.clientName)' · JACK server '\(driver.serverName)'\(server != nil ? " (own jackd)" : "") · \(driver.sampleRate) Hz · period \(period) (\(ms) ms) · \(monitor.channels) ch",
            "mute \(muteText) · volume \(dB(monitor.volumeDB)) · low-pass \(lowpassText) · xruns \(driver.xrunCount) · non-finite \(monitor.nonFiniteSampleCount) · DSP load \(String(format1: driver.cpuLoad))%",
        ]
        var meters: [String] = []
        if let loudness = monitor.loudness {
            meters = loudnessLines(loudness)
        } else if let readings = monitor.meterReadings() {
            for (c, reading) in readings.inputs.enumerated() { meters.append("in  \(c + 1) " + meterBar(reading)) }
            for (c, reading) in readings.outputs.enumerated() { meters.append("out \(c + 1) " + meterBar(reading)) }
        } else {
            meters.append("meters: unavailable")
        }
        let now = monotonicSeconds()
        let recent = withMessages ? messages.filter { $0.shownUntil > now }.suffix(StatusView.messageLines).map(\.line) : []
        return (head, meters, Array(recent), "keys: m mute · l low-pass · +/- volume · u dBFS/LUFS · ? help · q quit")
    }

    /// The `status` command's one line.
    func statusLine() -> String {
        var text = "status: mute \(muteText), volume \(dB(monitor.volumeDB)), low-pass \(lowpassText), xruns \(driver.xrunCount), non-finite \(monitor.nonFiniteSampleCount), DSP load \(String(format1: driver.cpuLoad))%, server '\(driver.serverName)', \(driver.sampleRate) Hz, period \(driver.bufferSize), \(monitor.channels) ch"
        if let meters = monitor.meterReadings() {
            text += ", input " + meters.inputs.map { dB($0.average) }.joined(separator: " ")
            text += ", output " + meters.outputs.map { dB($0.average) }.joined(separator: " ")
        } else {
            text += ", meters n/a"
        }
        if let loudness = loudnessLine { text += "; loudness: " + loudness }
        return text
    }

    /// The status as one JSON object (the --json lines and the `status` answer). `event` says
    /// why it was printed: `status` (the command), `tick` (once a second), or what changed
    /// (`mute`, `volume`, `low-pass`, `meter`, `xruns`, `non-finite`, `sample rate`). Levels are dBFS
    /// with one decimal, `null` for silence (below the meter's floor, −160 dBFS) — never
    /// `-inf` or `NaN`; `input` and `output` are `null` without meters. `nonFiniteSamples`
    /// counts the NaN and ±Inf samples replaced with 0 (``Monitor/nonFiniteSampleCount``),
    /// `renderErrors` the graph's failed render callbacks; `recording` is `null` without --record.
    /// `meter` is `dbfs` or `lufs`; `loudness` is `null` with `dbfs`, else the outputs' EBU R128
    /// readings (`momentaryLUFS`, `shortTermLUFS`, `integratedLUFS`, `rangeLU`, `truePeakDBTP`,
    /// one decimal, each `null` when there is none: silence, or nothing above the gates yet).
    func statusObject(event: String) -> JSONValue {
        func level(_ value: Float) -> JSONValue { value.isFinite && value > LevelMeter.silence ? .number(value) : .null }
        func levels(_ readings: [MeterReading]) -> JSONValue {
            .array(readings.map { .object([("rmsDB", level($0.average)), ("peakDB", level($0.peak))]) })
        }
        let meters = monitor.meterReadings()
        func reading(_ value: Double?) -> JSONValue { value.map { .number($0, decimals: 1) } ?? .null }
        let loudness: JSONValue = monitor.loudness.map { m in
            .object([("momentaryLUFS", reading(m.momentaryLoudness)), ("shortTermLUFS", reading(m.shortTermLoudness)),
                     ("integratedLUFS", reading(m.integratedLoudness)), ("rangeLU", reading(m.loudnessRange)),
                     ("truePeakDBTP", reading(m.truePeak))])
        } ?? .null
        let recording: JSONValue = monitor.recorder.map { r in
            .object([("path", .string(r.path)), ("framesWritten", .count(r.framesWritten)), ("framesDropped", .count(r.framesDropped))])
        } ?? .null
        return .object([
            ("event", .string(event)),
            ("client", .string(driver.clientName)), ("server", .string(driver.serverName)), ("ownServer", .bool(server != nil)),
            ("sampleRate", .integer(Int64(driver.sampleRate))), ("period", .integer(Int64(driver.bufferSize))),
            ("channels", .integer(Int64(monitor.channels))),
            ("mute", .bool(monitor.isMuted)), ("volumeDB", .number(monitor.volumeDB)),
            ("lowpassHz", monitor.filterNode == nil ? .null : .number(monitor.cutoff, decimals: 0)),
            ("xruns", .count(driver.xrunCount)), ("dspLoad", .number(driver.cpuLoad)),
            ("nonFiniteSamples", .count(monitor.nonFiniteSampleCount)), ("renderErrors", .count(monitor.graph.renderErrorCount)),
            ("input", meters.map { levels($0.inputs) } ?? .null), ("output", meters.map { levels($0.outputs) } ?? .null),
            ("recording", recording), ("meter", .string(meterText)), ("loudness", loudness),
        ])
    }

    /// Answers the `status` command: one `status: …` line, or with --json one JSON object.
    func answerStatus() {
        if json { emit(statusObject(event: "status")) } else { say(statusLine()) }
    }

    /// Writes one JSON object as a line on stdout.
    func emit(_ value: JSONValue) { Tool.write(value.text + "\n") }

    private func outputInForeground() -> Bool { tcgetpgrp(STDOUT_FILENO) == getpgrp() }

    /// The status lines as they fit the terminal: a line wider than the terminal would wrap, and
    /// more lines than it has rows would scroll, and either breaks moving the cursor back up by
    /// one row per line (each redraw would leave a copy behind). So every line is cut to one
    /// column less than the width, and when rows are short the last meter lines go first, then
    /// the oldest message lines (the first two lines and the keys stay). Unknown sizes (0, as
    /// under a pipe-fed `script`) cut nothing.
    private func linesThatFit(withMessages: Bool) -> [String] {
        var (head, meters, messages, keys) = statusParts(withMessages: withMessages)
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 else { return head + meters + messages + [keys] }
        let columns = Int(size.ws_col), rows = Int(size.ws_row)
        if rows > 3 {
            // rows − 1 lines at most: the cursor waits on the row below the area.
            let room = rows - 1 - head.count - 1
            messages = Array(messages.suffix(max(0, room)))
            meters = Array(meters.prefix(max(0, room - messages.count)))
        }
        var lines = head + meters + messages + [keys]
        if columns > 1 { lines = lines.map { $0.count < columns ? $0 : String($0.prefix(columns - 1)) } }
        return lines
    }

    /// Redraws the status area in place (terminal display only, in the foreground, until it
    /// closes at exit).
    func redraw() { draw(withMessages: true) }

    private func draw(withMessages: Bool) {
        guard display == .terminal, !areaClosed, outputInForeground() else { return }
        var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
        let lines = linesThatFit(withMessages: withMessages)
        for line in lines { text += "\r\u{1B}[2K" + line + "\n" }
        text += "\u{1B}[J"
        drawnLines = lines.count
        Tool.write(text)
    }

    /// Says an error graphthru survives, "graphthru: MESSAGE", on stderr: in a terminal whose
    /// status area is drawn, in its message lines for ``messageSeconds`` and printed below the
    /// area at exit (``closeStatusArea()``); otherwise at once (and, with a status area, shown
    /// in the message lines too).
    func complain(_ message: String) { post(.error, "graphthru: " + message) }

    /// Says a notice, "graphthru: MESSAGE", on stdout, as ``complain(_:)`` does on stderr;
    /// nothing with --quiet.
    func notice(_ message: String) { post(.notice, "graphthru: " + message) }

    private func post(_ kind: Message.Kind, _ text: String) {
        let stream = kind == .error ? STDERR_FILENO : STDOUT_FILENO
        guard display == .terminal, !areaClosed else {
            if kind == .error { Tool.write(text + "\n", to: STDERR_FILENO) }
            else if display == .json { emit(.object([("event", .string("notice")), ("text", .string(text))])) }
            else if display != .quiet { say(text) }
            return
        }
        // Kept for the area (and for exit) only where a line written now would land inside the
        // area: on this terminal, while it is ours. Otherwise written now and shown as well.
        let keep = outputInForeground() && isatty(stream) == 1
        let until = monotonicSeconds() + StatusView.messageSeconds
        if keep, var last = messages.last, last.kind == kind, last.text == text, !last.written {
            last.repeats += 1
            last.shownUntil = until
            messages[messages.count - 1] = last
        } else {
            if !keep { if kind == .error { Tool.write(text + "\n", to: STDERR_FILENO) } else { say(text) } }
            messages.append(Message(kind: kind, text: text, shownUntil: until, written: !keep))
            if messages.count > StatusView.keptMessages {
                if !messages[0].written { messagesNotKept += 1 }
                messages.removeFirst()
            }
        }
        if drawnLines > 0 { redraw() }   // before the first draw, the first draw shows it
    }

    /// Closes the status area for good, at exit: it is drawn a last time without message lines,
    /// and the messages only shown there are printed below it, in order (errors on stderr,
    /// notices on stdout), so they stay in the scrollback. Lines after this are plain.
    func closeStatusArea() {
        guard display == .terminal, !areaClosed else { return }
        draw(withMessages: false)
        areaClosed = true
        drawnLines = 0
        if messagesNotKept > 0 { Tool.write("graphthru: (\(messagesNotKept) earlier message(s) not kept)\n", to: STDERR_FILENO) }
        for i in messages.indices where !messages[i].written {
            Tool.write(messages[i].line + "\n", to: messages[i].kind == .error ? STDERR_FILENO : STDOUT_FILENO)
            messages[i].written = true
        }
    }

    /// Prints a line: above the status area in a terminal, as is otherwise (even with --quiet:
    /// answers and start-up lines go through here); with --json as `{"event":"message","text":…}`.
    func say(_ text: String) {
        if json {
            emit(.object([("event", .string("message")), ("text", .string(text))]))
        } else if display == .terminal && !areaClosed && drawnLines > 0 && outputInForeground() {
            Tool.write("\u{1B}[\(drawnLines)A\r\u{1B}[J" + text + "\n")
            drawnLines = 0
            redraw()
        } else {
            Tool.write(text + "\n")
        }
    }

    /// Reports a state change: a plain line (`mute: on`), a redraw, or nothing (--quiet).
    func report(_ line: String) {
        switch display {
        case .lines: say(line)
        case .json: emit(statusObject(event: String(line.prefix { $0 != ":" })))
        case .terminal: redraw()
        case .quiet: break
        }
    }

    /// Each wake-up of the main loop: xruns and replaced NaN/Inf samples as they happen (a line
    /// each time a count grows, as plain lines or JSON status objects), a JSON status object
    /// once a second with --json, or the status area redrawn.
    func refresh() {
        let xruns = driver.xrunCount
        if xruns != xrunsShown {
            xrunsShown = xruns
            report("xruns: \(xruns)")
        }
        // NaN/Inf samples replaced with silence (at the inputs, in a plugin, or made on the way).
        let nonFinite = monitor.nonFiniteSampleCount
        if nonFinite != nonFiniteShown {
            nonFiniteShown = nonFinite
            report("non-finite: \(nonFinite) sample(s) replaced with 0")
        }
        if display == .json {
            let now = monotonicSeconds()
            if now - lastTick >= 1 { lastTick = now; emit(statusObject(event: "tick")) }
        }
        if display == .terminal { redraw() }
    }

    /// How long the main loop may sleep, in ms: 10 redraws a second in a terminal; otherwise an
    /// xrun and sample-rate check each second, or 4 a second while keys wait for the foreground.
    func wakeInterval(waitingForForeground: Bool) -> Int32 {
        switch display {
        case .terminal: return 100
        case .lines, .json: return waitingForForeground ? 250 : 1000
        case .quiet:
            // Without a pipe to wake it, the loop checks for a signal or shutdown often.
            if driver.shutdownFileDescriptor < 0 || QuitSignals.fileDescriptor < 0 { return 50 }
            return waitingForForeground ? 250 : 1000
        }
    }

    /// The two start-up lines (client, server, rate, period, channels; the ports).
    func startupReport(lowpass: Float?) {
        guard display != .quiet else { return }
        if display == .json {
            emit(.object([
                ("event", .string("started")), ("client", .string(driver.clientName)), ("server", .string(driver.serverName)),
                ("ownServer", .bool(server != nil)), ("ownServerDriver", server.map { .string($0.driver) } ?? .null),
                ("sampleRate", .integer(Int64(driver.sampleRate))), ("period", .integer(Int64(driver.bufferSize))),
                ("channels", .integer(Int64(monitor.channels))), ("lowpassHz", lowpass.map { .number($0, decimals: 0) } ?? .null),
                ("inputs", .array(driver.inputPortNames.map { .string($0) })), ("outputs", .array(driver.outputPortNames.map { .string($0) })),
            ]))
            return
        }
        let started = server.map { " (started as a child jackd, driver \($0.driver))" } ?? ""
        say("graphthru: client '\(driver.clientName)' on JACK server '\(driver.serverName)'\(started), \(driver.sampleRate) Hz, period \(driver.bufferSize) frames, \(monitor.channels) channel(s)\(lowpass.map { ", low-pass \($0) Hz" } ?? "")")
        say("graphthru: ports \(driver.inputPortNames.joined(separator: " ")) → \(driver.outputPortNames.joined(separator: " "))")
    }

    /// The last line, after the client closed: below the status area (closed if it was not).
    func closingReport(xruns: UInt64, load: Float) {
        closeStatusArea()
        guard display != .quiet else { return }
        if display == .json {
            emit(.object([("event", .string("stopped")), ("xruns", .count(xruns)), ("dspLoad", .number(load)),
                          ("nonFiniteSamples", .count(monitor.nonFiniteSampleCount)), ("ownServerStopped", server.map { .string($0.name) } ?? .null)]))
            return
        }
        say("graphthru: stopped; \(xruns) xrun(s), JACK DSP load \(Int(load.rounded()))%\(server.map { "; server '\($0.name)' (child jackd) stopped" } ?? "")")
    }
}

// graphthru: the status view — the redrawn status area, meters, plain status lines and the message line.
import AudioGraph
import AudioGraphJACK
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

/// Where the status goes: a status area redrawn in place (stdout is a terminal), plain lines
/// (stdout is a pipe or file), or nothing but answers (--quiet).
enum Display { case terminal, lines, quiet }

/// A level in dB with one decimal, "-inf dB" for silence.
func dB(_ value: Float) -> String {
    value.isFinite && value > LevelMeter.silence ? String(format1: value) + " dB" : "-inf dB"
}

extension String {
    /// One decimal, without Foundation: -3.0, 12.0, 0.0.
    init(format1 value: Float) {
        let tenths = Int((abs(value) * 10).rounded())
        self = (value < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}

/// What graphthru shows of the monitor and the client, and every line it prints on stdout.
/// Thread: the main thread.
@MainActor
final class StatusView {
    let display: Display
    private let monitor: Monitor
    private let driver: JACKDriver
    private let server: JACKServer?
    /// Lines of the status area now on screen (the cursor is below them); 0 when none.
    private var drawnLines = 0
    private var xrunsShown: UInt64 = 0

    init(quiet: Bool, monitor: Monitor, driver: JACKDriver, server: JACKServer?) {
        display = quiet ? .quiet : (isatty(STDOUT_FILENO) == 1 ? .terminal : .lines)
        self.monitor = monitor
        self.driver = driver
        self.server = server
    }

    var muteText: String { monitor.isMuted ? "on" : "off" }
    var lowpassText: String { monitor.filterNode == nil ? "off" : "on (\(Int(monitor.cutoff.rounded())) Hz)" }

    private func meterBar(_ reading: MeterReading, width: Int = 30) -> String {
        let fraction = max(0, min(1, (reading.average + 60) / 60))
        let filled = Int((fraction * Float(width)).rounded())
        return "▕" + String(repeating: "█", count: filled) + String(repeating: "─", count: width - filled) + "▏ "
            + "\(dB(reading.average)) (peak \(dB(reading.peak)))"
    }

    /// The status area: client and server, the monitor's state, a meter bar per channel and
    /// side, the keys.
    private func statusLines() -> [String] {
        let period = driver.bufferSize
        let ms = String(format1: Float(period) * 1000 / Float(max(driver.sampleRate, 1)))
        var lines = [
            "graphthru · client '\(driver.clientName)' · JACK server '\(driver.serverName)'\(server != nil ? " (own jackd)" : "") · \(driver.sampleRate) Hz · period \(period) (\(ms) ms) · \(monitor.channels) ch",
            "mute \(muteText) · volume \(dB(monitor.volumeDB)) · low-pass \(lowpassText) · xruns \(driver.xrunCount) · DSP load \(String(format1: driver.cpuLoad))%",
        ]
        if let meters = monitor.meterReadings() {
            for (c, reading) in meters.inputs.enumerated() { lines.append("in  \(c + 1) " + meterBar(reading)) }
            for (c, reading) in meters.outputs.enumerated() { lines.append("out \(c + 1) " + meterBar(reading)) }
        } else {
            lines.append("meters: unavailable")
        }
        lines.append("keys: m mute · l low-pass · +/- volume · ? help · q quit")
        return lines
    }

    /// The `status` command's one line.
    func statusLine() -> String {
        var text = "status: mute \(muteText), volume \(dB(monitor.volumeDB)), low-pass \(lowpassText), xruns \(driver.xrunCount), DSP load \(String(format1: driver.cpuLoad))%, server '\(driver.serverName)', \(driver.sampleRate) Hz, period \(driver.bufferSize), \(monitor.channels) ch"
        if let meters = monitor.meterReadings() {
            text += ", input " + meters.inputs.map { dB($0.average) }.joined(separator: " ")
            text += ", output " + meters.outputs.map { dB($0.average) }.joined(separator: " ")
        } else {
            text += ", meters n/a"
        }
        return text
    }

    private func outputInForeground() -> Bool { tcgetpgrp(STDOUT_FILENO) == getpgrp() }

    /// The status lines as they fit the terminal: a line wider than the terminal would wrap, and
    /// more lines than it has rows would scroll, and either breaks moving the cursor back up by
    /// one row per line (each redraw would leave a copy behind). So every line is cut to one
    /// column less than the width, and when rows are short the last meter lines go first (the
    /// first two lines and the keys stay). Unknown sizes (0, as under a pipe-fed `script`) cut nothing.
    private func linesThatFit() -> [String] {
        var lines = statusLines()
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 else { return lines }
        let columns = Int(size.ws_col), rows = Int(size.ws_row)
        if rows > 3, lines.count > rows - 1 { lines = Array(lines.prefix(rows - 2)) + [lines[lines.count - 1]] }
        if columns > 1 { lines = lines.map { $0.count < columns ? $0 : String($0.prefix(columns - 1)) } }
        return lines
    }

    /// Redraws the status area in place (terminal display only, and only in the foreground).
    func redraw() {
        guard display == .terminal, outputInForeground() else { return }
        var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
        let lines = linesThatFit()
        for line in lines { text += "\r\u{1B}[2K" + line + "\n" }
        text += "\u{1B}[J"
        drawnLines = lines.count
        Tool.write(text)
    }

    /// Prints a line: above the status area in a terminal, as is otherwise (even with --quiet:
    /// answers and start-up lines go through here).
    func say(_ text: String) {
        if display == .terminal && drawnLines > 0 && outputInForeground() {
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
        case .terminal: redraw()
        case .quiet: break
        }
    }

    /// Each wake-up of the main loop: xruns as they happen (a line each time the count grows,
    /// as plain lines) or the status area redrawn.
    func refresh() {
        let xruns = driver.xrunCount
        if xruns != xrunsShown {
            xrunsShown = xruns
            if display == .lines { say("xruns: \(xruns)") }
        }
        if display == .terminal { redraw() }
    }

    /// How long the main loop may sleep, in ms: 10 redraws a second in a terminal; otherwise an
    /// xrun and sample-rate check each second, or 4 a second while keys wait for the foreground.
    func wakeInterval(waitingForForeground: Bool) -> Int32 {
        switch display {
        case .terminal: return 100
        case .lines: return waitingForForeground ? 250 : 1000
        case .quiet:
            // Without a pipe to wake it, the loop checks for a signal or shutdown often.
            if driver.shutdownFileDescriptor < 0 || QuitSignals.fileDescriptor < 0 { return 50 }
            return waitingForForeground ? 250 : 1000
        }
    }

    /// The two start-up lines (client, server, rate, period, channels; the ports).
    func startupReport(lowpass: Float?) {
        guard display != .quiet else { return }
        let started = server.map { " (started as a child jackd, driver \($0.driver))" } ?? ""
        say("graphthru: client '\(driver.clientName)' on JACK server '\(driver.serverName)'\(started), \(driver.sampleRate) Hz, period \(driver.bufferSize) frames, \(monitor.channels) channel(s)\(lowpass.map { ", low-pass \($0) Hz" } ?? "")")
        say("graphthru: ports \(driver.inputPortNames.joined(separator: " ")) → \(driver.outputPortNames.joined(separator: " "))")
    }

    /// The last line, after the client closed: the status area stays as it was last drawn and
    /// the summary goes below it.
    func closingReport(xruns: UInt64, load: Float) {
        if display == .terminal && drawnLines > 0 && outputInForeground() { drawnLines = 0 }
        guard display != .quiet else { return }
        say("graphthru: stopped; \(xruns) xrun(s), JACK DSP load \(Int(load.rounded()))%\(server.map { "; server '\($0.name)' (child jackd) stopped" } ?? "")")
    }
}

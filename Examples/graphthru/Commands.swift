// graphthru: the commands — single keys in a terminal, line commands otherwise, each acting on the monitor and reported.
import AudioGraph
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

/// Turns keys and command lines into live edits of the monitor, and says what they did.
/// Keys need the terminal in non-canonical mode and in the foreground: a graphthru started
/// with `&` leaves the terminal alone (control it with signals) until `fg`.
/// Thread: the main thread.
@MainActor
final class Commands {
    private let monitor: Monitor
    private let view: StatusView
    /// Whether standard input is a terminal (keys) rather than a pipe or file (lines).
    let interactive = isatty(STDIN_FILENO) == 1
    /// Whether the terminal is in non-canonical mode now, sending single keys.
    private(set) var keyMode = false
    private var savedTerminal = termios()
    private var keyHelp: String {
        "keys: m mute/unmute · l low-pass on/off (\(Int(monitor.cutoff.rounded())) Hz) · + / - output volume ±3 dB · u dBFS/LUFS meters (now \(view.meterText)) · ? help · q quit"
    }
    /// Where the terminal is in an escape sequence (arrow and function keys send `ESC [ A`,
    /// `ESC O P`): 1 after ESC, 2 inside the sequence; its bytes are not keys.
    private var escapeState = 0
    private let lineHelp = "commands: mute | unmute | toggle | lowpass [on|off|HZ] | volume [+|-|DB] | + | - | meter [dbfs|lufs] | status | dump | help | quit"

    init(monitor: Monitor, view: StatusView) {
        self.monitor = monitor
        self.view = view
    }

    /// Started in the background of a shell, touching the terminal must not stop the process (a
    /// stopped JACK client stalls the whole server): such calls fail instead, and keys stay off.
    /// Called first thing, before anything is written to the terminal.
    static func ignoreTerminalStops() {
        signal(SIGTTOU, SIG_IGN)
        signal(SIGTTIN, SIG_IGN)
    }

    // MARK: - Terminal

    /// Switches the terminal to single keys when standard input is one and it is ours now.
    func enterKeyModeIfForeground() {
        guard interactive, !keyMode, tcgetpgrp(STDIN_FILENO) == getpgrp(), tcgetattr(STDIN_FILENO, &savedTerminal) == 0 else { return }
        var raw = savedTerminal
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return }
        keyMode = true
        if view.display == .lines { view.say("graphthru: " + keyHelp) }
    }

    /// Gives the terminal back as it was (at exit, or when sent to the background).
    func leaveKeyMode() {
        if keyMode { tcsetattr(STDIN_FILENO, TCSANOW, &savedTerminal); keyMode = false }
    }

    // MARK: - Input

    /// Acts on one key; false for quit. A printable key that does nothing says so (in the
    /// status area's message lines); escape sequences, spaces and control keys are ignored.
    func key(_ byte: UInt8) -> Bool {
        switch escapeState {
        case 1:
            escapeState = byte == UInt8(ascii: "[") || byte == UInt8(ascii: "O") ? 2 : 0
            if escapeState == 2 { return true }
        case 2:
            if (0x40...0x7E).contains(byte) { escapeState = 0 }
            return true
        default: break
        }
        switch byte {
        case UInt8(ascii: "m"), UInt8(ascii: "M"): setMuted(!monitor.isMuted)
        case UInt8(ascii: "q"), UInt8(ascii: "Q"): return false
        case UInt8(ascii: "l"), UInt8(ascii: "L"): setLowpass(monitor.filterNode == nil)
        case UInt8(ascii: "+"), UInt8(ascii: "="): setVolume(monitor.volumeDB + Monitor.volumeStep)
        case UInt8(ascii: "-"), UInt8(ascii: "_"): setVolume(monitor.volumeDB - Monitor.volumeStep)
        case UInt8(ascii: "u"), UInt8(ascii: "U"): setMeter(monitor.loudness == nil ? .lufs : .dbfs)
        case UInt8(ascii: "?"), UInt8(ascii: "h"), UInt8(ascii: "H"): view.say("graphthru: " + keyHelp)
        case 0x1B: escapeState = 1
        case 0x21...0x7E: view.complain("key '\(Character(Unicode.Scalar(byte)))' does nothing (m mute · l low-pass · +/- volume · u dBFS/LUFS · ? help · q quit)")
        default: break
        }
        return true
    }

    /// Acts on one command line; false for quit.
    func line(_ text: String) -> Bool {
        let words = text.trimmingWhitespace().lowercased().split(separator: " ").map(String.init)
        switch (words.first ?? "", words.count > 1 ? words[1] : nil) {
        case ("", _): break
        case (let command, _) where words.count > 2:
            view.complain("'\(command)' takes at most one word after it, not '\(words.dropFirst().joined(separator: " "))' (\(lineHelp))")
        case ("mute", nil): setMuted(true)
        case ("unmute", nil): setMuted(false)
        case ("toggle", nil), ("m", nil): setMuted(!monitor.isMuted)
        case ("quit", nil), ("q", nil), ("exit", nil): return false
        case ("lowpass", nil), ("l", nil): setLowpass(monitor.filterNode == nil)
        case ("lowpass", "on"?): setLowpass(true)
        case ("lowpass", "off"?): setLowpass(false)
        case ("lowpass", let hz?) where Float(hz) != nil: setCutoff(Float(hz)!)
        case ("lowpass", let bad?): view.complain("lowpass takes on, off or a frequency in Hz, not '\(bad)'")
        case ("+", nil), ("volume", "+"?), ("up", nil): setVolume(monitor.volumeDB + Monitor.volumeStep)
        case ("-", nil), ("volume", "-"?), ("down", nil): setVolume(monitor.volumeDB - Monitor.volumeStep)
        case ("volume", let db?) where Float(db).map({ $0.isFinite }) == true: setVolume(Float(db)!)
        case ("volume", nil): view.say("volume: \(dB(monitor.volumeDB))")
        case ("volume", let bad?): view.complain("volume takes +, - or a level in dB, not '\(bad)'")
        case ("meter", nil), ("u", nil): setMeter(monitor.loudness == nil ? .lufs : .dbfs)
        case ("meter", let word?) where MeterScale(rawValue: word) != nil: setMeter(MeterScale(rawValue: word)!)
        case ("meter", let bad?): view.complain("meter takes dbfs or lufs, not '\(bad)'")
        case ("status", nil): view.answerStatus()
        case ("dump", nil): view.say(monitor.graph.description)
        case ("help", nil), ("?", nil): view.say(lineHelp)
        default: view.complain("unknown command '\(text.trimmingWhitespace())' (\(lineHelp))")
        }
        return true
    }

    // MARK: - Actions

    func setMuted(_ muted: Bool) {
        monitor.setMuted(muted)
        view.report("mute: \(view.muteText)")
    }

    /// Shows the levels in dBFS or the outputs' loudness in LUFS (starting the loudness meter
    /// afresh, or stopping it), and says `meter: dbfs|lufs`.
    func setMeter(_ scale: MeterScale) {
        do { try monitor.setLoudness(scale == .lufs) } catch { view.complain("could not switch the meter to \(scale.rawValue): \(error)") }
        view.report("meter: \(view.meterText)")
    }

    func setVolume(_ db: Float) {
        var failure: AudioUnitError?
        do { try monitor.setVolume(db) } catch { failure = error }
        if monitor.volumeDB != db {
            let low = Int(Monitor.volumeRange.lowerBound), high = Int(Monitor.volumeRange.upperBound)
            view.complain("volume \(String(format1: db)) dB is outside \(low)…+\(high) dB; set to \(String(format1: monitor.volumeDB)) dB")
        }
        if let failure { view.complain("could not set the volume: \(failure)") }
        view.report("volume: \(dB(monitor.volumeDB))")
    }

    func setLowpass(_ on: Bool) {
        do {
            try monitor.setLowpass(on)
            view.report("low-pass: \(view.lowpassText)")
        } catch {
            view.complain("could not switch the low-pass: \(error)")
        }
    }

    func setCutoff(_ hz: Float) {
        let nyquist = monitor.nyquist
        guard hz.isFinite, hz >= 10, hz <= nyquist else {
            view.complain("lowpass takes on, off or a frequency of 10…\(nyquist) Hz at the server's \(monitor.sampleRate) Hz, not \(hz)")
            return
        }
        do { try monitor.setCutoff(hz) } catch { view.complain("\(error)") }
        if monitor.filterNode == nil { setLowpass(true) } else { view.report("low-pass: \(view.lowpassText)") }
    }
}

extension String {
    /// The string without leading and trailing whitespace (no Foundation).
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars.drop(while: { $0.properties.isWhitespace })
        return String(String.UnicodeScalarView(scalars.reversed().drop(while: { $0.properties.isWhitespace }).reversed()))
    }
}

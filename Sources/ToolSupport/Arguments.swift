// ToolSupport: option parsing — the command line walked one argument at a time, values taken and bad ones refused with status 2.
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// A tool's command line, read front to back. Every refusal prints `tool: message` on stderr
/// and exits with ``ExitStatus/usage`` (2): a bad option is a mistake to correct, not a failure.
/// Thread: the main thread (refusals exit the process).
public struct Arguments {
    /// The tool whose messages and exits these are.
    public let tool: Tool
    private var remaining: ArraySlice<String>

    /// The arguments after the executable's name, unless others are given.
    public init(tool: Tool, _ arguments: [String] = Array(CommandLine.arguments.dropFirst())) {
        self.tool = tool
        remaining = arguments[...]
    }

    /// The next argument, or nil at the end.
    public mutating func next() -> String? { remaining.popFirst() }

    /// The value after `flag`. Exits 2 with "FLAG needs a value (see --help)" when none is left,
    /// or when the next argument is another long option (`--record --duration 1`: the value was
    /// left out; a file really named so is `./--name`).
    public mutating func value(for flag: String) -> String {
        guard let value = remaining.first, !(value.hasPrefix("--") && value.count > 2 && value.dropFirst(2).first!.isLetter) else {
            tool.fail("\(flag) needs a value (see --help)", status: ExitStatus.usage)
        }
        return remaining.popFirst()!
    }

    /// The next argument when it is a value rather than another option (it does not start with
    /// `-`), for options whose value may be left out; nil otherwise (nothing is consumed).
    public mutating func optionalValue() -> String? {
        guard let next = remaining.first, !next.hasPrefix("-") else { return nil }
        return remaining.popFirst()
    }

    /// The whole number after `flag`, within `range`. Exits 2 with "FLAG must be a whole number
    /// LO…HI, not 'V'" otherwise.
    public mutating func integer(for flag: String, in range: ClosedRange<Int>) -> Int {
        let text = value(for: flag)
        guard let n = Int(text), range.contains(n) else {
            tool.fail("\(flag) must be a whole number \(range.lowerBound)…\(range.upperBound), not '\(text)'", status: ExitStatus.usage)
        }
        return n
    }

    /// The recording sample format after `flag`: int16, int24 or float32. Exits 2 with "FLAG
    /// takes int16, int24 or float32, not 'V'" otherwise.
    public mutating func sampleFormat(for flag: String) -> RecordingSettings.SampleFormat {
        let text = value(for: flag)
        guard let format = RecordingSettings.SampleFormat(rawValue: text) else {
            tool.fail("\(flag) takes int16, int24 or float32, not '\(text)'", status: ExitStatus.usage)
        }
        return format
    }

    /// Refuses an argument no option takes: exits 2 with "unknown option 'ARG' (see --help)".
    public func unknown(_ argument: String) -> Never {
        tool.fail("unknown option '\(argument)' (see --help)", status: ExitStatus.usage)
    }
}

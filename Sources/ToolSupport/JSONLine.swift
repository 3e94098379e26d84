// ToolSupport: one JSON object per line for the tools' --json status — strict JSON (RFC 8259) without Foundation.

/// A JSON value the tools print, written as strict JSON: a number that is not finite (a level
/// of silence at −inf dB, a NaN) is written `null`, never `-inf` or `NaN`, so any strict parser
/// (Python's `json` with `parse_constant` refusing constants, Foundation's JSONSerialization)
/// accepts every line. Strings are escaped (`"`, `\`, control characters as `\u00XX`); object
/// keys keep the order given.
/// Thread: any (a value type).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A counter or a whole number, written without a fraction.
    case integer(Int64)
    /// A measurement, written with at most `decimals` decimals (0…6); non-finite as `null`.
    case number(Double, decimals: Int)
    case string(String)
    case array([JSONValue])
    /// Keys and values in the order written.
    case object([(String, JSONValue)])

    /// An unsigned counter (clamped to Int64's range, 9.2e18: no counter gets there).
    public static func count(_ value: UInt64) -> JSONValue { .integer(Int64(clamping: value)) }

    /// A Float measurement with `decimals` decimals, or `null` when it is not finite.
    public static func number(_ value: Float, decimals: Int = 1) -> JSONValue { .number(Double(value), decimals: decimals) }

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.text == b.text }

    /// The value as one line of strict JSON (no newline inside: newlines in strings are `\n`).
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .number(let x, let decimals): out += JSONValue.format(x, decimals: decimals)
        case .string(let s): JSONValue.quote(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSONValue.quote(key, into: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    /// `x` rounded to `decimals` (0…6) decimals in plain notation (`-12.1`, `0.0`, `48000`), or
    /// `null` when it is not finite or too large for plain notation (|x| ≥ 1e15).
    static func format(_ x: Double, decimals: Int) -> String {
        guard x.isFinite, abs(x) < 1e15 else { return "null" }
        let places = max(0, min(6, decimals))
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        let scaled = Int64((abs(x) * Double(scale)).rounded())
        let whole = scaled / scale, fraction = scaled % scale
        var text = (x < 0 && scaled != 0 ? "-" : "") + String(whole)
        if places > 0 {
            let digits = String(fraction)
            text += "." + String(repeating: "0", count: places - digits.count) + digits
        }
        return text
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20 || c.value == 0x7F:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

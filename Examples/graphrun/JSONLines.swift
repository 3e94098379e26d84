// graphrun: JSON positions — the line of a value in JSON text found by its path, for errors that name line and field.

/// A step of a path into the JSON text.
enum JSONPathStep: CustomStringConvertible {
    case key(String), index(Int)
    var description: String {
        switch self { case .key(let k): ".\(k)"; case .index(let i): "[\(i)]" }
    }
}

/// A path as an error names the field: `nodes[1].parameters.cutoff`.
func fieldName(_ path: [JSONPathStep]) -> String {
    var text = path.map(\.description).joined()
    if text.hasPrefix(".") { text.removeFirst() }
    return text
}

/// Finds the line of a value in JSON text, by path. JSONSerialization gives no positions, so
/// this walks the text's structure (strings, objects, arrays, scalars) without building values.
/// Each array's element offsets and each object's member offsets are found once and kept, and
/// lines come from a table of line starts, so naming the lines of all N nodes of a file costs
/// one pass over it, not N (a 3,000-node file took minutes before).
struct JSONLineLocator {
    let bytes: [UInt8]
    /// Offsets of the first byte of each line after the first.
    private let lineStarts: [Int]
    private let cache = Cache()

    private final class Cache {
        /// An array's '[' offset → its elements' offsets.
        var elements: [Int: [Int]] = [:]
        /// An object's '{' offset → each key (its first occurrence) → the key's and the value's offsets.
        var members: [Int: [String: (key: Int, value: Int)]] = [:]
    }

    init(_ text: String) {
        bytes = Array(text.utf8)
        var starts: [Int] = []
        for (i, b) in bytes.enumerated() where b == UInt8(ascii: "\n") { starts.append(i + 1) }
        lineStarts = starts
    }

    /// The 1-based line of the value at `path` (of its key, for an object member), or of the
    /// deepest part of the path that exists.
    func line(of path: [JSONPathStep]) -> Int { lineAt(offset(of: path)) }

    /// The byte offset of the value at `path` (of its key, for an object member), or of the
    /// deepest part of the path that exists: the file's order of an object's members, which
    /// JSONSerialization does not keep.
    func offset(of path: [JSONPathStep]) -> Int {
        var i = 0
        skipSpace(&i)
        var found = i
        for step in path {
            guard i < bytes.count else { break }
            switch step {
            case .key(let key):
                guard bytes[i] == UInt8(ascii: "{"), let member = members(at: i)[key] else { return found }
                found = member.key
                i = member.value
            case .index(let index):
                guard bytes[i] == UInt8(ascii: "["), index >= 0 else { return found }
                let elements = elements(at: i)
                guard index < elements.count else { return found }
                i = elements[index]
                found = i
            }
        }
        return found
    }

    /// The members of the object whose '{' is at `start`.
    private func members(at start: Int) -> [String: (key: Int, value: Int)] {
        if let known = cache.members[start] { return known }
        var members: [String: (key: Int, value: Int)] = [:]
        var i = start + 1
        while true {
            skipSpace(&i)
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { break }
            let keyStart = i
            let name = readString(&i)
            skipSpace(&i)
            if i < bytes.count, bytes[i] == UInt8(ascii: ":") { i += 1 }
            skipSpace(&i)
            if members[name] == nil { members[name] = (keyStart, i) }
            skipValue(&i)
            skipSpace(&i)
            if i < bytes.count, bytes[i] == UInt8(ascii: ",") { i += 1 } else { break }
        }
        cache.members[start] = members
        return members
    }

    /// The offsets of the elements of the array whose '[' is at `start`.
    private func elements(at start: Int) -> [Int] {
        if let known = cache.elements[start] { return known }
        var elements: [Int] = []
        var i = start + 1
        while true {
            skipSpace(&i)
            guard i < bytes.count, bytes[i] != UInt8(ascii: "]") else { break }
            elements.append(i)
            skipValue(&i)
            skipSpace(&i)
            if i < bytes.count, bytes[i] == UInt8(ascii: ",") { i += 1 } else { break }
        }
        cache.elements[start] = elements
        return elements
    }

    /// The 1-based line of a byte offset.
    func lineAt(_ offset: Int) -> Int {
        // Lines starting at or before `offset`, found by bisection.
        var low = 0, high = lineStarts.count
        while low < high {
            let mid = (low + high) / 2
            if lineStarts[mid] <= offset { low = mid + 1 } else { high = mid }
        }
        return 1 + low
    }

    /// The 1-based line and column (in characters) of a byte offset.
    func position(at offset: Int) -> (line: Int, column: Int) {
        let end = min(max(offset, 0), bytes.count)
        let line = lineAt(end)
        let lineStart = line == 1 ? 0 : lineStarts[line - 2]
        return (line, String(decoding: bytes[lineStart..<end], as: UTF8.self).count + 1)
    }

    /// The offset just after the last byte that is not white space: where a parser that ran out
    /// of text stopped, as a reader sees it (not on the empty line after a final newline).
    var endOfContent: Int {
        var end = bytes.count
        while end > 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[end - 1]) { end -= 1 }
        return end
    }

    /// The offset of the first byte that is not white space: where the file's value starts.
    var startOfContent: Int {
        var i = 0
        skipSpace(&i)
        return i
    }

    private func skipSpace(_ i: inout Int) {
        while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    private func readString(_ i: inout Int) -> String {
        i += 1
        var out: [UInt8] = []
        while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
            if bytes[i] == UInt8(ascii: "\\") { i += 1 }
            if i < bytes.count { out.append(bytes[i]) }
            i += 1
        }
        i += 1
        return String(decoding: out, as: UTF8.self)
    }

    private func skipString(_ i: inout Int) {
        i += 1
        while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
            if bytes[i] == UInt8(ascii: "\\") { i += 1 }
            i += 1
        }
        i += 1
    }

    private func skipValue(_ i: inout Int) {
        guard i < bytes.count else { return }
        switch bytes[i] {
        case UInt8(ascii: "\""): skipString(&i)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while i < bytes.count {
                let b = bytes[i]
                if b == UInt8(ascii: "\"") { skipString(&i); continue }
                if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") { depth += 1 }
                if b == UInt8(ascii: "}") || b == UInt8(ascii: "]") { depth -= 1; if depth == 0 { i += 1; return } }
                i += 1
            }
        default:
            while i < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]")].contains(bytes[i]) { i += 1 }
        }
    }
}

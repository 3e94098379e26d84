// Tests, docs: the tool commands in README, Docs and the DocC articles run as written after scripts/install — installed tools only, options their --help has, a shown --help the real one.
import AudioGraphTestSupport
import Foundation
import Testing

/// What a reader copies from the docs must run: every command that starts with one of the
/// package's executables names a tool `scripts/install` puts on `PATH` (the others are written
/// `swift run …`), in one form (no `.build/release/graphthru`, no `swift run graphrun`), with
/// options that tool's `--help` lists; a `$ TOOL --help` block shows exactly what it prints; and
/// Getting Started lists every package `scripts/setup` installs. No JACK server is needed.
@Suite("Documented commands")
struct DocumentedCommandsTests {
    /// The package's folder, from this file's path (Tests/AudioGraphJACKTests/…).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    /// README, Docs/*.md and every DocC article, as paths relative to the package.
    static func documents() throws -> [String] {
        var paths = ["README.md"]
        let files = FileManager.default
        paths += try files.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path).filter { $0.hasSuffix(".md") }.sorted().map { "Docs/\($0)" }
        for module in try files.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path).sorted() {
            let catalog = "Sources/\(module)/\(module).docc"
            guard let articles = try? files.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path) else { continue }
            paths += articles.filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
        }
        return paths
    }

    /// The executables Package.swift builds.
    static func executables() throws -> Set<String> {
        let package = try read("Package.swift")
        let pattern = try NSRegularExpression(pattern: #"\.executable\(name: "([^"]+)""#)
        let range = NSRange(package.startIndex..., in: package)
        return Set(pattern.matches(in: package, range: range).map { String(package[Range($0.range(at: 1), in: package)!]) })
    }

    /// The words of a bash array assignment `NAME=(a b c)` in a script.
    static func array(_ name: String, in script: String) -> [String]? {
        guard let line = script.split(separator: "\n").first(where: { $0.hasPrefix("\(name)=(") }) else { return nil }
        return line.dropFirst(name.count + 2).prefix { $0 != ")" }.split(separator: " ").map(String.init)
    }

    /// A line of shell split into simple commands (at `;`, `&`, `|`), each a list of words:
    /// quotes removed, a comment dropped, redirections (`< ctl`, `>&3`, `3>ctl`) left out.
    static func commands(in line: String) -> [[String]] {
        var commands: [[String]] = [[]]
        var word = "", inWord = false
        var quote: Character?
        let chars = Array(line)
        var i = 0
        func endWord() {
            if inWord { commands[commands.count - 1].append(word) }
            word = ""
            inWord = false
        }
        while i < chars.count {
            let c = chars[i]
            if let q = quote {
                if c == q { quote = nil } else { word.append(c) }
                i += 1
                continue
            }
            switch c {
            case "'", "\"": quote = c; inWord = true
            case " ", "\t": endWord()
            case "#" where !inWord: i = chars.count; continue
            case ";", "&", "|": endWord(); commands.append([])
            case "<", ">":
                if inWord && word.allSatisfy(\.isNumber) { word = ""; inWord = false } else { endWord() }
                while i < chars.count, "<>&".contains(chars[i]) || chars[i].isNumber { i += 1 }
                while i < chars.count, chars[i] == " " { i += 1 }
                while i < chars.count, !" ;&|<>".contains(chars[i]) { i += 1 }
                continue
            default: word.append(c); inWord = true
            }
            i += 1
        }
        endWord()
        return commands.map { words in Array(words.drop { $0.range(of: #"^[A-Za-z_][A-Za-z0-9_]*="#, options: .regularExpression) != nil }) }
            .filter { !$0.isEmpty }
    }

    /// The command lines of a document: each line of a sh/bash/shell code block, a `$ ` line
    /// of another code block, and each inline code span of two words or more, with its line
    /// number; and the `$ TOOL --help` blocks with the output they show.
    static func commandLines(of text: String) -> (lines: [(Int, String)], helps: [(Int, String, String)]) {
        var lines: [(Int, String)] = [], helps: [(Int, String, String)] = []
        var fence: String?
        var shownHelp: (line: Int, tool: String, output: [String])?
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            let number = index + 1
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") {
                if fence == nil { fence = String(trimmed.dropFirst(3)) } else {
                    if let help = shownHelp { helps.append((help.line, help.tool, help.output.joined(separator: "\n"))) }
                    fence = nil
                    shownHelp = nil
                }
                continue
            }
            if let kind = fence {
                if ["sh", "bash", "shell"].contains(kind) { lines.append((number, line)) } else if line.hasPrefix("$ ") {
                    let command = String(line.dropFirst(2))
                    lines.append((number, command))
                    let words = command.split(separator: " ")
                    if words.count == 2, words[1] == "--help" { shownHelp = (number, String(words[0]), []) }
                } else {
                    shownHelp?.output.append(line)
                }
                continue
            }
            // Inline code spans (not ``symbol links``) of two words or more.
            var rest = Substring(line)
            while let open = rest.firstIndex(of: "`") {
                let after = rest[rest.index(after: open)...]
                if after.hasPrefix("`") { rest = after.drop { $0 == "`" }.drop { $0 != "`" }.drop { $0 == "`" }; continue }
                guard let close = after.firstIndex(of: "`") else { break }
                let span = after[..<close]
                if span.split(separator: " ").count >= 2 { lines.append((number, String(span))) }
                rest = after[after.index(after: close)...]
            }
        }
        return (lines, helps)
    }

    /// A tool's --help output (the tool built beside this test).
    static func help(_ tool: String) throws -> String {
        let process = try ToolProcess(tool, ["--help"], server: "unused")
        _ = process.waitForExit()
        return process.stdout
    }

    /// Whether `help` lists `option` (followed by a space, `=`, `]`, `,`, `)` or the line's end).
    static func lists(_ help: String, _ option: String) -> Bool {
        var searchFrom = help.startIndex
        while let found = help.range(of: option, range: searchFrom..<help.endIndex) {
            if found.upperBound == help.endIndex || !(help[found.upperBound].isLetter || help[found.upperBound].isNumber || help[found.upperBound] == "-") { return true }
            searchFrom = found.upperBound
        }
        return false
    }

    @Test func everyToolCommandNamesAnInstalledToolAndItsRealOptions() throws {
        let executables = try Self.executables()
        let installScript = try Self.read("scripts/install")
        let installed = try #require(Self.array("tools", in: installScript), "scripts/install has a tools=(…) line")
        #expect(Set(installed) == ["graphthru", "graphrun", "graphrecord", "graphvoice"], "scripts/install installs the four tools: \(installed)")
        #expect(FileManager.default.isExecutableFile(atPath: Self.root.appendingPathComponent("scripts/install").path))
        var helps: [String: String] = [:]
        for tool in installed { helps[tool] = try Self.help(tool) }

        var problems: [String] = [], checked = 0
        for document in try Self.documents() {
            let (lines, shownHelps) = Self.commandLines(of: try Self.read(document))
            for (number, line) in lines {
                for words in Self.commands(in: line) {
                    let at = "\(document):\(number): `\(line.trimmingCharacters(in: .whitespaces))`"
                    let first = words[0]
                    let name = String(first.split(separator: "/").last ?? "")
                    if first.contains("/"), first.contains(".build/"), executables.contains(name) {
                        problems.append("\(at): write `\(name)` (scripts/install puts it on PATH), not a path into .build")
                        continue
                    }
                    if first == "swift", words.count > 2, words[1] == "run" {
                        var rest = words.dropFirst(2)
                        while let option = rest.first, option.hasPrefix("-") { rest = rest.dropFirst(option == "-c" ? 2 : 1) }
                        if let product = rest.first, installed.contains(product) {
                            problems.append("\(at): write `\(product) …` as installed by scripts/install, not `swift run`")
                        }
                        continue
                    }
                    guard executables.contains(first) else { continue }
                    checked += 1
                    guard let help = helps[first] else {
                        problems.append("\(at): \(first) is not installed by scripts/install; write `swift run -c release \(first) …`")
                        continue
                    }
                    for word in words.dropFirst() where word.hasPrefix("--") {
                        let option = String(word.prefix { $0 != "=" })
                        if !Self.lists(help, option) { problems.append("\(at): \(first) --help has no \(option)") }
                    }
                }
            }
            for (number, tool, shown) in shownHelps {
                guard let real = helps[tool] else { problems.append("\(document):\(number): $ \(tool) --help: not an installed tool"); continue }
                if shown != real.trimmingCharacters(in: .newlines) {
                    let shownLines = shown.components(separatedBy: "\n"), realLines = real.trimmingCharacters(in: .newlines).components(separatedBy: "\n")
                    let first = zip(shownLines, realLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(shownLines.count, realLines.count)
                    problems.append("\(document):\(number): the `\(tool) --help` shown differs from what it prints, from its line \(first + 1): shown '\(first < shownLines.count ? shownLines[first] : "(end)")', printed '\(first < realLines.count ? realLines[first] : "(end)")'")
                }
            }
        }
        #expect(checked >= 20, "the docs' tool commands were found: \(checked)")
        #expect(problems.isEmpty, "\(problems.count) doc command(s) would not run as written after scripts/install:\n\(problems.joined(separator: "\n"))")
    }

    /// Getting Started lists every Debian package scripts/setup installs (libsamplerate0-dev
    /// was once missing).
    @Test func gettingStartedListsEveryPackageSetupInstalls() throws {
        let packages = try #require(Self.array("packages", in: try Self.read("scripts/setup")), "scripts/setup has a packages=(…) line")
        #expect(packages.contains("libsamplerate0-dev"))
        let page = try Self.read("Docs/GettingStarted.md")
        let missing = packages.filter { !page.contains("`\($0)`") }
        #expect(missing.isEmpty, "Docs/GettingStarted.md does not list \(missing)")
    }

    /// The command splitter the check relies on.
    @Test func shellLinesSplitIntoCommands() {
        #expect(Self.commands(in: "mkfifo ctl; graphthru --no-autoconnect --quiet < ctl & exec 3>ctl")
                == [["mkfifo", "ctl"], ["graphthru", "--no-autoconnect", "--quiet"], ["exec"]])
        #expect(Self.commands(in: "JACK_DEFAULT_SERVER=mine graphrun x.json --input 'system:capture_.*'   # a comment --nope")
                == [["graphrun", "x.json", "--input", "system:capture_.*"]])
        #expect(Self.commands(in: "echo mute >&3; echo \"volume -6\" >&3 && graphrecord a.wav") == [["echo", "mute"], ["echo", "volume -6"], ["graphrecord", "a.wav"]])
    }
}

import Foundation
import Testing

extension JACKIntegration {
    /// graphrun: graph files run against a real jackd, refused with line and field, and
    /// followed live as they are edited.
    @Suite("graphrun against a real jackd")
    struct GraphrunTests {
        let server = TestServer.shared

        /// Examples/graphthru.json, found from the test bundle's location (…/.build/<config>/).
        static var shippedChain: String {
            var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            while dir.path != "/" {
                let candidate = dir.appendingPathComponent("Examples/graphthru.json")
                if FileManager.default.fileExists(atPath: candidate.path) { return (try? String(contentsOf: candidate, encoding: .utf8)) ?? "" }
                dir.deleteLastPathComponent()
            }
            let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/graphthru.json")
            return (try? String(contentsOf: here, encoding: .utf8)) ?? ""
        }

        func temporaryFile(_ text: String) throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(UUID().uuidString).json").path
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            return path
        }

        @Test func runsTheShippedChainBitExactAndEditsApplyLive() throws {
            let chain = Self.shippedChain
            #expect(chain.contains("\"mutegate\""), "Examples/graphthru.json found")
            let path = try temporaryFile(chain)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let name = "gr-live-\(getpid())"
            let tool = try ToolProcess("graphrun", [path, "--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("graphrun: running"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-gr", play: speech, captureFrames: speech.count + 8192)
            probe.connect(probe.outPort, "\(name):in_1")
            probe.connect("\(name):out_1", probe.inPort)
            #expect(exactDelay(of: speech, in: probe.run()) != nil, "graphthru's chain from the file is bit-exact")

            // A parameter: the mixer's output volume to 0.5 — every sample exactly halved.
            try chain.replacingOccurrences(of: "\"parameters\": { \"volume\": 1 }", with: "\"parameters\": { \"volume\": 0.5 }")
                .write(toFile: path, atomically: false, encoding: .utf8)
            #expect(tool.waitFor("reloaded \(path): 1 parameter(s) changed"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            usleep(100_000)
            #expect(exactDelay(of: speech.map { $0 * 0.5 }, in: probe.run()) != nil, "volume 0.5 applied live")

            // A shape change: a low-pass node inserted before the gate, without a restart.
            var edited = chain.replacingOccurrences(of: "\"nodes\": [", with: "\"nodes\": [\n    { \"id\": \"lp\", \"type\": \"lowpass\", \"parameters\": { \"cutoff\": 1000 } },")
            edited = edited.replacingOccurrences(of: "{ \"from\": \"io\", \"to\": \"gate\" }", with: "{ \"from\": \"io\", \"to\": \"lp\" }, { \"from\": \"lp\", \"to\": \"gate\" }")
            try edited.write(toFile: path, atomically: false, encoding: .utf8)
            #expect(tool.waitFor("reloaded \(path): added lp"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            usleep(100_000)
            let tone = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 8000 * Double($0) / 48_000)) }
            let toneProbe = ProbeClient(server: server, name: "probe-gr-tone", play: tone, captureFrames: tone.count + 8192)
            toneProbe.connect(toneProbe.outPort, "\(name):in_1")
            toneProbe.connect("\(name):out_1", toneProbe.inPort)
            let out = toneProbe.run()[24_000..<48_000]
            let rms = (out.reduce(0.0) { $0 + Double($1 * $1) } / Double(out.count)).squareRoot()
            #expect(20 * log10(rms / (0.5 / 2.0.squareRoot())) < -30, "8 kHz through the added 1 kHz low-pass")

            // A bad edit is refused with its line and field; the graph keeps running as it was.
            let bad = edited.replacingOccurrences(of: "\"cutoff\": 1000", with: "\"cutoff\": 90000")
            try bad.write(toFile: path, atomically: false, encoding: .utf8)
            let badLine = 1 + (bad.components(separatedBy: "\n").firstIndex { $0.contains("\"cutoff\": 90000") } ?? -1)
            #expect(tool.waitForError("\(path):\(badLine): nodes[0].parameters.cutoff: 90000.0 Hz is above half the server's rate (24000 Hz); still running the previous version"), "stderr: \(tool.stderr)")
            #expect(tool.waitForError("AudioGraph: "), "the report shows the graph that keeps running: \(tool.stderr)")
            #expect(tool.process.isRunning)
            // Back to the shipped chain: low-pass removed, volume 1 — bit-exact again.
            try chain.write(toFile: path, atomically: false, encoding: .utf8)
            #expect(tool.waitFor("removed lp"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            usleep(100_000)
            #expect(exactDelay(of: speech, in: probe.run()) != nil, "bit-exact after the live edits are undone")

            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        /// Files with one mistake each: the expected `line: field: message` start.
        static let badFiles: [(String, String)] = [
            ("{\n  \"channels\": 2,\n  \"nodes\": [,\n  ]\n}\n", ":3: not valid JSON"),
            ("{\n  \"nodes\": [\n    { \"id\": \"lp\", \"type\": \"lowpass\",\n      \"parameters\": { \"cutof\": 1000 } }\n  ],\n  \"connections\": []\n}\n",
             ":4: nodes[0].parameters.cutof: a lowpass has no parameter 'cutof'"),
            ("{\n  \"nodes\": [],\n  \"connections\": [\n    { \"from\": \"io\", \"to\": \"io\" },\n    { \"from\": \"io\", \"to\": \"mixer\" }\n  ]\n}\n",
             ":5: connections[1].to: no node with id \"mixer\""),
            ("{\n  \"channels\": 65,\n  \"nodes\": [],\n  \"connections\": []\n}\n", ":2: channels: must be a whole number 1…64"),
            ("{\n  \"nodes\": [ { \"id\": \"g\", \"type\": \"gate\" } ],\n  \"connections\": []\n}\n", ":2: nodes[0].type: must be one of: lowpass, mutegate, mixer"),
            ("{\n  \"nodes\": [\n    { \"id\": \"a\", \"type\": \"lowpass\" },\n    { \"id\": \"b\", \"type\": \"lowpass\" }\n  ],\n  \"connections\": [\n    { \"from\": \"a\", \"to\": \"b\" },\n    { \"from\": \"b\", \"to\": \"a\" }\n  ]\n}\n",
             ":8: connections[1]: b → a closes a cycle"),
        ]

        @Test(arguments: 0..<GraphrunTests.badFiles.count)
        func badFilesAreRefusedWithLineAndField(_ index: Int) throws {
            let (text, expected) = Self.badFiles[index]
            let path = try temporaryFile(text)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let tool = try ToolProcess("graphrun", [path, "--name", "gr-bad-\(index)", "--no-autoconnect"], server: server)
            #expect(tool.waitForExit() == 2)
            #expect(tool.stderr.hasPrefix("graphrun: \(path)\(expected)"), "stderr: \(tool.stderr)")
            #expect(tool.stderr.split(separator: "\n").count == 1)
        }
    }
}

/// One of the package's executables as a child process, stdin a pipe, stdout and stderr in files.
final class ToolProcess: @unchecked Sendable {
    let process = Process()
    let stdin = Pipe()
    private let outputURL: URL
    private let errorURL: URL

    init(_ executable: String, _ arguments: [String], server: String) throws {
        process.executableURL = GraphthruProcess.binary.deletingLastPathComponent().appendingPathComponent(executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_DEFAULT_SERVER"] = server
        environment["JACK_NO_START_SERVER"] = "1"
        process.environment = environment
        process.standardInput = stdin
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("\(executable)-test-\(UUID().uuidString)")
        outputURL = base.appendingPathExtension("out")
        errorURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
    }

    var stdout: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "" }

    private func wait(_ text: String, in stream: () -> String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stream().contains(text) { return true }
            if !process.isRunning { return stream().contains(text) }
            usleep(20_000)
        }
        return false
    }
    func waitFor(_ text: String, timeout: Double = 10) -> Bool { wait(text, in: { stdout }, timeout: timeout) }
    func waitForError(_ text: String, timeout: Double = 10) -> Bool { wait(text, in: { stderr }, timeout: timeout) }

    func send(_ line: String) { stdin.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    func waitForExit(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate(); process.waitUntilExit(); return nil }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: outputURL)
        try? FileManager.default.removeItem(at: errorURL)
    }
}

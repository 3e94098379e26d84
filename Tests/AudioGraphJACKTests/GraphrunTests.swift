// Tests, JACK: graphrun against a real jackd.
import AudioGraphTestSupport
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


// Tests, JACK: one graph split across two JACK servers — graphrun with "servers", a real netjack2 master and slave over loopback, real speech through both parts.
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    @Suite("graphrun: one graph across two servers (netjack2 on loopback)")
    struct SplitGraphTests {
        /// A file with io on the master and `far` on the slave, `nodes` and `connections` as JSON.
        static func splitFile(name: String, slave: String, nodes: String, connections: String, here: String = "{}") -> String {
            """
            { "name": "\(name)", "channels": 2,
              "servers": { "here": \(here),
                           "far": { "jack": "\(slave)" } },
              "nodes": [ \(nodes) ],
              "connections": [ \(connections) ] }
            """
        }

        func temporaryFile(_ text: String) throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("split-\(UUID().uuidString).json").path
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            return path
        }

        /// The round trip graphrun said it compensates for "far", in frames.
        static func roundTrip(in stderr: String) -> Int? {
            guard let range = stderr.range(of: "a round trip of ") else { return nil }
            return Int(stderr[range.upperBound...].prefix { $0.isNumber })
        }

        /// CPU seconds `process` and its children (a split graph's far parts) use in 3 s, as a
        /// percentage of one core. Printed, never asserted.
        static func cpuPercent(_ tool: ToolProcess) -> Double {
            let pid = tool.process.processIdentifier
            func pids() -> [Int32] {
                let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
                return [pid] + children.split(separator: " ").compactMap { Int32($0) }
            }
            let before = pids().map(NetJACKTests.cpuSeconds).reduce(0, +)
            usleep(3_000_000)
            return (pids().map(NetJACKTests.cpuSeconds).reduce(0, +) - before) / 3 * 100
        }

        /// Speech into `client:in_1`, what `client:out_1` gave back.
        static func capture(server: String, client: String, speech: [Float]) -> [Float] {
            let probe = ProbeClient(server: server, name: "probe-\(client)", play: speech, captureFrames: speech.count + 16_384)
            probe.connect(probe.outPort, "\(client):in_1")
            probe.connect("\(client):out_1", probe.inPort)
            return probe.run()
        }

        @Test func aLowPassHereAndAMuteGateOnTheSlaveRenderTheSamplesOfOneServerDelayedByTheReportedRoundTrip() throws {
            let link = try NetLink(tag: "split")
            let slave = try #require(link.slave)
            let speech = Speech.load().samples
            let nodes = """
                { "id": "lp", "type": "lowpass", "parameters": { "cutoff": 2000, "resonance": 3 } },
                { "id": "gate", "type": "mutegate", "server": "far" }
                """
            let connections = #"{ "from": "io", "to": "lp" }, { "from": "lp", "to": "gate" }, { "from": "gate", "to": "io" }"#

            // The same graph on one server: the reference.
            let oneName = "sg-one-\(getpid())"
            let onePath = try temporaryFile(SplitGraphTests.splitFile(name: oneName, slave: slave.name, nodes: nodes, connections: connections)
                .replacingOccurrences(of: #""server": "far" "#, with: ""))
            defer { try? FileManager.default.removeItem(atPath: onePath) }
            let one = try ToolProcess("graphrun", [onePath, "--no-autoconnect"], server: link.master.name)
            #expect(one.waitFor("graphrun: running", timeout: 15), "\(one.stderr)")
            let reference = SplitGraphTests.capture(server: link.master.name, client: oneName, speech: speech)
            let oneCPU = SplitGraphTests.cpuPercent(one)
            one.send("quit")
            #expect(one.waitForExit() == 0, "\(one.stderr)")
            let start = try #require(reference.firstIndex { $0 != 0 }, "the reference graph gave silence")
            let filtered = Array(reference[start..<(start + speech.count - 4096)])

            // Split: the gate on the slave.
            let name = "sg-\(getpid())"
            let path = try temporaryFile(SplitGraphTests.splitFile(name: name, slave: slave.name, nodes: nodes, connections: connections))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let check = try ToolProcess("graphrun", [path, "--check"], server: link.master.name)
            #expect(check.waitForExit() == 0, "\(check.stderr)")
            let tool = try ToolProcess("graphrun", [path, "--no-autoconnect"], server: link.master.name)
            #expect(tool.waitFor("graphrun: running", timeout: 20), "\(tool.stderr)")
            let roundTrip = try #require(SplitGraphTests.roundTrip(in: tool.stderr), "no round trip said: \(tool.stderr)")
            // dump and status cover the far part too.
            tool.send("dump")
            #expect(tool.waitFor("part \"far\" ('\(name)-far' on JACK server '\(slave.name)'): AudioGraph"), "\(tool.stdout)")
            #expect(tool.waitFor("gate: muteGate"), "\(tool.stdout)")
            tool.send("status")
            #expect(tool.waitFor("; part \"far\" ('\(name)-far' on '\(slave.name)'): xruns"), "\(tool.stdout)")
            // The far part is a client of the slave, its ports on the slave's system ports.
            #expect(NetLink.waitForPort("\(name)-far:in_1", on: slave.name, seconds: 5))

            var delay: Int?
            var report = ""
            for _ in 0..<3 where delay == nil {
                let split = SplitGraphTests.capture(server: link.master.name, client: name, speech: speech)
                if let at = exactOccurrence(of: filtered, in: split) { delay = at - start } else {
                    report += "first non-zero at \(split.firstIndex { $0 != 0 } ?? -1), reference at \(start); "
                }
            }
            let measured = try #require(delay, "the split graph's output is not the one-server graph's, delayed: \(report)")
            #expect(measured == roundTrip, "measured \(measured) frames later than on one server; graphrun reported \(roundTrip)")
            // And JACK reports it: the outputs' capture latency is the compensated round trip.
            let reported = try #require(NetLink.latency(of: "\(name):out_1", on: link.master.name, capture: true))
            #expect(reported.max == roundTrip, "\(name):out_1 capture latency \(reported.max) frames, round trip \(roundTrip)")
            let splitCPU = SplitGraphTests.cpuPercent(tool)
            print("split graph over netjack2 (-l 2, period 256): the same samples as on one server, \(measured) frames (\(String(format: "%.1f", Double(measured) / 48)) ms) later; graphrun reported \(roundTrip), \(name):out_1 latency \(reported.max); CPU (graphrun and its far part) \(String(format: "%.1f", splitCPU))% of a core against \(String(format: "%.1f", oneCPU))% on one server")

            // A live edit of a node on the slave reaches its part; one that would move a node
            // to the other server is refused, and the graph runs on.
            try SplitGraphTests.splitFile(name: name, slave: slave.name, nodes: nodes.replacingOccurrences(of: #""server": "far" }"#, with: #""server": "far", "parameters": { "mute": 1 } }"#),
                                          connections: connections).write(toFile: path, atomically: true, encoding: .utf8)
            #expect(tool.waitFor("on far: 1 parameter changed (gate.mute 0 → 1)", timeout: 10), "\(tool.stdout) \(tool.stderr)")
            let muted = SplitGraphTests.capture(server: link.master.name, client: name, speech: speech)
            #expect(muted.allSatisfy { $0 == 0 }, "the gate on the slave muted: \(muted.map(abs).max() ?? 0)")
            try SplitGraphTests.splitFile(name: name, slave: slave.name, nodes: nodes.replacingOccurrences(of: #""server": "far" "#, with: ""),
                                          connections: connections).write(toFile: path, atomically: true, encoding: .utf8)
            #expect(tool.waitForError(":5: nodes[1].server: the edges between servers", timeout: 10), "named where it moved: \(tool.stderr)")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            #expect(NetLink.waitForPortGone("\(name)-far:in_1", on: slave.name, seconds: 5), "the far part's client closed with graphrun")
        }

        @Test func parallelPathsOneThroughTheSlaveStayAlignedSoHalfPlusHalfIsTheSpeechBitExact() throws {
            let link = try NetLink(tag: "par")
            let slave = try #require(link.slave)
            let speech = Speech.load().samples
            let name = "sg-par-\(getpid())"
            // mixer input 0: io directly; input 1: io through the gate on the slave; 0.5 each.
            let path = try temporaryFile(SplitGraphTests.splitFile(name: name, slave: slave.name, nodes: """
                { "id": "mix", "type": "mixer", "inputs": 2, "format": { "channels": 2 },
                  "inputParameters": [ { "volume": 0.5 }, { "volume": 0.5 } ] },
                { "id": "gate", "type": "mutegate", "server": "far" }
                """, connections: #"{ "from": "io", "to": "mix:0" }, { "from": "io", "to": "gate" }, { "from": "gate", "to": "mix:1" }, { "from": "mix", "to": "io" }"#))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let tool = try ToolProcess("graphrun", [path, "--no-autoconnect"], server: link.master.name)
            #expect(tool.waitFor("graphrun: running", timeout: 20), "\(tool.stderr)")
            let roundTrip = try #require(SplitGraphTests.roundTrip(in: tool.stderr), "\(tool.stderr)")
            var delay: Int?
            for _ in 0..<3 where delay == nil {
                delay = exactDelay(of: speech, in: SplitGraphTests.capture(server: link.master.name, client: name, speech: speech), maxDelay: 16_384)
            }
            // Bit-exact only if the direct path was delayed by the round trip exactly (the
            // probe's own loop adds a period).
            let measured = try #require(delay, "0.5 × direct + 0.5 × through the slave is not the speech: the paths are not aligned")
            #expect(measured == roundTrip + 256, "delay \(measured) frames; round trip \(roundTrip) + the probe's period")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
        }

        @Test func ioJoinsTheFirstEntrysServerAndAPartOnIosOwnServerIsRefused() throws {
            let link = try NetLink(tag: "sgsrv")
            let slave = try #require(link.slave)
            let nodes = #"{ "id": "gate", "type": "mutegate", "server": "far" }"#
            let connections = #"{ "from": "io", "to": "gate" }, { "from": "gate", "to": "io" }"#
            // io's server from the file, whatever $JACK_DEFAULT_SERVER says.
            let name = "sg-srv-\(getpid())"
            let path = try temporaryFile(SplitGraphTests.splitFile(name: name, slave: slave.name, nodes: nodes, connections: connections,
                                                                   here: #"{ "jack": "\#(link.master.name)" }"#))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let tool = try ToolProcess("graphrun", [path, "--no-autoconnect"], server: "ag-no-such-server")
            #expect(tool.waitFor("on JACK server '\(link.master.name)'", timeout: 20), "\(tool.stdout) \(tool.stderr)")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            // A "far" that is io's own server (here by the usual name) is refused: status 2.
            let same = try temporaryFile(SplitGraphTests.splitFile(name: name, slave: link.master.name, nodes: nodes, connections: connections))
            defer { try? FileManager.default.removeItem(atPath: same) }
            let refused = try ToolProcess("graphrun", [same, "--no-autoconnect"], server: link.master.name)
            #expect(refused.waitForExit(timeout: 15) == 2, "\(refused.stderr)")
            #expect(refused.stderr.contains("servers.far.jack: \"far\" joins the JACK server io runs on"), "\(refused.stderr)")
            // A "net" link that is not there names the field, with the links there are: status 2
            // (a file mistake), found before any far part starts.
            let wrong = try temporaryFile(SplitGraphTests.splitFile(name: name, slave: slave.name, nodes: nodes, connections: connections)
                .replacingOccurrences(of: #""jack": "\#(slave.name)""#, with: #""jack": "\#(slave.name)", "net": "nosuchlink""#))
            defer { try? FileManager.default.removeItem(atPath: wrong) }
            let unlinked = try ToolProcess("graphrun", [wrong, "--no-autoconnect"], server: link.master.name)
            #expect(unlinked.waitForExit(timeout: 20) == 2, "\(unlinked.stderr)")
            #expect(unlinked.stderr.contains("servers.far.net: no netjack2 link 'nosuchlink': io's server '\(link.master.name)' has the netjack2 links '\(link.slaveClient)'"), "\(unlinked.stderr)")
        }

        @Test func theSlaveDyingEndsTheSplitGraphWithStatusOne() throws {
            let link = try NetLink(tag: "sgdies")
            let slave = try #require(link.slave)
            let name = "sg-dies-\(getpid())"
            let path = try temporaryFile(SplitGraphTests.splitFile(name: name, slave: slave.name, nodes: #"{ "id": "gate", "type": "mutegate", "server": "far" }"#,
                                                                   connections: #"{ "from": "io", "to": "gate" }, { "from": "gate", "to": "io" }"#))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let tool = try ToolProcess("graphrun", [path, "--no-autoconnect"], server: link.master.name)
            #expect(tool.waitFor("graphrun: running", timeout: 20), "\(tool.stderr)")
            slave.kill()
            #expect(tool.waitForExit(timeout: 10) == 1, "\(tool.stderr)")
            #expect(tool.stderr.contains("the part on \"far\""), "\(tool.stderr)")
            #expect(tool.stderr.contains("graphrun (part \"far\"): the JACK server shut down"), "the far part says whose server: \(tool.stderr)")
        }

        /// A far server that is not running: the error names the file's line and the entry's
        /// "jack" field, and says to start a netjack2 slave (not a jackd with a sound card).
        @Test func aFarServerThatIsNotRunningIsSaidAtItsLineWithHowToStartASlave() throws {
            let missing = "ag-no-such-slave-\(getpid())"
            let name = "sg-missing-\(getpid())"
            let text = SplitGraphTests.splitFile(name: name, slave: missing, nodes: #"{ "id": "gate", "type": "mutegate", "server": "far" }"#,
                                                 connections: #"{ "from": "io", "to": "gate" }, { "from": "gate", "to": "io" }"#)
            let path = try temporaryFile(text)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let line = try #require(text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains("\"\(missing)\"") }) + 1
            let tool = try ToolProcess("graphrun", [path, "--no-autoconnect"], server: TestServer.shared)
            #expect(tool.waitForExit(timeout: 20) == 1, "\(tool.stderr)")
            #expect(tool.stderr.contains("\(path):\(line): servers.far.jack: no JACK server named '\(missing)' is running; a far part runs on a netjack2 slave"),
                    "the file's line and field: \(tool.stderr)")
            #expect(tool.stderr.contains("jack_load netmanager") && tool.stderr.contains("jackd -n \(missing) -d net -a MASTER-ADDRESS"), "\(tool.stderr)")
            #expect(!tool.stderr.contains("-d alsa") && !tool.stderr.contains("-d dummy"), "no advice for a server with a sound card: \(tool.stderr)")
        }

        @Test(arguments: [
            (#""servers": { "here": {}, "far": { "jack": "x" }, "farther": { "jack": "y" } }, "nodes": [ { "id": "a", "type": "mutegate", "server": "far" }, { "id": "b", "type": "mutegate", "server": "farther" } ], "connections": [ { "from": "io", "to": "a" }, { "from": "a", "to": "b" }, { "from": "b", "to": "io" } ]"#,
             "joins two servers neither of which is io's"),
            (#""servers": { "here": {}, "far": { "jack": "x" } }, "nodes": [ { "id": "a", "type": "mutegate", "server": "nowhere" } ], "connections": []"#,
             "must be one of the file's servers: here, far"),
            (#""nodes": [ { "id": "a", "type": "mutegate", "server": "far" } ], "connections": []"#, "the file lists none"),
            (#""servers": { "here": { "net": "x" } }, "nodes": [], "connections": []"#, "the first server runs io"),
            (#""servers": { "here": {}, "far": {} }, "nodes": [], "connections": []"#, "servers.far: needs \"jack\""),
            (#""servers": { "here": { "jack": "x" }, "far": { "jack": "x" } }, "nodes": [], "connections": []"#, "joins the same JACK server as \"here\""),
            (#""servers": { "here": {}, "far": { "jack": "x", "port": 3 } }, "nodes": [], "connections": []"#, "port"),
            (#""servers": [], "nodes": [], "connections": []"#, "must be an object of named servers"),
            (#""nodes": [ { "id": "@out", "type": "mutegate" } ], "connections": []"#, "not starting with '@'"),
        ])
        func badServersAreRefusedByCheckWithTheFieldNamed(body: String, message: String) throws {
            let path = try temporaryFile(#"{ "channels": 2, "# + body + " }")
            defer { try? FileManager.default.removeItem(atPath: path) }
            let check = try ToolProcess("graphrun", [path, "--check"], server: "none")
            #expect(check.waitForExit() == 2, "\(check.stdout) \(check.stderr)")
            #expect(check.stderr.contains(message), "\(check.stderr)")
        }
    }
}

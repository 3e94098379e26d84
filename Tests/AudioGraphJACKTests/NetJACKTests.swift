// Tests, JACK: the tools on a netjack2 slave over loopback — a real master jackd with netmanager, a real slave jackd (net backend), real speech through both.
import AudioGraphTestSupport
import CJack
import Foundation
import Testing

extension JACKIntegration {
    /// Each test has a link of its own (master, netmanager on a free UDP port, slave), so
    /// parallel runs on one machine do not collide. What is played on the master into
    /// `SLAVE:to_slave_1` enters the slave at `system:capture_1`; what the slave plays to
    /// `system:playback_1` comes back on the master at `SLAVE:from_slave_1`.
    @Suite("netjack2: the tools on a slave server")
    struct NetJACKTests {
        /// The master's period (PrivateServer's default), in frames.
        static let period = 256

        /// Speech played on the master into the slave and captured back from it; the delay at
        /// which it returned bit-exact, or nil, and what the capture looked like. A pass lost to
        /// the link settling (an xrun on either side) is played again, up to 3 passes.
        static func roundTrip(_ link: NetLink, slaveClient: String? = nil) -> (delay: Int?, report: String) {
            let speech = Speech.load().samples
            let client = slaveClient ?? link.slaveClient
            let probe = ProbeClient(server: link.master.name, name: "net-probe", play: speech, captureFrames: speech.count + 16_384)
            probe.connect(probe.outPort, "\(client):to_slave_1")
            probe.connect("\(client):from_slave_1", probe.inPort)
            var report = ""
            for _ in 0..<3 {
                let captured = probe.run()
                if let delay = exactDelay(of: speech, in: captured, maxDelay: 16_384) { return (delay, report) }
                report += captureReport(speech, captured, probe) + "\n"
            }
            return (nil, report)
        }

        /// The latency ranges' maxima on the slave, in frames: `system:capture_1` (capture),
        /// `CLIENT:out_1` (capture, what the client reports onward), `system:playback_1` (playback).
        static func reportedLatency(_ link: NetLink? = nil, slaveServer: String? = nil, client: String) throws -> (capture: Int, out: Int, playback: Int) {
            let server = try #require(slaveServer ?? link?.slave?.name)
            let capture = try #require(NetLink.latency(of: "system:capture_1", on: server, capture: true))
            let out = try #require(NetLink.latency(of: "\(client):out_1", on: server, capture: true))
            let playback = try #require(NetLink.latency(of: "system:playback_1", on: server, capture: false))
            return (capture.max, out.max, playback.max)
        }

        /// The process's CPU time (user + system) in seconds, from /proc/PID/stat.
        static func cpuSeconds(_ pid: Int32) -> Double {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = text.lastIndex(of: ")") else { return 0 }
            // Fields after the command's closing parenthesis: state is field 3; utime 14, stime 15.
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
            return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        @Test func graphthruOnASlavePassesSpeechBitExactBackToTheMasterWithTheNetworkLatencyReported() throws {
            let link = try NetLink(tag: "thru")
            let slave = try #require(link.slave)
            let tool = try ToolProcess(["--name", "gt-net"], server: slave.name)
            #expect(tool.waitFor("mute: off", timeout: 15), "\(tool.stderr)")

            let (delay, report) = NetJACKTests.roundTrip(link)
            let measured = try #require(delay, "speech did not come back bit-exact through the slave: \(report)")
            // Clocked by the master, the link delays by whole periods.
            #expect(measured > 0 && measured % NetJACKTests.period == 0, "delay \(measured) frames")

            // The network latency appears in the JACK latency ranges: the slave's system ports
            // carry it (capture: how long ago the master had the samples; playback: how long
            // until the master has them), graphthru's outputs report it onward (its latency
            // callback), and together they are the measured round trip but for the one period
            // any client loop takes (the probe reads what it played in its next cycle).
            let reported = try NetJACKTests.reportedLatency(link, client: "gt-net")
            #expect(reported.out == reported.capture, "gt-net:out_1 capture latency \(reported.out) vs system:capture_1 \(reported.capture)")
            #expect(measured == reported.capture + reported.playback + NetJACKTests.period,
                    "measured \(measured) frames; reported capture \(reported.capture) + playback \(reported.playback) + a period")
            print("netjack2 (-l 2): speech through graphthru on the slave came back bit-exact after \(measured) frames (\(measured / NetJACKTests.period) periods of \(NetJACKTests.period)); reported: slave system:capture_1 \(reported.capture), gt-net:out_1 \(reported.out), system:playback_1 \(reported.playback) frames")

            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
        }

        @Test func startServerNetStartsASlaveOfTheMasterAndStopsItOnQuit() throws {
            let link = try NetLink(tag: "own", slave: false)
            let slaveName = "ag-net-own-\(getpid())"
            let client = "ag-own-slave"
            let tool = try ToolProcess(["--start-server", "net", "--net-master", "127.0.0.1:\(link.port)", "--net-name", client,
                                        "--net-capture", "2", "--net-playback", "2", "--net-latency", "3", "--server", slaveName],
                                       server: slaveName)
            #expect(tool.waitFor("mute: off", timeout: 20), "\(tool.stderr)")
            #expect(tool.stdout.contains("started as a child jackd, driver net"), "\(tool.stdout)")
            #expect(NetLink.waitForPort("\(client):from_slave_2", on: link.master.name))

            let (delay, report) = NetJACKTests.roundTrip(link, slaveClient: client)
            let measured = try #require(delay, "speech did not come back bit-exact through the started slave: \(report)")
            #expect(measured > 0 && measured % NetJACKTests.period == 0, "delay \(measured) frames")
            // One more period of network latency than the link above (-l 2) asks for: the
            // reported latency and the measured round trip follow it.
            let reported = try NetJACKTests.reportedLatency(slaveServer: slaveName, client: "graphthru")
            #expect(measured == reported.capture + reported.playback + NetJACKTests.period,
                    "measured \(measured) frames; reported capture \(reported.capture) + playback \(reported.playback) + a period")
            #expect(measured == 5 * NetJACKTests.period, "--net-latency 3: \(measured) frames")
            print("netjack2: graphthru --start-server net (--net-latency 3): bit-exact after \(measured) frames (\(measured / NetJACKTests.period) periods); reported capture \(reported.capture) + playback \(reported.playback) frames")

            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            #expect(tool.stdout.contains("server '\(slaveName)' (child jackd) stopped"), "\(tool.stdout)")
            #expect(!TestServer.waitForServer(slaveName, seconds: 0.5), "the started slave outlived graphthru")
        }

        @Test func graphrecordAndGraphrunStartTheirOwnSlaveAndRunOnItUnchanged() throws {
            let link = try NetLink(tag: "tools", slave: false)
            let speech = Speech.load().samples
            func net(_ client: String, _ server: String) -> [String] {
                ["--start-server", "net", "--net-master", "127.0.0.1:\(link.port)", "--net-name", client, "--net-capture", "2", "--net-playback", "2", "--server", server]
            }
            // graphrecord on its slave records what the master sends it, bit-exact.
            let recordServer = "ag-net-rec-\(getpid())"
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("net-\(UUID().uuidString).wav").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let record = try ToolProcess("graphrecord", net("ag-rec-slave", recordServer) + ["--channels", "1", "--input", "system:capture_1", path],
                                         server: recordServer)
            #expect(record.waitFor("recording", timeout: 20), "\(record.stderr)")
            #expect(NetLink.waitForPort("ag-rec-slave:to_slave_1", on: link.master.name))
            let probe = ProbeClient(server: link.master.name, name: "net-rec-probe", play: speech, captureFrames: speech.count + 4096)
            probe.connect(probe.outPort, "ag-rec-slave:to_slave_1")
            _ = probe.run()
            record.process.interrupt()
            #expect(record.waitForExit() == 0, "\(record.stderr)")
            let file = try #require(readAudioFile(path), "graphrecord wrote no readable file")
            #expect(exactOccurrence(of: speech, in: file.channels[0]) != nil, "the speech is not in the recording bit-exact")
            #expect(!TestServer.waitForServer(recordServer, seconds: 0.5), "the started slave outlived graphrecord")
            #expect(record.stdout.contains("server '\(recordServer)' started as a child jackd, driver net") && record.stdout.contains("server '\(recordServer)' (child jackd) stopped"), "\(record.stdout)")

            // graphrun on its slave passes it back, bit-exact.
            let runServer = "ag-net-run-\(getpid())"
            let graph = FileManager.default.temporaryDirectory.appendingPathComponent("net-\(UUID().uuidString).json").path
            defer { try? FileManager.default.removeItem(atPath: graph) }
            try #"{ "channels": 2, "nodes": [ { "id": "gate", "type": "mutegate" } ], "connections": [ { "from": "io", "to": "gate" }, { "from": "gate", "to": "io" } ] }"#
                .write(toFile: graph, atomically: false, encoding: .utf8)
            let run = try ToolProcess("graphrun", [graph] + net("ag-run-slave", runServer), server: runServer)
            #expect(run.waitFor("graphrun: running", timeout: 20), "\(run.stderr)")
            #expect(NetLink.waitForPort("ag-run-slave:from_slave_1", on: link.master.name))
            let (delay, report) = NetJACKTests.roundTrip(link, slaveClient: "ag-run-slave")
            #expect(delay != nil, "speech did not come back bit-exact through graphrun on the slave: \(report)")
            run.send("quit")
            #expect(run.waitForExit() == 0, "\(run.stderr)")
            #expect(!TestServer.waitForServer(runServer, seconds: 0.5), "the started slave outlived graphrun")
            #expect(run.stdout.contains("(server started as a child jackd, driver net)") && run.stdout.contains("server '\(runServer)' (child jackd) stopped"), "\(run.stdout)")
        }

        @Test func startServerNetWithoutAMasterFailsWithStatusOneSayingHowToLoadNetmanager() throws {
            // A free UDP port: no netmanager listens there. Nothing must be left running.
            let port = NetLink.freeUDPPort()
            let slaveName = "ag-net-none-\(getpid())"
            let tool = try ToolProcess(["--start-server", "net", "--net-master", "127.0.0.1:\(port)", "--server", slaveName], server: slaveName)
            #expect(tool.waitForExit(timeout: 30) == 1, "\(tool.stderr)")
            #expect(tool.stderr.contains("no netjack2 master answered at 127.0.0.1:\(port)"), "\(tool.stderr)")
            #expect(tool.stderr.contains("jack_load netmanager"), "\(tool.stderr)")
            #expect(!TestServer.waitForServer(slaveName, seconds: 0.5), "the slave that found no master was left running")
        }

        @Test(arguments: [
            (["--net-latency", "3"], "needs --start-server net"),
            (["--start-server", "net", "--net-latency", "31"], "--net-latency must be a whole number 0…30"),
            (["--start-server", "net", "--net-capture", "-1"], "--net-capture must be a whole number 0…256"),
            (["--start-server", "net", "--net-master", "127.0.0.1:0"], "the port after ':' must be 1…65535"),
            (["--start-server", "net", "--net-master", "no-such-host.invalid"], "not an IPv4 address or a host name that resolves"),
            (["--start-server", "net", "--net-name", "a:b"], "--net-name 'a:b'"),
            (["--start-server", "net", "--net-master", "::1"], "netjack2's master address must be IPv4"),
            (["--start-server", "net", "--net-master", "[::1]:19000"], "netjack2's master address must be IPv4"),
            (["--start-server", "net", "--net-capture", "0", "--net-playback", "0"], "0 capture and 0 playback channels carry no audio"),
        ])
        func badNetOptionsAreRefusedWithStatusTwoBeforeAnythingStarts(arguments: [String], message: String) throws {
            let tool = try ToolProcess(arguments, server: "ag-net-never-\(getpid())")
            #expect(tool.waitForExit() == 2, "\(tool.stderr)")
            #expect(tool.stderr.contains(message), "\(tool.stderr)")
        }

        @Test func theSlaveDyingEndsGraphthruWithStatusOneOrWithReconnectItComesBack() throws {
            let link = try NetLink(tag: "dies")
            let slave = try #require(link.slave)
            let plain = try ToolProcess(["--name", "gt-plain"], server: slave.name)
            let resuming = try ToolProcess(["--name", "gt-resume", "--reconnect", "--no-autoconnect",
                                            "--input", "system:capture_1", "--output", "system:playback_1"], server: slave.name)
            #expect(plain.waitFor("mute: off", timeout: 15), "\(plain.stderr)")
            #expect(resuming.waitFor("mute: off", timeout: 15), "\(resuming.stderr)")

            let killed = Date()
            slave.kill()
            #expect(plain.waitForExit(timeout: 10) == 1, "\(plain.stderr)")
            let seconds = Date().timeIntervalSince(killed)
            #expect(plain.stderr.contains("JACK server"), "\(plain.stderr)")
            #expect(resuming.waitForError("waiting for it to come back"), "\(resuming.stderr)")

            try link.startSlave()
            #expect(resuming.waitFor("the JACK server is back", timeout: 20), "stdout: \(resuming.stdout) stderr: \(resuming.stderr)")
            #expect(NetLink.waitForPort("gt-resume:out_1", on: try #require(link.slave).name))
            let (delay, report) = NetJACKTests.roundTrip(link)
            #expect(delay != nil, "speech did not come back bit-exact after the slave restarted: \(report)")
            print("netjack2: the slave killed: graphthru exited 1 after \(String(format: "%.2f", seconds)) s; with --reconnect it resumed on the new slave (bit-exact again: \(delay != nil))")
            resuming.send("quit")
            #expect(resuming.waitForExit() == 0, "\(resuming.stderr)")
        }

        /// The master restarting under a slave: the slave joins the new master by itself and
        /// re-creates its `system:` ports; graphthru on the slave says the ports went and came
        /// back, and its connections to them are made again, so speech passes bit-exact again.
        @Test func theMasterRestartingGivesGraphthruOnTheSlaveItsConnectionsBack() throws {
            let link = try NetLink(tag: "master")
            let slave = try #require(link.slave)
            let tool = try ToolProcess(["--name", "gt-master"], server: slave.name)
            #expect(tool.waitFor("mute: off", timeout: 15), "\(tool.stderr)")
            #expect(NetLink.waitForPort("gt-master:out_1", on: slave.name))
            try link.restartMaster()
            #expect(tool.waitFor("connection(s) made again", timeout: 20), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            #expect(tool.stdout.contains("system:capture_1 → gt-master:in_1"), "\(tool.stdout) STDERR \(tool.stderr)")
            let (delay, report) = NetJACKTests.roundTrip(link, slaveClient: link.slaveClient)
            #expect(delay != nil, "speech did not come back bit-exact after the master restarted: \(report)")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
        }

        /// Figures, printed and not asserted: round-trip latency and graphthru's CPU on the
        /// slave against the same graphthru on a local server (the shared test server), same run.
        @Test func roundTripLatencyAndClientCPUOnTheSlaveAgainstALocalServer() throws {
            let link = try NetLink(tag: "figures")
            let slave = try #require(link.slave)
            let seconds = 3.0
            var figures: [String] = []
            for (where_, server) in [("netjack2 slave", slave.name), ("local server", TestServer.shared)] {
                let tool = try ToolProcess(["--name", "gt-cpu", "--no-autoconnect"], server: server)
                #expect(tool.waitFor("mute: off", timeout: 15), "\(tool.stderr)")
                let before = NetJACKTests.cpuSeconds(tool.process.processIdentifier)
                usleep(UInt32(seconds * 1e6))
                let cpu = NetJACKTests.cpuSeconds(tool.process.processIdentifier) - before
                tool.send("quit")
                #expect(tool.waitForExit() == 0, "\(tool.stderr)")
                figures.append("\(where_): \(String(format: "%.1f", 100 * cpu / seconds))% of a core")
            }
            // Round trip on the link, against a local client's one-period path (in → out in a cycle).
            let tool = try ToolProcess(["--name", "gt-rt"], server: slave.name)
            #expect(tool.waitFor("mute: off", timeout: 15), "\(tool.stderr)")
            let (delay, report) = NetJACKTests.roundTrip(link)
            #expect(delay != nil, "\(report)")
            tool.send("quit")
            _ = tool.waitForExit()
            // The same loop on the local server: probe → graphthru → probe.
            let local = try ToolProcess(["--name", "gt-rt-local", "--no-autoconnect"], server: TestServer.shared)
            #expect(local.waitFor("mute: off", timeout: 15), "\(local.stderr)")
            let speech = Speech.load().samples
            let probe = ProbeClient(server: TestServer.shared, name: "local-probe", play: speech, captureFrames: speech.count + 16_384)
            probe.connect(probe.outPort, "gt-rt-local:in_1")
            probe.connect("gt-rt-local:out_1", probe.inPort)
            let localDelay = exactDelay(of: speech, in: probe.run(), maxDelay: 16_384)
            local.send("quit")
            _ = local.waitForExit()
            func ms(_ frames: Int?) -> String { String(format: "%.1f ms", Double(frames ?? 0) / 48.0) }
            print("netjack2 figures (period \(NetJACKTests.period), -l 2): round trip probe → graphthru → probe: through the slave \(delay ?? -1) frames (\(ms(delay))), on the local server \(localDelay ?? -1) frames (\(ms(localDelay))); graphthru CPU over \(Int(seconds)) s: \(figures.joined(separator: ", "))")
        }
    }
}

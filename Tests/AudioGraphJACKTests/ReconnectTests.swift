// Tests, JACK: a real jackd stopped and started again under the driver and the tools (--reconnect): same rate bit-exact, another rate followed.
import AudioGraph
import AudioGraphJACK
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// Each test has a server of its own, which it stops (SIGTERM, as an administrator does)
    /// and starts again under the same name, at the same rate or at 44.1 kHz. Probes are closed
    /// before their server stops.
    @Suite("Server restarts: interruptions and --reconnect")
    struct ReconnectTests {
        /// Seconds to wait for a condition that needs nothing but the machine.
        static let patience = 15.0

        /// Waits (polling every 10 ms) until `condition` holds or `seconds` pass.
        static func await(_ seconds: Double = patience, _ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() {
                if Date() >= deadline { return false }
                usleep(10_000)
            }
            return true
        }

        /// A 0.5 amplitude sine of `hz` at `rate`, `seconds` long.
        static func tone(_ hz: Double, rate: Double, seconds: Double = 1) -> [Float] {
            (0..<Int(rate * seconds)).map { Float(0.5 * sin(2 * Double.pi * hz * Double($0) / rate)) }
        }

        /// RMS gain in dB of a captured 0.5-amplitude sine, over its second half.
        static func gain(_ captured: [Float]) -> Double {
            let tail = captured[(captured.count / 2)...]
            let rms = (tail.reduce(0.0) { $0 + Double($1 * $1) } / Double(tail.count)).squareRoot()
            return 20 * log10(rms / (0.5 / 2.0.squareRoot()))
        }

        /// Speech through the client named `client` (in_1 → out_1) and back, compared exactly.
        /// The probe is closed before this returns.
        static func speechIsBitExact(through client: String, server: String, probeName: String, connect: Bool = true) -> (Bool, String) {
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: probeName, play: speech, captureFrames: speech.count + 8192)
            if connect {
                probe.connect(probe.outPort, "\(client):in_1")
                probe.connect("\(client):out_1", probe.inPort)
            }
            let captured = probe.run()
            return (exactDelay(of: speech, in: captured) != nil, captureReport(speech, captured, probe))
        }

        @Test func driverPostsTheInterruptionAndReconnectsAtTheNewRate() throws {
            let name = "audiograph-restart-\(getpid())"
            var server = try PrivateServer(name: name)
            defer { server.stop() }
            let graph = AudioGraph()
            let io = IOUnit()
            let node = try graph.addNode(io)
            try io.setInputEnabled(true)
            try graph.connectNodeInput(node, sourceOutputElement: IOUnit.inputElement, node, destinationInputElement: IOUnit.outputElement)
            var options = JACKDriver.Options()
            options.clientName = "drv-restart"
            options.serverName = name
            options.inputChannels = 1
            options.outputChannels = 1
            let driver = try JACKDriver(graph: graph, options: options)
            defer { driver.close() }
            var heard: [JACKDriver.Notification] = []
            driver.addObserver { heard.append($0) }
            try driver.start()
            let before = Self.speechIsBitExact(through: driver.clientName, server: name, probeName: "probe-drv-1")
            #expect(before.0, "bit-exact before the restart: \(before.1)")

            server.stop()
            #expect(Self.await { driver.isShutDown }, "the shutdown callback ran")
            driver.dispatchNotifications()
            driver.dispatchNotifications()  // posted once per shutdown
            #expect(heard.count == 1, "\(heard)")
            if case .interruptionBegan = heard.first {} else { Issue.record("first notification: \(heard)") }
            #expect(throws: JACKDriverError.serverNotRunning(server: name)) { try driver.reconnect() }
            #expect(driver.isShutDown, "still interrupted after a failed try")

            server = try PrivateServer(name: name, period: 128, sampleRate: 44_100)
            try driver.reconnect()
            #expect(!driver.isShutDown)
            #expect(driver.clientName == "drv-restart", "the same name")
            #expect(driver.sampleRate == 44_100 && driver.bufferSize == 128)
            #expect(io.deviceOutputFormat.sampleRate == 44_100, "the graph follows the new rate")
            #expect(graph.isRunning)
            let ended = heard.contains { if case .interruptionEnded(let downtime, let c) = $0 { return downtime > 0 && c.sampleRate == 44_100 } else { return false } }
            #expect(ended, "\(heard)")
            let changed = JACKDriver.Notification.configurationChanged(
                from: .init(sampleRate: 48_000, bufferSize: 256, isFreewheeling: false),
                to: .init(sampleRate: 44_100, bufferSize: 128, isFreewheeling: false))
            #expect(heard.last == changed, "\(heard)")
            let after = Self.speechIsBitExact(through: driver.clientName, server: name, probeName: "probe-drv-2")
            #expect(after.0, "bit-exact again at 44.1 kHz: \(after.1)")
            try driver.reconnect()  // connected: nothing to do
            #expect(heard.count == 3, "\(heard)")
        }

        @Test func graphthruResumesBitExactAndRestoresItsConnections() throws {
            let name = "audiograph-gt-restart-\(getpid())"
            var server = try PrivateServer(name: name)
            defer { server.stop() }
            let client = "gt-restart"
            let speech = Speech.load().samples
            // Ports given by name, so that graphthru connects them again after the restart: the
            // probe must exist before graphthru looks for them, each time.
            var probe: ProbeClient? = ProbeClient(server: name, name: "probe-gtr", play: speech, captureFrames: speech.count + 8192)
            let tool = try ToolProcess(["--name", client, "--channels", "1", "--reconnect",
                                        "--input", "probe-gtr:out", "--output", "probe-gtr:in"], server: name)
            #expect(tool.waitFor("mute: off"), "\(tool.stderr)")
            let first = probe!.run()
            #expect(exactDelay(of: speech, in: first) != nil, "bit-exact before the restart: \(captureReport(speech, first, probe!))")
            probe = nil  // closed before its server stops

            server.stop()
            #expect(tool.waitForError("waiting for it to come back"), "\(tool.stderr)")
            usleep(600_000)  // a few reconnect attempts find no server
            #expect(tool.process.isRunning, "still running while the server is away")
            server = try PrivateServer(name: name)
            let answered = Date()
            probe = ProbeClient(server: name, name: "probe-gtr", play: speech, captureFrames: speech.count + 8192)
            // Said once the ports are connected again (from --input/--output; none are made here).
            #expect(tool.waitFor("the JACK server is back"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            print("graphthru --reconnect: resumed \(Int(Date().timeIntervalSince(answered) * 1000)) ms after the new server answered")
            let second = probe!.run()
            #expect(exactDelay(of: speech, in: second) != nil, "bit-exact after the resume: \(captureReport(speech, second, probe!))")
            probe = nil
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            #expect(tool.stderr.components(separatedBy: "\n").filter { !$0.isEmpty }.count == 1,
                    "one line on stderr, the interruption: \(tool.stderr)")
        }
    }
}

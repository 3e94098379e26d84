// Tests, JACK: graphthru against a real jackd.
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// The graphthru tool as a user runs it, against a real jackd.
    @Suite("graphthru against a real jackd")
    struct GraphthruTests {
        let server = TestServer.shared

        @Test func speechIsBitExactThenMuteIsSilentThenQuitExitsZero() throws {
            let name = "gt-test-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stdout) \(tool.stderr)")
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-gt", play: speech, captureFrames: speech.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")

            probe.expectExact(speech, "real speech through graphthru is bit-exact")

            tool.send("mute")
            #expect(tool.waitFor("mute: on"))
            usleep(100_000)
            let muted = probe.run()
            #expect(muted.allSatisfy { $0 == 0 }, "silent after mute; peak \(muted.map(abs).max() ?? 0)")

            tool.send("toggle")
            #expect(tool.waitFor("mute: off", count: 2))
            usleep(100_000)
            probe.expectExact(speech, "bit-exact again after unmute")

            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            #expect(tool.stderr.isEmpty, "stderr: \(tool.stderr)")
        }

        @Test func muteDoesNotClick() throws {
            let name = "gt-click-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("mute: off"))
            // A constant full-scale signal: the output while muting is the gain curve.
            let dc = [Float](repeating: 1, count: 48_000)
            let probe = ProbeClient(server: server, name: "probe-click", play: dc, captureFrames: 48_000)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")
            probe.state.position.store(0, ordering: .relaxed)
            probe.state.armed.store(true, ordering: .releasing)
            usleep(300_000)
            tool.send("mute")
            #expect(tool.waitFor("mute: on"))
            let deadline = Date().addingTimeInterval(10)
            while probe.state.position.load(ordering: .acquiring) < 48_000 && Date() < deadline { usleep(10_000) }
            let out = Array(probe.state.capture)
            var maxStep: Float = 0
            for i in 1..<out.count where out[i - 1] != 0 || out[i] != 0 {
                if out[i - 1] == 0 && i > 1 && out[i - 2] == 0 { continue }  // the signal's own start
                maxStep = max(maxStep, abs(out[i] - out[i - 1]))
            }
            let start = out.firstIndex(of: 1) ?? 0
            #expect(out.last == 0, "muted by the end")
            #expect(out[start...].dropFirst().contains { $0 > 0 && $0 < 1 }, "a ramp, not a jump")
            var largestFall: Float = 0
            for i in (start + 1)..<out.count { largestFall = max(largestFall, out[i - 1] - out[i]) }
            #expect(largestFall <= 1 / 480 + 1e-6, "largest drop per sample \(largestFall) (10 ms ramp allows \(1.0 / 480))")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func signalsQuitCleanlyAndEndOfInputDoesNot() throws {
            for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT] {
                let tool = try ToolProcess(["--name", "gt-sig-\(signal)", "--no-autoconnect", "--muted"], server: server)
                #expect(tool.waitFor("mute: on"))
                try tool.stdin.fileHandleForWriting.close()  // end of input is not a quit
                usleep(300_000)
                #expect(tool.process.isRunning)
                kill(tool.process.processIdentifier, signal)
                #expect(tool.waitForExit() == 0, "signal \(signal)")
                #expect(tool.stdout.contains("stopped"))
            }
        }

        @Test func noServerIsOneLineAndNonZero() throws {
            let tool = try ToolProcess(["--name", "gt-none"], server: "no-such-server-\(getpid())")
            let status = tool.waitForExit()
            #expect(status != nil && status != 0)
            let lines = tool.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("jackd"), "stderr: \(tool.stderr)")
        }

        @Test(arguments: [["--channels", "0"], ["--channels", "x"], ["--lowpass", "-5"], ["--bogus"], ["--name"], ["--server", ""],
                          ["--server", String(repeating: "s", count: 270)], ["--start-server", ""],
                          ["--record", "/tmp/gt-\(getpid()).flac", "--record-format", "float32"], ["--record", "/tmp"], ["--meter", "loud"], ["--meter"]])
        func badOptionsAreRefusedWithStatus2(_ arguments: [String]) throws {
            // A server that does not exist: every one of these is refused before JACK is asked.
            let tool = try ToolProcess(arguments, server: "no-such-server-\(getpid())")
            #expect(tool.waitForExit() == 2, "\(arguments): \(tool.stderr)")
            #expect(!tool.stderr.isEmpty && !tool.stderr.contains("jackd"), "\(tool.stderr)")
        }

        /// libjack aborts the process for a server name of 265 bytes or more, from --server or
        /// $JACK_DEFAULT_SERVER: each tool refuses one over 255 bytes first, with status 2.
        @Test(arguments: ["graphthru", "graphrecord", "graphrun"])
        func overlongServerNamesFromTheEnvironmentAreRefused(_ name: String) throws {
            let file = "/tmp/overlong-\(getpid())-\(name).\(name == "graphrun" ? "json" : "wav")"
            defer { unlink(file) }
            if name == "graphrun" {
                try #"{ "nodes": [], "connections": [ { "from": "io", "to": "io" } ] }"#.write(toFile: file, atomically: true, encoding: .utf8)
            }
            let arguments = name == "graphthru" ? [] : [file]
            let tool = try ToolProcess(name, arguments, server: String(repeating: "e", count: 300))
            #expect(tool.waitForExit() == 2, "\(tool.stderr)")
            #expect(tool.stderr.contains("JACK_DEFAULT_SERVER has 300 bytes; JACK allows at most 255"), "\(tool.stderr)")
        }

        /// A --input that is neither a port nor a regular expression is a bad option (2), refused
        /// before anything is connected; more ports than channels are said, in English.
        @Test func badPatternsAndLeftoverPortsAreSaid() throws {
            let bad = try ToolProcess(["--name", "gt-badpat-\(getpid())", "--input", "bad["], server: server)
            #expect(bad.waitForExit() == 2, "\(bad.stderr)")
            #expect(bad.stderr.contains("'bad[' is neither a JACK port name nor a valid regular expression"), "\(bad.stderr)")
            let record = "/tmp/gr-leftover-\(getpid()).wav"
            defer { unlink(record) }
            let recorder = try ToolProcess("graphrecord", ["--name", "gr-leftover-\(getpid())", "--channels", "1", "--duration", "0.2",
                                                           "--input", "system:capture_.*", record], server: server)
            #expect(recorder.waitForExit() == 0, "\(recorder.stderr)")
            #expect(recorder.stderr.contains("note: 2 --input ports matched for 1 channel; system:capture_2… stays unconnected"), "\(recorder.stderr)")
        }

        @Test func lowpassOutsideTheRangeIsRefused() throws {
            let tool = try ToolProcess(["--name", "gt-lp", "--lowpass", "30000"], server: server)
            #expect(tool.waitForExit() == 2)
            #expect(tool.stderr.contains("outside 10…24000"), "stderr: \(tool.stderr)")
        }

        @Test(arguments: [String(repeating: "n", count: 64), "", "a:b"])
        func namesJACKCannotTakeAreRefusedWithStatus2(_ name: String) throws {
            let tool = try ToolProcess(["--name", name], server: server)
            #expect(tool.waitForExit() == 2)
            #expect(tool.stderr.split(separator: "\n").count == 1 && tool.stderr.contains("--name"), "stderr: \(tool.stderr)")
        }

        @Test func theLongestNameJACKTakesWorks() throws {
            let name = String(repeating: "g", count: 63)
            let tool = try ToolProcess(["--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("mute: off"), "stderr: \(tool.stderr)")
            #expect(tool.stdout.contains("client '\(name)'"))
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func followsTheServerSampleRate() throws {
            let own = try PrivateServer(name: "audiograph-44k-\(getpid())", sampleRate: 44_100)
            defer { own.stop() }
            let tool = try ToolProcess(["--name", "gt-44k", "--no-autoconnect"], server: own.name)
            #expect(tool.waitFor("mute: off"), "stderr: \(tool.stderr)")
            #expect(tool.stdout.contains("44100 Hz"))
            let speech = Speech.load().samples
            let probe = ProbeClient(server: own.name, name: "probe-44k", play: speech, captureFrames: speech.count + 8192)
            probe.connect("\(probe.name):out", "gt-44k:in_1")
            probe.connect("gt-44k:out_1", "\(probe.name):in")
            probe.expectExact(speech, "bit-exact at 44.1 kHz too")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func lowpassFiltersAndNamedPortsAreConnected() throws {
            let name = "gt-lowpass-\(getpid())"
            let probeName = "probe-lp"
            // Connect by --input/--output: the probe must exist first.
            let tone = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 8000 * Double($0) / 48_000)) }
            let probe = ProbeClient(server: server, name: probeName, play: tone, captureFrames: 48_000)
            let tool = try ToolProcess(["--name", name, "--lowpass", "500", "--channels", "1",
                                             "--input", "\(probe.name):out", "--output", "\(probe.name):in"], server: server)
            #expect(tool.waitFor("mute: off"), "\(tool.stderr)")
            #expect(tool.stdout.contains("low-pass 500"))
            let out = probe.run()
            let tail = out[24_000...]
            let rmsOut = (tail.reduce(0.0) { $0 + Double($1 * $1) } / Double(tail.count)).squareRoot()
            let gain = 20 * log10(rmsOut / (0.5 / 2.0.squareRoot()))
            // Second order at 500 Hz: 8 kHz is 4 octaves up, about −48 dB.
            #expect(gain < -40, "8 kHz through a 500 Hz low-pass: \(gain) dB")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func portNamesAreMatchedLiterallyAndLatePortsAreWaitedFor() throws {
            let name = "gt-literal-\(getpid())"
            // graphthru starts first; the ports it is told to use appear 0.5 s later.
            let tool = try ToolProcess(["--name", name, "--channels", "1",
                                             "--input", "probe-lit:cap (L) [1].+", "--output", "probe-lit:play (R) [2].*"], server: server)
            usleep(500_000)
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-lit", play: speech, captureFrames: speech.count + 8192,
                                    outPort: "cap (L) [1].+", inPort: "play (R) [2].*")
            #expect(tool.waitFor("mute: off"), "stderr: \(tool.stderr)")
            #expect(probe.name == "probe-lit")
            probe.expectExact(speech, "connected through names with + ( ) [ ] . *")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func portLatencyFollowsTheConnectedPath() throws {
            let name = "gt-latency-\(getpid())"
            let tool = try ToolProcess(["--name", name], server: server)  // autoconnects to system ports
            #expect(tool.waitFor("mute: off"))
            let listing = try run("/usr/bin/jack_lsp", ["-l"], server: server)
            func latency(_ port: String, _ kind: String) -> String? {
                let lines = listing.split(separator: "\n").map(String.init)
                guard let i = lines.firstIndex(of: port) else { return nil }
                return lines[(i + 1)...].prefix(2).first { $0.contains(kind) }?.trimmingCharacters(in: .whitespaces)
            }
            // Nothing in the graph delays: out_k reports what arrives at in_k from the capture port,
            // and in_k what waits after out_k on the way to playback.
            #expect(latency("\(name):out_1", "capture") == latency("system:capture_1", "capture"), "\(listing)")
            #expect(latency("\(name):in_1", "playback") == latency("system:playback_1", "playback"))
            #expect(latency("\(name):out_1", "capture") != nil)
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func freewheelingAndBackKeepsItRunningBitExact() throws {
            let name = "gt-freewheel-\(getpid())"
            let own = try PrivateServer(name: "audiograph-fw-\(getpid())")
            defer { own.stop() }
            // Another client, open for longer, hears every xrun the server reports (a loaded
            // machine makes some): graphthru may count those, none for the freewheel switch.
            let watcher = ProbeClient(server: own.name, name: "probe-fw-xruns", play: [], captureFrames: 0)
            let tool = try ToolProcess(["--name", name, "--no-autoconnect"], server: own.name)
            #expect(tool.waitFor("mute: off"))
            _ = try run("/usr/bin/jack_freewheel", ["yes"], server: own.name)
            usleep(300_000)
            _ = try run("/usr/bin/jack_freewheel", ["no"], server: own.name)
            usleep(200_000)
            let speech = Speech.load().samples
            let probe = ProbeClient(server: own.name, name: "probe-fw", play: speech, captureFrames: speech.count + 8192)
            probe.connect(probe.outPort, "\(name):in_1")
            probe.connect("\(name):out_1", probe.inPort)
            probe.expectExact(speech, "monitoring resumed after freewheel")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
            let counted = tool.stdout.split(separator: "\n").first { $0.contains("stopped; ") }
                .flatMap { Int($0.split(separator: "stopped; ")[1].prefix { $0.isNumber }) }
            let reported = watcher.xrunCount
            #expect(counted != nil && counted! <= reported,
                    "no xruns counted for the freewheel switch (the server reported \(reported)): \(tool.stdout)")
        }

        @Test func serverDeathMakesItExitNonZeroWithAMessage() throws {
            let doomed = try PrivateServer(name: "audiograph-doomed-\(getpid())")
            let tool = try ToolProcess(["--name", "gt-doomed"], server: doomed.name)
            #expect(tool.waitFor("mute: off"), "\(tool.stderr)")
            // SIGTERM: jackd shuts down as when an administrator stops it. (A SIGKILLed jackd leaves
            // its slot in jack2's 8-entry server registry behind, which would starve later runs.)
            doomed.kill(signal: SIGTERM)
            let status = tool.waitForExit(timeout: 5)
            #expect(status != nil && status != 0, "status \(String(describing: status))")
            #expect(tool.stderr.contains("shut down"), "stderr: \(tool.stderr)")
            // A real-time jackd stopped with a client attached leaves its entry in jack2's
            // 8-server registry; a server of the same name takes the dead entry over, and one
            // stopped with no client gives it back.
            try? PrivateServer(name: doomed.name).stop()
        }
    }
}

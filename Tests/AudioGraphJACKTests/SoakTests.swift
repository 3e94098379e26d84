// Tests, JACK: the soak — graphthru and graphrun on a private jackd at period 64, speech looping through them, random live edits, period changes and a server restart; figures printed.
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// A short soak runs with the tests (`AUDIOGRAPH_SOAK_SECONDS`, default 30); `scripts/soak
    /// MINUTES` runs a long one in release and prints the same figures (Docs/Performance.md
    /// has an hour's). What must hold however long it runs: both tools exit 0, every invalid
    /// edit is refused and every valid one applied, both come back after the restart, and the
    /// audio after the last edit is bit-exact where the chain is neutral. Memory and open
    /// descriptors are printed, start and end, for the reader to judge flatness over a long run.
    @Suite("Soak: live edits, period changes and a server restart")
    struct SoakTests {
        /// Resident memory (kB, VmRSS) and open file descriptors of a process, from /proc.
        static func usage(of pid: Int32) -> (rssKB: Int, fds: Int) {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
                .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? -1
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
            return (rss, fds)
        }

        /// graphrun's file: io → [lp →] mixer → io. `broken` makes it invalid in one of four ways
        /// (cut short, an unknown type, a cutoff above Nyquist, a cycle), each text unique.
        static func graphFile(volume: Double, lowpass: Double?, broken: Int?, serial: Int) -> String {
            let type = broken == 1 ? "lowpass\(serial)x" : "lowpass"
            let cutoff = broken == 2 ? 30_000 + Double(serial) : (lowpass ?? 1000)
            var nodes = [#"{ "id": "mixer", "type": "mixer", "inputs": 1, "parameters": { "volume": \#(volume) } }"#]
            var connections: [String]
            if lowpass != nil || broken == 1 || broken == 2 {
                nodes.append(#"{ "id": "lp", "type": "\#(type)", "parameters": { "cutoff": \#(cutoff), "resonance": 0 } }"#)
                connections = [#"{ "from": "io", "to": "lp" }"#, #"{ "from": "lp", "to": "mixer:0" }"#, #"{ "from": "mixer", "to": "io" }"#]
            } else {
                connections = [#"{ "from": "io", "to": "mixer:0" }"#, #"{ "from": "mixer", "to": "io" }"#]
            }
            if broken == 3 {
                nodes.append(#"{ "id": "loop\#(serial)", "type": "mixer", "inputs": 1 }"#)
                connections.append(#"{ "from": "mixer", "to": "loop\#(serial):0" }"#)
                connections[connections.count - 2] = #"{ "from": "loop\#(serial)", "to": "mixer:0" }"#
            }
            let text = """
                { "name": "grun-soak", "channels": 1,
                  "nodes": [ \(nodes.joined(separator: ", ")) ],
                  "connections": [ \(connections.joined(separator: ", ")) ] }
                """
            return broken == 0 ? String(text.prefix(text.count / 2 + serial % 7)) : text
        }

        @Test func soak() throws {
            let seconds = Double(ProcessInfo.processInfo.environment["AUDIOGRAPH_SOAK_SECONDS"] ?? "") ?? 30
            let seed = UInt64(ProcessInfo.processInfo.environment["AUDIOGRAPH_SOAK_SEED"] ?? "") ?? 16
            var random = SplitMix64(seed: seed)   // the same seed, the same edits
            let name = "audiograph-soak-\(getpid())"
            var server = try PrivateServer(name: name, period: 64)
            defer { server.stop() }
            let speech = Speech.load().samples
            var loop = LoopClient(server: name, name: "soak-loop", samples: speech)
            let path = "/tmp/ag-soak-\(getpid()).json"
            defer { unlink(path) }
            try Self.graphFile(volume: 1, lowpass: nil, broken: nil, serial: 0).write(toFile: path, atomically: true, encoding: .utf8)
            let thru = try ToolProcess(["--name", "gt-soak", "--channels", "1", "--reconnect", "--input", "soak-loop:out"], server: name)
            let run = try ToolProcess("graphrun", [path, "--reconnect", "--input", "soak-loop:out"], server: name)
            #expect(thru.waitFor("mute: off"), "\(thru.stderr)")
            #expect(run.waitFor("running"), "\(run.stderr)")
            let startThru = Self.usage(of: thru.process.processIdentifier), startRun = Self.usage(of: run.process.processIdentifier)

            var runOut = 0, runErr = 0  // how far graphrun's output has been read
            var thruValid = 0, thruInvalid = 0, runValid = 0, runInvalid = 0, periodChanges = 0, restarts = 0, serial = 0
            var lowpassInRun = false
            let began = Date()
            var restarted = false, periodPhase = 0
            while Date().timeIntervalSince(began) < seconds {
                let elapsed = Date().timeIntervalSince(began) / seconds
                if !restarted && elapsed >= 0.5 {
                    // The server restart: the feeding client goes first, then the server; both
                    // tools wait, and come back when it does, the feed connected again by them.
                    restarted = true
                    loop = nil
                    server.stop()
                    #expect(thru.waitForError("waiting for it to come back"), "\(thru.stderr)")
                    #expect(run.waitForError("waiting for it to come back"), "\(run.stderr)")
                    server = try PrivateServer(name: name, period: 64)
                    loop = LoopClient(server: name, name: "soak-loop", samples: speech)
                    #expect(thru.waitFor("the JACK server is back"), "\(thru.stdout) \(thru.stderr)")
                    #expect(run.waitFor("the JACK server is back"), "\(run.stdout) \(run.stderr)")
                    restarts += 1
                    continue
                }
                if periodPhase == 0 && elapsed >= 0.25 || periodPhase == 2 && elapsed >= 0.75 {
                    _ = try AudioGraphTestSupport.run("/usr/bin/jack_bufsize", ["128"], server: name)
                    periodPhase += 1
                    periodChanges += 1
                } else if periodPhase == 1 && elapsed >= 0.375 || periodPhase == 3 && elapsed >= 0.875 {
                    _ = try AudioGraphTestSupport.run("/usr/bin/jack_bufsize", ["64"], server: name)
                    periodPhase += 1
                    periodChanges += 1
                }
                serial += 1
                if Bool.random(using: &random) {
                    // graphthru: a line command, one in five of them refused (one stderr line each).
                    if Int.random(in: 0..<5, using: &random) == 0 {
                        thru.send(["lowpass 5", "volume banana", "frobnicate"][Int.random(in: 0..<3, using: &random)])
                        thruInvalid += 1
                    } else {
                        let commands = ["mute", "unmute", "toggle", "lowpass on", "lowpass off",
                                        "lowpass \(Int.random(in: 100...8000, using: &random))",
                                        "volume \(Int.random(in: -30...6, using: &random))", "+", "-", "status"]
                        thru.send(commands[Int.random(in: 0..<commands.count, using: &random)])
                        thruValid += 1
                    }
                } else {
                    // graphrun: a save; its answer is awaited, so that each save is counted once.
                    let broken: Int? = Int.random(in: 0..<10, using: &random) < 3 ? Int.random(in: 0..<4, using: &random) : nil
                    if broken == nil, Int.random(in: 0..<4, using: &random) == 0 { lowpassInRun.toggle() }
                    let volume = Double(Int.random(in: 100...1000, using: &random)) / 1000 + Double(serial) * 1e-7
                    let text = Self.graphFile(volume: volume, lowpass: lowpassInRun ? Double(Int.random(in: 200...8000, using: &random)) : nil,
                                              broken: broken, serial: serial)
                    try text.write(toFile: path, atomically: true, encoding: .utf8)
                    if broken == nil {
                        runValid += 1
                        #expect(run.waitFor("graphrun: reloaded", after: &runOut), "save \(serial) applied: \(run.stderr.suffix(2000))")
                    } else {
                        runInvalid += 1
                        #expect(run.waitFor("still running the previous version", after: &runErr, stderr: true), "save \(serial) refused: \(run.stdout.suffix(2000))")
                    }
                }
                usleep(UInt32(Int.random(in: 200_000...400_000, using: &random)))
            }
            let cycles = loop?.state.cycles.load(ordering: .relaxed) ?? 0
            let loopXruns = loop?.state.xruns.load(ordering: .relaxed) ?? 0

            // The last edit makes both chains neutral; then the feed stops and a probe checks them.
            var thruOut = thru.stdout.utf8.count
            thru.send("unmute"); thru.send("volume 0"); thru.send("lowpass off")
            try Self.graphFile(volume: 1, lowpass: nil, broken: nil, serial: serial + 1).write(toFile: path, atomically: true, encoding: .utf8)
            runValid += 1
            #expect(run.waitFor("graphrun: reloaded", after: &runOut), "\(run.stderr.suffix(2000))")
            #expect(thru.waitFor("low-pass: off", after: &thruOut), "\(thru.stdout.suffix(2000))")
            loop = nil
            var reports: [String] = []
            /// true: bit-exact; false: not, in a pass without an xrun (a failure); nil: every one
            /// of 20 passes had an xrun, which loses audio by JACK's design — unverified, said so.
            func bitExact(_ client: String) -> Bool? {
                let probe = ProbeClient(server: name, name: "probe-soak", play: speech, captureFrames: speech.count + 8192)
                probe.connect(probe.outPort, "\(client):in_1")
                probe.connect("\(client):out_1", probe.inPort)
                let captured = probe.run(passes: 20)
                reports.append("\(client): \(captureReport(speech, captured, probe))")
                if exactDelay(of: speech, in: captured) != nil { return true }
                return probe.lastPassHadXruns ? nil : false
            }
            // Checked at period 256: an xrun loses audio by JACK's design, and at 64 a loaded
            // 2-core machine has them in every pass; the state after the edits is what is checked.
            _ = try AudioGraphTestSupport.run("/usr/bin/jack_bufsize", ["256"], server: name)
            usleep(200_000)  // the volume ramp (one period) and the low-pass's removal are done
            let thruExact = bitExact("gt-soak"), runExact = bitExact("grun-soak")
            let endThru = Self.usage(of: thru.process.processIdentifier), endRun = Self.usage(of: run.process.processIdentifier)
            thru.send("quit"); run.send("quit")
            let thruStatus = thru.waitForExit(), runStatus = run.waitForExit()
            func xruns(_ tool: ToolProcess) -> String {
                tool.stdout.split(separator: "\n").first { $0.contains("stopped; ") }.map { String($0.split(separator: "stopped; ")[1].prefix { $0.isNumber }) } ?? "?"
            }
            let thruRefused = thru.stderr.split(separator: "\n").filter { $0.contains("lowpass takes") || $0.contains("volume takes") || $0.contains("unknown command") }.count
            let runRefused = run.stderr.components(separatedBy: "still running the previous version").count - 1
            print("""
                soak: \(Int(seconds)) s at period 64 (seed \(seed)); \(cycles) cycles after the restart (feed client), its xruns \(loopXruns); \
                xruns graphthru \(xruns(thru)), graphrun \(xruns(run)); \
                final check at period 256; edits graphthru \(thruValid) applied, \(thruRefused) refused of \(thruInvalid) invalid; \
                graphrun \(runValid) saves applied, \(runRefused) refused of \(runInvalid) invalid; \
                \(periodChanges) period changes; \(restarts) server restart, reconnects \(thru.stdout.components(separatedBy: "the JACK server is back").count - 1 + run.stdout.components(separatedBy: "the JACK server is back").count - 1); \
                graphthru RSS \(startThru.rssKB) → \(endThru.rssKB) kB, fds \(startThru.fds) → \(endThru.fds); \
                graphrun RSS \(startRun.rssKB) → \(endRun.rssKB) kB, fds \(startRun.fds) → \(endRun.fds); \
                bit-exact after the last edit: graphthru \(thruExact.map(String.init) ?? "unverified"), graphrun \(runExact.map(String.init) ?? "unverified")
                """)
            #expect(thruStatus == 0 && runStatus == 0, "exits: \(String(describing: thruStatus)) \(String(describing: runStatus)); \(thru.stderr.suffix(1000)) \(run.stderr.suffix(1000))")
            #expect(thruRefused == thruInvalid, "every invalid graphthru command refused, no other: \(thru.stderr.suffix(3000))")
            #expect(runRefused == runInvalid)
            #expect(thruExact != false && runExact != false, "bit-exact after the last edit: graphthru \(String(describing: thruExact)), graphrun \(String(describing: runExact)); \(reports)")
            if thruExact == nil || runExact == nil { print("soak: bit-exactness unverified (nil): every pass had an xrun; \(reports)") }
            #expect(endThru.fds <= startThru.fds && endRun.fds <= startRun.fds,
                    "no descriptor leaked: graphthru \(startThru.fds) → \(endThru.fds), graphrun \(startRun.fds) → \(endRun.fds)")
        }
    }
}

// Tests, JACK: NaN and ±Inf bursts played into graphthru (low-pass in) never reach its output or its recording; counted and shown; its --json lines parse strictly.
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    @Suite("graphthru: non-finite input never passes")
    struct GraphthruNonFiniteTests {
        let server = TestServer.shared

        /// Speech with a NaN burst (frames 12_000..<12_300) and a +Inf/−Inf burst (30_000..<30_300).
        static func bursts() -> (dirty: [Float], zeroed: [Float], badFrames: Int) {
            let speech = Array(Speech.load().samples.prefix(48_000))
            var dirty = speech, zeroed = speech
            for f in 12_000..<12_300 { dirty[f] = .nan; zeroed[f] = 0 }
            for f in 30_000..<30_300 { dirty[f] = f % 2 == 0 ? .infinity : -.infinity; zeroed[f] = 0 }
            return (dirty, zeroed, 600)
        }

        /// The number after `label ` in the last `status:` line of `text`.
        static func statusNumber(_ text: String, _ label: String) -> UInt64? {
            guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("status:") }),
                  let range = line.range(of: label + " ") else { return nil }
            return UInt64(line[range.upperBound...].prefix { $0.isNumber })
        }

        /// Asks graphthru for its `status` line (the `asked`-th of the run) and reads `non-finite N`.
        static func nonFiniteCount(_ tool: ToolProcess, asked: Int) -> UInt64? {
            tool.send("status")
            guard tool.waitFor("status:", count: asked) else { return nil }
            return statusNumber(tool.stdout, "non-finite")
        }

        /// Plays `samples` into graphthru's in_1 and captures out_1, one pass at a time, until a
        /// pass has no xrun (at most 5); returns the capture and how much the count grew in it.
        static func play(_ samples: [Float], probe: ProbeClient, tool: ToolProcess, asked: inout Int) -> (captured: [Float], counted: UInt64?, clean: Bool) {
            var captured: [Float] = [], counted: UInt64?
            for _ in 0..<5 {
                _ = probe.state.play.update(fromContentsOf: samples)
                asked += 1
                let before = nonFiniteCount(tool, asked: asked)
                captured = probe.run(passes: 1)
                asked += 1
                let after = nonFiniteCount(tool, asked: asked)
                counted = before.flatMap { b in after.map { $0 - b } }
                if !probe.lastPassHadXruns { return (captured, counted, true) }
            }
            return (captured, counted, false)
        }

        @Test func nanAndInfBurstsNeverReachTheOutputAndTheLowPassRecoversWithinAPeriod() throws {
            let name = "gt-nonfinite-\(getpid())"
            let (dirty, zeroed, badFrames) = Self.bursts()
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--lowpass", "1000"], server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stdout) \(tool.stderr)")
            let probe = ProbeClient(server: server, name: "probe-nf", play: dirty, captureFrames: dirty.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")
            var asked = 0

            let (captured, counted, clean) = Self.play(dirty, probe: probe, tool: tool, asked: &asked)
            #expect(captured.allSatisfy { $0.isFinite }, "no NaN or Inf at graphthru's output port")
            #expect(captured.contains { $0 != 0 }, "the speech came through")
            // Counted: exactly the bursts' 600 samples in a pass without xruns (an xrun can skip
            // or repeat a cycle of graphthru's input, so then only "some").
            if clean { #expect(counted == UInt64(badFrames), "status: \(tool.stdout)") }
            else { #expect((counted ?? 0) > 0, "status: \(tool.stdout)") }

            // The reference: the same speech with silence where the bursts were, through the same
            // low-pass (it has rung out to exact zeros between the passes: its memory is flushed).
            let (reference, referenceCount, referenceClean) = Self.play(zeroed, probe: probe, tool: tool, asked: &asked)
            #expect(referenceCount == 0, "finite input counts nothing")
            // Within one period after each burst the output is the reference's: the filter kept
            // nothing of the burst. (The probe's delay through graphthru is the same in both
            // passes; a pass with an xrun says nothing about the filter.)
            if clean && referenceClean {
                let period = 256
                let delay = (captured.firstIndex { $0 != 0 } ?? 0) - (dirty.firstIndex { $0 != 0 } ?? 0)
                #expect(delay >= 0 && delay <= 4 * period, "delay \(delay)")
                for burstEnd in [12_300, 30_300] {
                    let from = burstEnd + max(0, delay) + period
                    let to = min(from + 4096, captured.count)
                    #expect(Array(captured[from..<to]) == Array(reference[from..<to]), "recovered within a period after frame \(burstEnd)")
                }
                // Stronger, since the bursts are replaced where they enter: equal throughout.
                #expect(captured == reference, "the bursts are heard as silence, nothing else changes")
            }
            #expect(tool.stdout.contains("non-finite: "), "a plain line when the count grows: \(tool.stdout)")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test(arguments: ["float32", "int24"])
        func aRecordingOfNonFiniteInputHoldsOnlyFiniteSamples(format: String) throws {
            let name = "gt-nf-rec-\(getpid())"
            let path = "/tmp/gt-nonfinite-\(getpid())-\(format).wav"
            defer { unlink(path) }
            let (dirty, _, _) = Self.bursts()
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--lowpass", "1000", "--channels", "1",
                                        "--record", path, "--record-format", format], server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stdout) \(tool.stderr)")
            let probe = ProbeClient(server: server, name: "probe-nf-rec", play: dirty, captureFrames: dirty.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")
            let captured = probe.run()
            #expect(captured.allSatisfy { $0.isFinite })
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            guard let file = readAudioFile(path) else { Issue.record("cannot read \(path): \(tool.stdout)"); return }
            let samples = file.channels[0]
            #expect(samples.count >= dirty.count, "the whole pass is in the file")
            #expect(samples.allSatisfy { $0.isFinite }, "no NaN or Inf in the recording")
            #expect(samples.contains { abs($0) > 0.01 }, "the speech is in it")
        }

        /// Parses each line as JSON the strict way (Foundation's JSONSerialization, which has no
        /// NaN or Infinity) and as Python's `json` refusing its NaN/Infinity constants.
        static func strictlyParsed(_ text: String) throws -> [[String: Any]] {
            let lines = text.split(separator: "\n").map(String.init)
            var objects: [[String: Any]] = []
            for line in lines {
                let value = try JSONSerialization.jsonObject(with: Data(line.utf8))
                guard let object = value as? [String: Any] else { throw CocoaError(.propertyListReadCorrupt) }
                objects.append(object)
            }
            let python = Process()
            python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            python.arguments = ["-c", "import json,sys; [json.loads(l, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) for l in sys.stdin]"]
            let input = Pipe()
            python.standardInput = input
            try python.run()
            input.fileHandleForWriting.write(Data(text.utf8))
            try input.fileHandleForWriting.close()
            python.waitUntilExit()
            #expect(python.terminationStatus == 0, "python3's strict json refused a line")
            return objects
        }

        @Test func jsonStatusLinesParseStrictlyWithSilenceAsNullAndTheNonFiniteCount() throws {
            let name = "gt-nf-json-\(getpid())"
            let (dirty, _, badFrames) = Self.bursts()
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--lowpass", "1000", "--json"], server: server)
            #expect(tool.waitFor("\"event\":\"mute\""), "startup: \(tool.stdout) \(tool.stderr)")
            // Silence first: the meters read −160 dBFS (the floor), which must be null, not -inf.
            #expect(tool.waitFor("\"event\":\"tick\""), "a status line once a second: \(tool.stdout)")
            let probe = ProbeClient(server: server, name: "probe-nf-json", play: dirty, captureFrames: dirty.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")
            let captured = probe.run()
            #expect(captured.allSatisfy { $0.isFinite })
            tool.send("mute")
            tool.send("status")
            #expect(tool.waitFor("\"event\":\"status\""), "\(tool.stdout)")
            tool.send("dump")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")

            let objects = try Self.strictlyParsed(tool.stdout)
            let events = objects.compactMap { $0["event"] as? String }
            #expect(events.first == "started" && events.last == "stopped", "\(events)")
            for event in ["mute", "tick", "non-finite", "status", "message"] { #expect(events.contains(event), "\(event) in \(events)") }
            for token in ["inf", "nan", "NaN", "Infinity"] {
                #expect(!tool.stdout.contains(":-\(token)") && !tool.stdout.contains(":\(token)"), "no \(token) as a value")
            }
            // Before the speech: every level is null (silence), none a number.
            let first = try #require(objects.first { $0["event"] as? String == "mute" })
            let levels = (first["input"] as? [[String: Any]] ?? []) + (first["output"] as? [[String: Any]] ?? [])
            #expect(levels.count == 4 && levels.allSatisfy { $0["rmsDB"] is NSNull && $0["peakDB"] is NSNull }, "\(first)")
            // After it: the status answer has the count, the mute, and the speech's levels as numbers.
            let status = try #require(objects.last { $0["event"] as? String == "status" })
            let count = (status["nonFiniteSamples"] as? NSNumber)?.intValue ?? -1
            if !probe.lastPassHadXruns && probe.xrunCount == 0 { #expect(count == badFrames, "\(status)") }
            else { #expect(count >= badFrames / 2, "\(status)") }
            #expect(status["mute"] as? Bool == true)
            #expect((status["lowpassHz"] as? NSNumber)?.intValue == 1000)
            #expect(status["xruns"] is NSNumber && status["dspLoad"] is NSNumber && status["renderErrors"] is NSNumber)
            let input = try #require(status["input"] as? [[String: Any]])
            #expect((input[0]["peakDB"] as? NSNumber).map { $0.doubleValue > -60 && $0.doubleValue <= 0 } == true, "the speech's held peak: \(input)")
        }

        @Test func graphrunJSONLinesParseStrictlyAndCountABurstIntoItsLowPass() throws {
            let name = "gr-nf-json-\(getpid())"
            let path = "/tmp/gr-nonfinite-\(getpid()).json"
            defer { unlink(path) }
            try Data("""
            { "channels": 1,
              "nodes": [ { "id": "lp", "type": "lowpass", "parameters": { "cutoff": 1000 } } ],
              "connections": [ { "from": "io", "to": "lp" }, { "from": "lp", "to": "io" } ] }
            """.utf8).write(to: URL(fileURLWithPath: path))
            let (dirty, _, badFrames) = Self.bursts()
            let tool = try ToolProcess("graphrun", [path, "--name", name, "--no-autoconnect", "--json"], server: server)
            #expect(tool.waitFor("\"event\":\"running\""), "startup: \(tool.stdout) \(tool.stderr)")
            let probe = ProbeClient(server: server, name: "probe-gr-nf", play: dirty, captureFrames: dirty.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")
            let captured = probe.run()
            #expect(captured.allSatisfy { $0.isFinite }, "no NaN or Inf at graphrun's output port")
            #expect(captured.contains { $0 != 0 }, "the speech came through")
            tool.send("status")
            #expect(tool.waitFor("\"event\":\"status\""), "\(tool.stdout)")
            #expect(tool.waitFor("\"event\":\"tick\""), "a status object once a second")
            tool.send("dump")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            let objects = try Self.strictlyParsed(tool.stdout)
            let events = objects.compactMap { $0["event"] as? String }
            #expect(events.first == "running" && events.last == "stopped" && events.contains("message"), "\(events)")
            let status = try #require(objects.last { $0["event"] as? String == "status" })
            let count = (status["nonFiniteSamples"] as? NSNumber)?.intValue ?? -1
            if probe.xrunCount == 0 { #expect(count == badFrames, "\(status)") } else { #expect(count >= badFrames / 2, "\(status)") }
            #expect(status["xruns"] is NSNumber && status["dspLoad"] is NSNumber && status["renderErrors"] is NSNumber)
            #expect((status["nodes"] as? NSNumber)?.intValue == 1 && (status["sampleRate"] as? NSNumber)?.intValue == 48_000)
        }
    }
}

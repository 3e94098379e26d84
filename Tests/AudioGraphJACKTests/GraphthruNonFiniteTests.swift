// Tests, JACK: NaN and ±Inf bursts played into graphthru (low-pass in) never reach its output or its recording; counted and shown.
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

        @Test func nanAndInfBurstsNeverReachTheOutputAndTheLowPassRecoversWithinAPeriod() throws {
            let name = "gt-nonfinite-\(getpid())"
            let (dirty, zeroed, badFrames) = Self.bursts()
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--lowpass", "1000"], server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stdout) \(tool.stderr)")
            let probe = ProbeClient(server: server, name: "probe-nf", play: dirty, captureFrames: dirty.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")

            let captured = probe.run()
            let passes = probe.lastPassHadXruns ? nil : 1
            #expect(captured.allSatisfy { $0.isFinite }, "no NaN or Inf at graphthru's output port")
            #expect(captured.contains { $0 != 0 }, "the speech came through")

            // The reference: the same speech with silence where the bursts were, through the same
            // low-pass (it has rung out to exact zeros between the runs: memory is flushed).
            _ = probe.state.play.update(fromContentsOf: zeroed)
            let reference = probe.run()
            // Within one period after each burst (and before it) the output is the reference's:
            // the filter kept nothing of the burst. The probe's delay is the same in both runs.
            let period = 256
            let start = captured.firstIndex { $0 != 0 } ?? 0
            let delay = max(0, start - (dirty.firstIndex { $0 != 0 } ?? 0))
            for burstEnd in [12_300, 30_300] {
                let from = burstEnd + delay + period
                let to = min(from + 4096, captured.count)
                #expect(Array(captured[from..<to]) == Array(reference[from..<to]), "recovered within a period after frame \(burstEnd)")
            }

            tool.send("status")
            #expect(tool.waitFor("status:"))
            let counted = Self.statusNumber(tool.stdout, "non-finite")
            if passes != nil {
                #expect(counted == UInt64(badFrames), "status: \(tool.stdout)")
            } else {
                #expect((counted ?? 0) >= UInt64(badFrames), "status: \(tool.stdout)")
            }
            #expect(tool.waitFor("non-finite: "), "a plain line when the count grows: \(tool.stdout)")
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
    }
}

// Tests, JACK: graphthru's loudness status (--meter lufs, the `meter` command) — a 1 kHz sine at −23 dBFS through a real jackd reads EBU Tech 3341's −23.0 LUFS in stereo, 3 dB less in mono.
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// graphthru with its status in LUFS, fed a sine made here from a client that plays it in a
    /// loop into every input; the readings come from the `status` line and the `--json` status.
    @Suite("graphthru loudness in LUFS against a real jackd")
    struct GraphthruLoudnessTests {
        let server = TestServer.shared

        /// Peak level of the test sine, dBFS (EBU Tech 3341 test 1).
        static let sineDBFS = -23.0

        /// One second of a 1 kHz sine at ``sineDBFS`` peak, 48 kHz: a whole number of cycles, so
        /// the loop client plays it without a seam.
        static func sine() -> [Float] {
            let amplitude = pow(10, sineDBFS / 20)
            return (0..<48_000).map { Float(amplitude * sin(2 * Double.pi * 1000 * Double($0) / 48_000)) }
        }

        /// What ITU-R BS.1770 gives for the sine on `channels` channels (weight 1 each): the
        /// K-weighting's +0.691 dB at 1 kHz cancels the −0.691 offset, so the loudness is
        /// 10·log10(Σ mean squares) = 10·log10(channels · A²/2): the peak level for two channels
        /// (−23.0 LUFS, Tech 3341), 3.01 dB less for one.
        static func expectedLUFS(channels: Int) -> Double {
            sineDBFS + 10 * log10(Double(channels) / 2)
        }

        /// The number before `unit` after `label` in `line` ("momentary -23.0 LUFS" → −23.0).
        static func value(_ label: String, _ unit: String, in line: String) -> Double? {
            guard let start = line.range(of: label + " ")?.upperBound,
                  let end = line[start...].range(of: " " + unit)?.lowerBound else { return nil }
            return Double(line[start..<end])
        }

        @Test(arguments: [2, 1])
        func aSineAtMinus23DBFSReadsItsLoudnessInTheStatusLine(channels: Int) throws {
            let name = "gt-lufs-\(channels)-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--channels", "\(channels)", "--meter", "lufs"], server: server)
            #expect(tool.waitFor("meter: lufs"), "startup: \(tool.stdout) \(tool.stderr)")
            tool.send("status")
            #expect(tool.waitFor("; loudness: momentary -inf LUFS"), "silence before the sine: \(tool.stdout)")
            guard let loop = LoopClient(server: server, name: "loop-lufs-\(channels)", samples: Self.sine()) else {
                Issue.record("no server for the loop client"); return
            }
            let probe = ProbeClient(server: server, name: "probe-lufs-\(channels)", play: [0], captureFrames: 1)
            for k in 1...channels { probe.connect(loop.outPort, "\(name):in_\(k)") }
            // 3.5 s: the short-term window (3 s) is full of the sine, plus the meter's 0.1 s blocks.
            usleep(3_500_000)
            tool.send("status")
            #expect(tool.waitFor("; loudness: ", count: 2), "\(tool.stdout)")
            let line = tool.stdout.split(separator: "\n").last { $0.hasPrefix("status: ") }.map(String.init) ?? ""
            let expected = Self.expectedLUFS(channels: channels)
            for label in ["momentary", "short-term", "integrated"] {
                let reading = Self.value(label, "LUFS", in: line)
                #expect(reading.map { abs($0 - expected) <= 0.5 } == true, "\(label) \(String(describing: reading)) LUFS, expected \(expected) ± 0.5: \(line)")
            }
            // True peak is the largest channel's, whatever the channel count: the sine's peak.
            // Never below it; above it only when an xrun cut the sine (a step overshoots in the
            // 4× oversampling, and true peak holds the largest since the meter started).
            let peak = Self.value("true peak", "dBTP", in: line)
            let xruns = Self.value("xruns", "non-finite", in: line.replacingOccurrences(of: ",", with: ""))
            #expect(peak.map { $0 >= Self.sineDBFS - 0.5 && (xruns != 0 || $0 <= Self.sineDBFS + 0.5) } == true,
                    "true peak \(String(describing: peak)) (xruns \(String(describing: xruns))): \(line)")

            // Back to dBFS: the loudness leaves the status line; a wrong word changes nothing.
            tool.send("meter dbfs")
            #expect(tool.waitFor("meter: dbfs"), "\(tool.stdout)")
            tool.send("meter loud")
            #expect(tool.waitForError("meter takes dbfs or lufs, not 'loud'"), "\(tool.stderr)")
            tool.send("status")
            #expect(tool.waitFor("status: ", count: 3))
            let after = tool.stdout.split(separator: "\n").last { $0.hasPrefix("status: ") }.map(String.init) ?? ""
            #expect(!after.contains("loudness") && after.contains("output -"), "dBFS levels only: \(after)")
            withExtendedLifetime(loop) {}
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
        }

        @Test func theMeterCommandPutsTheLoudnessIntoTheJSONStatus() throws {
            let name = "gt-lufs-json-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--json"], server: server)
            #expect(tool.waitFor("\"event\":\"mute\""), "startup: \(tool.stdout) \(tool.stderr)")
            guard let loop = LoopClient(server: server, name: "loop-lufs-json", samples: Self.sine()) else {
                Issue.record("no server for the loop client"); return
            }
            let probe = ProbeClient(server: server, name: "probe-lufs-json", play: [0], captureFrames: 1)
            for k in 1...2 { probe.connect(loop.outPort, "\(name):in_\(k)") }
            tool.send("meter lufs")
            #expect(tool.waitFor("\"event\":\"meter\""), "\(tool.stdout)")
            usleep(3_500_000)
            tool.send("status")
            #expect(tool.waitFor("\"event\":\"status\""), "\(tool.stdout)")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            withExtendedLifetime(loop) {}

            let objects = try GraphthruNonFiniteTests.strictlyParsed(tool.stdout)
            let before = try #require(objects.first { $0["event"] as? String == "mute" })
            #expect(before["meter"] as? String == "dbfs" && before["loudness"] is NSNull, "dBFS at start: \(before)")
            let status = try #require(objects.last { $0["event"] as? String == "status" })
            #expect(status["meter"] as? String == "lufs", "\(status)")
            let loudness = try #require(status["loudness"] as? [String: Any], "\(status)")
            let expected = Self.expectedLUFS(channels: 2)
            for key in ["momentaryLUFS", "shortTermLUFS", "integratedLUFS"] {
                let reading = (loudness[key] as? NSNumber)?.doubleValue
                #expect(reading.map { abs($0 - expected) <= 0.5 } == true, "\(key) \(String(describing: reading)), expected \(expected) ± 0.5: \(loudness)")
            }
            let peak = (loudness["truePeakDBTP"] as? NSNumber)?.doubleValue
            let xruns = (status["xruns"] as? NSNumber)?.intValue
            #expect(peak.map { $0 >= Self.sineDBFS - 0.5 && (xruns != 0 || $0 <= Self.sineDBFS + 0.5) } == true,
                    "true peak (above the sine's only after an xrun, \(String(describing: xruns))): \(loudness)")
            #expect((loudness["rangeLU"] as? NSNumber).map { $0.doubleValue >= 0 && $0.doubleValue < 1 } == true,
                    "a steady sine has (almost) no loudness range: \(loudness)")
            // The level meters go on in the JSON either way: the sine's RMS, A/√2, is −26.0 dBFS.
            let output = try #require(status["output"] as? [[String: Any]])
            let rms = (output.first?["rmsDB"] as? NSNumber)?.doubleValue
            #expect(rms.map { abs($0 - (Self.sineDBFS - 10 * log10(2))) <= 0.5 } == true, "\(output)")
        }
    }
}

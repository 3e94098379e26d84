// Tests, JACK: the two ported Apple examples (Examples/PlayThrough, Examples/SpeechRecorder) run against a real jackd with real speech.
import AudioGraph
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    @Suite("Ported Apple examples against a real jackd")
    struct PortedExamplesTests {
        let server = TestServer.shared

        /// The AUGraph play-through: the speaker's callback pulls the microphone (or, with
        /// --gate, a mute gate does it): bit-exact speech, exact silence when muted, back again.
        @Test(arguments: [false, true])
        func playThroughPassesSpeechAndMutes(gate: Bool) throws {
            let name = "pt-\(gate ? "gate" : "callback")-\(getpid())"
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-\(name)", play: speech, captureFrames: speech.count + 8192)
            let tool = try ToolProcess("play-through", (gate ? ["--gate"] : []) + ["--name", name, "--input", probe.outPort, "--output", probe.inPort],
                                       server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stdout) \(tool.stderr)")
            #expect(tool.stdout.contains(gate ? "mute gate" : "render callback"))
            probe.expectExact(speech, "real speech passes bit for bit")
            tool.send("mute")
            #expect(tool.waitFor("mute: on"))
            usleep(100_000)  // past the gate's 10 ms ramp
            let muted = probe.run()
            #expect(muted.allSatisfy { $0 == 0 }, "muted: exact silence; peak \(muted.map(abs).max() ?? 0)")
            tool.send("unmute")
            #expect(tool.waitFor("mute: off", count: 2))
            usleep(100_000)
            probe.expectExact(speech, "bit-exact again")
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            #expect(tool.stdout.contains("0 render error(s)"), "\(tool.stdout)")
        }

        /// The RemoteIO recorder: real speech into the microphone arrives in a 16 kHz 16-bit mono
        /// WAV with its energy (resampling keeps speech's energy: little of it is above 8 kHz),
        /// and the input callback's level shows it.
        @Test func speechRecorderWritesSixteenKilohertzSixteenBitMono() throws {
            let name = "sr-\(getpid())"
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).wav").path
            defer { unlink(path) }
            let speech = Speech.load().samples
            // The file holds every pass played, so a pass with an xrun (audio lost by JACK's
            // design) is recorded again by a new run of the tool, 5 times at most.
            var attempt = 0, tool: ToolProcess
            repeat {
                attempt += 1
                let probe = ProbeClient(server: server, name: "probe-\(name)", play: speech, captureFrames: speech.count + 8192)
                tool = try ToolProcess("speech-recorder", ["--name", name, "--input", probe.outPort, path], server: server)
                #expect(tool.waitFor("recording \(name):in_1"), "startup: \(tool.stdout) \(tool.stderr)")
                _ = probe.run(passes: 1)
                #expect(tool.waitFor("level:", count: 2))
                tool.send("quit")
                #expect(tool.waitForExit() == 0, "\(tool.stderr)")
                if !probe.lastPassHadXruns { break }
            } while attempt < 5
            let levels = tool.stdout.split(separator: "\n").compactMap { line -> Int? in
                guard line.hasPrefix("level: ") else { return nil }
                return Int(line.dropFirst(7).prefix { $0 != " " })
            }
            #expect(levels.contains { $0 > -20 }, "the callback's level saw the speech: \(levels)")
            guard let file = readAudioFile(path) else { Issue.record("no readable file at \(path)"); return }
            #expect(file.info.samplerate == 16_000 && file.info.channels == 1)
            #expect(file.info.format & 0xFFFF == 0x0002, "16-bit PCM (SF_FORMAT_PCM_16)")
            let recorded = file.channels[0].reduce(0.0) { $0 + Double($1) * Double($1) }
            let played = speech.reduce(0.0) { $0 + Double($1) * Double($1) } / 3  // a third of the samples
            let difference = 10 * log10(recorded / played)
            #expect(abs(difference) < 0.5, "energy in the file vs the speech at 16 kHz: \(difference) dB")
            #expect(tool.stdout.contains("(0 dropped)"), "\(tool.stdout)")
        }

        /// --seconds records exactly that many frames at 16 kHz, whatever the period, and the end
        /// of standard input does not cut it short.
        @Test func speechRecorderSecondsAreExact() throws {
            let name = "sr-sec-\(getpid())"
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).wav").path
            defer { unlink(path) }
            let tool = try ToolProcess("speech-recorder", ["--name", name, "--seconds", "1.5", path], server: server)
            try tool.stdin.fileHandleForWriting.close()   // end of input at once
            #expect(tool.waitForExit(timeout: 10) == 0, "\(tool.stderr)")
            let file = try #require(readAudioFile(path))
            #expect(file.info.frames == 24_000 && file.info.samplerate == 16_000, "\(file.info.frames) frames")
        }

        /// voice-memo, the AVAudioRecorder / AVAudioPlayer port: real speech into its input is
        /// recorded as 12 kHz mono Opus for exactly the duration with a moving level bar, its
        /// loudness read in LUFS; then played back from a seek, twice, the player's level bar
        /// showing the speech, and back at the start when it finishes.
        @Test func voiceMemoRecordsOpusWithALevelBarAndPlaysItBackLooped() throws {
            let name = "vm-\(getpid())"
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).opus").path
            defer { unlink(path) }
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-\(name)", play: speech, captureFrames: speech.count + 8192)
            let tool = try ToolProcess("voice-memo", ["--name", name, "--input", probe.outPort, "--seconds", "2",
                                                      "--seek", "0.5", "--loops", "1", path], server: server)
            #expect(tool.waitFor("recording \(name):in_1"), "startup: \(tool.stdout) \(tool.stderr)")
            _ = probe.run(passes: 1)
            #expect(tool.waitFor("played; back at 0.00 s", timeout: 20), "\(tool.stdout) \(tool.stderr)")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            let lines = tool.stdout.split(separator: "\n")
            func levels(_ prefix: String) -> [Double] {
                lines.filter { $0.hasPrefix(prefix) }.compactMap { line in
                    line.range(of: "] ").flatMap { Double(line[$0.upperBound...].prefix { $0 != " " }) }
                }
            }
            let recording = levels("level ["), playing = levels("playing [")
            #expect(recording.contains { $0 > -30 }, "the recorder's bar saw the speech: \(recording)")
            #expect(playing.contains { $0 > -30 }, "the player's bar saw it played back: \(playing)")
            #expect(playing.count >= 8, "2 × 1.5 s of playback, a bar every 0.25 s: \(playing.count)")
            let loudness = try #require(lines.first { $0.hasPrefix("recorded 2.00 s; integrated loudness ") }, "\(tool.stdout)")
            let lufs = try #require(Double(loudness.split(separator: " ")[5]), "\(loudness)")
            #expect(lufs > -35 && lufs < -10, "speech's loudness: \(loudness)")
            let file = try #require(readAudioFile(path))
            #expect(file.info.samplerate == 12_000 && file.info.channels == 1)
            #expect(abs(Int(file.info.frames) - 24_000) <= 240, "2 s at 12 kHz within one Opus frame: \(file.info.frames)")
            #expect(tool.stdout.contains("from 0.5 s, 2 time(s)"), "\(tool.stdout)")
        }

        @Test func voiceMemoRefusesBadOptionsAndFilesBeforeJoiningJACK() throws {
            for (arguments, message) in [(["/nonexistent-dir/memo.opus"], "cannot create /nonexistent-dir/memo.opus"),
                                         (["memo.wav"], "name a .opus file"),
                                         (["--seconds", "0", "memo.opus"], "--seconds takes a number"),
                                         (["--seconds", "2", "--seek", "3", "memo.opus"], "past the recording"),
                                         (["--loops", "1.5", "memo.opus"], "--loops takes a whole number -1…100, not '1.5'")] {
                let tool = try ToolProcess("voice-memo", ["--name", "vm-bad-\(getpid())"] + arguments, server: server)
                #expect(tool.waitForExit() == 2, "\(arguments): \(tool.stderr)")
                #expect(tool.stderr.contains(message), "\(arguments): \(tool.stderr)")
            }
            let clients = try run("/usr/bin/jack_lsp", [], server: server)
            #expect(!clients.contains("vm-bad-"), "no client joined: \(clients)")
            // No server: status 1, and the file it made to check the path is gone again (one
            // that was there before is left as it was).
            let path = "/tmp/ag-vm-noserver-\(getpid()).opus"
            defer { unlink(path) }
            let noServer = try ToolProcess("voice-memo", ["--name", "vm-nosrv-\(getpid())", "--server", "nosuch-\(getpid())", path], server: server)
            #expect(noServer.waitForExit() == 1, "\(noServer.stderr)")
            #expect(access(path, F_OK) != 0, "the empty file it made is removed: \(noServer.stderr)")
            let kept = FileManager.default.createFile(atPath: path, contents: Data("mine".utf8))
            let again = try ToolProcess("voice-memo", ["--name", "vm-nosrv-\(getpid())", "--server", "nosuch-\(getpid())", path], server: server)
            #expect(kept && again.waitForExit() == 1, "\(again.stderr)")
            #expect(FileManager.default.contents(atPath: path) == Data("mine".utf8), "a file that was there is left alone")
        }

        @Test func speechRecorderRefusesABadFileBeforeJoiningJACK() throws {
            let tool = try ToolProcess("speech-recorder", ["--name", "sr-bad-\(getpid())", "/nonexistent-dir/take.wav"], server: server)
            #expect(tool.waitForExit() == 2)
            #expect(tool.stderr.contains("cannot create /nonexistent-dir/take.wav"), "\(tool.stderr)")
            let clients = try run("/usr/bin/jack_lsp", [], server: server)
            #expect(!clients.contains("sr-bad-"), "no client joined: \(clients)")
        }
    }
}

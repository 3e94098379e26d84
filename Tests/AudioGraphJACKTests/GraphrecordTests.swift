// Tests, JACK: graphrecord against a real jackd — patterns, --duration, every channel's level, bad options, help.
import AudioGraph
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// graphrecord as a user runs it: ports by pattern, a take of an exact length, the level of
    /// every channel, and bad options refused with status 2 before JACK is joined.
    @Suite("graphrecord against a real jackd")
    struct GraphrecordTests {
        let server = TestServer.shared

        /// Two patterns fill in_1… in order: `system:capture_.*` takes in_1 and in_2, the
        /// probe's port (a pattern, not its exact name) in_3; the file's third channel holds the
        /// speech bit for bit, and the level line shows all three channels, in_3 loud and the
        /// dummy capture ports silent.
        @Test func patternsFillTheInputsAndTheLevelLineShowsEveryChannel() throws {
            let speech = Speech.load().samples
            let path = "/tmp/ag-grec-pattern-\(getpid()).wav"
            defer { unlink(path) }
            let probe = ProbeClient(server: server, name: "probe-grec-pat", play: speech, captureFrames: speech.count + 72_000)
            let tool = try ToolProcess("graphrecord", ["--name", "grec-pat-\(getpid())", "--channels", "3",
                                                       "--input", "system:capture_.*", "--input", "\(probe.name):o.t", path], server: server)
            #expect(tool.waitFor("recording"), "startup: \(tool.stdout) \(tool.stderr)")
            _ = probe.run()   // the speech, then 1.5 s of silence: a level line falls inside
            #expect(tool.waitFor("level (dBFS RMS/peak): in_1 ", count: 2), "\(tool.stdout)")
            kill(tool.process.processIdentifier, SIGINT)
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")

            let file = try #require(readAudioFile(path))
            #expect(file.info.channels == 3)
            #expect(exactOccurrence(of: speech, in: file.channels[2]) != nil, "the probe's port, matched by a pattern, fed in_3")
            #expect(file.channels[0].allSatisfy { $0 == 0 } && file.channels[1].allSatisfy { $0 == 0 }, "in_1, in_2: the dummy driver's silent capture ports")

            let levels = tool.stdout.split(separator: "\n").filter { $0.hasPrefix("level") }
            #expect(levels.allSatisfy { $0.contains("in_1 -160.0/-160.0, in_2 -160.0/-160.0, in_3 ") }, "\(levels)")
            #expect(levels.contains { !$0.contains("in_3 -160.0/-160.0") }, "in_3 shows the speech: \(levels)")
        }

        /// At exit graphrecord says the EBU R128 loudness of what came in: a 1 kHz sine at −23
        /// dBFS on its one channel reads −26.0 LUFS (BS.1770 sums channels: one is 3 dB below
        /// two), true peak −23.0 dBTP; the silence around it is gated out. Silence alone reads none.
        @Test func atExitItSaysTheIntegratedLoudnessAndTruePeakOfWhatCameIn() throws {
            let amplitude = Float(pow(10, -23.0 / 20))
            // 6 s, faded in and out over 50 ms (an abrupt start rings in the true-peak interpolator;
            // fades this short move the integrated loudness by under 0.05 LU).
            let tone = (0..<288_000).map { i -> Float in
                let fade = Float(min(1, Double(min(i, 288_000 - i)) / 2_400))
                return amplitude * fade * Float(sin(2 * Double.pi * 1000 * Double(i) / 48_000))
            }
            let path = "/tmp/ag-grec-loud-\(getpid()).wav"
            defer { unlink(path) }
            let name = "grec-loud-\(getpid())"
            // One pass of the tone per take: a pass the server reported an xrun in (audio lost by
            // JACK's design, and the tone's edges doubled by a replay) is recorded again, 3 takes at most.
            for attempt in 1...3 {
                let probe = ProbeClient(server: server, name: "probe-grec-loud", play: tone, captureFrames: tone.count + 24_000)
                let tool = try ToolProcess("graphrecord", ["--name", name, "--channels", "1", "--input", probe.outPort, path], server: server)
                #expect(tool.waitFor("recording"), "startup: \(tool.stdout) \(tool.stderr)")
                _ = probe.run(passes: 1)
                kill(tool.process.processIdentifier, SIGINT)
                #expect(tool.waitForExit() == 0, "\(tool.stderr)")
                if probe.lastPassHadXruns && attempt < 3 { continue }
                let line = try #require(tool.stdout.split(separator: "\n").first { $0.hasPrefix("integrated loudness") }, "\(tool.stdout)")
                // The 0.4 s gating blocks that straddle the tone's ends and the silence count (within
                // the relative gate) and take up to 0.1 LU off.
                let words = line.split(separator: " ")
                let integrated = try #require(Double(words[2])), peak = try #require(Double(words[6]))
                #expect(abs(integrated - -26.0) <= 0.15 && words[3] == "LUFS," && abs(peak - -23.0) <= 0.1 && words[7] == "dBTP",
                        "\(line) (take \(attempt); xruns in the pass: \(probe.lastPassHadXruns))")
                break
            }

            let silent = try ToolProcess("graphrecord", ["--name", name, "--input", "system:capture_1", "--duration", "0.5", path], server: server)
            #expect(silent.waitForExit() == 0, "\(silent.stderr)")
            #expect(silent.stdout.contains("integrated loudness none (nothing above the -70 LUFS gate), true peak none (digital silence)"), "\(silent.stdout)")
        }

        /// Speech recorded to Ogg Opus at 12 kHz mono, 64 kbit/s, as the AVAudioRecorder material
        /// records it (AAC there): the file decodes to the speech, resampled, above 20 dB SNR; and
        /// after `kill -9` mid-recording it still decodes up to its last complete Ogg page, the
        /// loss measured against the frames the last level line counted.
        @Test func opusAt12kHzMonoRecordsSpeechAndSurvivesKill9UpToItsLastPage() throws {
            let speech = Speech.load().samples
            let path = "/tmp/ag-grec-opus-\(getpid()).opus"
            defer { unlink(path) }
            let name = "grec-opus-\(getpid())"
            let repeated = Array([[Float]](repeating: speech + [Float](repeating: 0, count: 4800), count: 4).joined())
            let probe = ProbeClient(server: server, name: "probe-grec-opus", play: repeated, captureFrames: repeated.count)
            let tool = try ToolProcess("graphrecord", ["--name", name, "--channels", "1", "--rate", "12000", "--bit-rate", "64000",
                                                       "--input", probe.outPort, path], server: server)
            #expect(tool.waitFor("recording \(name):in_1… to \(path) (opus, 64000 bit/s, 12000 Hz)"), "\(tool.stdout) \(tool.stderr)")
            _ = probe.run()
            #expect(tool.waitFor("frames written", count: 3), "\(tool.stdout)")
            let lines = tool.stdout.split(separator: "\n").filter { $0.hasPrefix("level") }
            let counted = try #require(lines.last.flatMap { Int($0.split(separator: " ").dropLast(2).last ?? "") })
            kill(tool.process.processIdentifier, SIGKILL)
            _ = tool.waitForExit()
            let file = try #require(readAudioFile(path), "the killed recording still opens")
            #expect(file.info.samplerate == 12_000 && file.info.frames > 0)
            let lost = counted - Int(file.info.frames)
            print("Opus after kill -9: \(file.info.frames) frames decode, \(counted) counted by the last level line (up to a second before the kill): \(lost > 0 ? "at most \(lost) frames (\(String(format: "%.2f", Double(lost) / 12_000)) s) lost" : "nothing lost that was counted")")
            #expect(lost < 12_000 * 2, "at most the ring and one Ogg page lost: \(lost) frames")
            // What decodes is the speech (4 passes of it), resampled to 12 kHz, through Opus.
            let converter = try AudioConverter(from: try .float32(sampleRate: 48_000, channels: 1),
                                               to: try .float32(sampleRate: 12_000, channels: 1, interleaved: true))
            let reference = try runConverter(converter, [speech], chunk: 4096)[0]
            let decoded = file.channels[0]
            let start = try #require(decoded.firstIndex { abs($0) > 1e-3 })
            var best = -Double.infinity
            for lag in max(0, start - 400)...min(decoded.count - reference.count, start + 400) {
                var signal = 0.0, noise = 0.0
                for i in 0..<reference.count {
                    signal += Double(reference[i] * reference[i])
                    let d = Double(decoded[lag + i] - reference[i]); noise += d * d
                }
                best = max(best, 10 * log10(signal / max(noise, 1e-30)))
            }
            #expect(best >= 20, "speech through Opus 64 kbit/s: SNR \(best) dB")
        }

        /// A rate Opus does not take is recorded at its next one, and the note says the rate
        /// asked and the server's, which the audio is converted from.
        @Test func anOpusRateItDoesNotTakeIsSaidWithTheRateAskedAndTheServers() throws {
            let path = "/tmp/ag-grec-opusrate-\(getpid()).opus"
            defer { unlink(path) }
            let tool = try ToolProcess("graphrecord", ["--name", "grec-opusrate-\(getpid())", "--channels", "1", "--rate", "11025",
                                                       "--duration", "0.2", path], server: server)
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            #expect(tool.stderr == "graphrecord: note: Opus takes 8000, 12000, 16000, 24000 or 48000 Hz: recording at 12000 Hz (asked 11025 Hz), converted from the server's 48000 Hz\n", "\(tool.stderr)")
            #expect(readAudioFile(path)?.info.samplerate == 12_000)
        }

        /// --duration stops by itself with exactly SECONDS × rate frames in the file, at the
        /// server's rate or at --rate's.
        @Test(arguments: [(["--duration", "0.75"], 36_000, 48_000), (["--duration", "0.5", "--rate", "16000", "--format", "int16"], 8_000, 16_000)])
        func durationRecordsExactlyThatManyFrames(options: [String], frames: Int, rate: Int) throws {
            let path = "/tmp/ag-grec-duration-\(getpid())-\(rate).wav"
            defer { unlink(path) }
            let tool = try ToolProcess("graphrecord", ["--name", "grec-dur-\(getpid())", "--input", "system:capture_1"] + options + [path], server: server)
            #expect(tool.waitForExit() == 0, "it stops by itself: \(tool.stdout) \(tool.stderr)")
            let file = try #require(readAudioFile(path))
            #expect(file.info.frames == Int64(frames) && file.info.samplerate == Int32(rate), "\(file.info.frames) frames at \(file.info.samplerate) Hz")
            #expect(tool.stdout.contains("(\(frames) frames)") && tool.stdout.contains("recorded \(frames) frames to \(path) (0 dropped)"), "\(tool.stdout)")
        }

        /// A disk that fills up while recording (a 256 KiB tmpfs: under 1.5 s of float32
        /// mono) is said at once, with the frames the file holds, and ends the run by itself
        /// with status 1 — no signal is sent; before, the count froze while level lines went on
        /// until the user stopped it. The file reads back with exactly the frames said.
        @Test(.enabled(if: TinyDisk.canMount, "mounts a tmpfs: run as root"))
        func aFullDiskIsSaidAtOnceAndEndsTheRecordingWithStatusOne() throws {
            let disk = try TinyDisk(kibibytes: 256)
            defer { disk.remove() }
            let path = disk.path + "/full.wav"
            let tool = try ToolProcess("graphrecord", ["--name", "grec-full-\(getpid())", "--channels", "1", "--input", "system:capture_1", path], server: server)
            #expect(tool.waitForExit(timeout: 10) == 1, "it stops by itself: \(tool.stdout) \(tool.stderr)")
            if tool.process.isRunning { kill(tool.process.processIdentifier, SIGKILL); _ = tool.waitForExit() }
            let errors = tool.stderr.split(separator: "\n")
            #expect(errors.count == 1 && errors[0].hasPrefix("graphrecord: writing \(path) failed: ") && errors[0].contains("No space left on device")
                    && errors[0].hasSuffix(" frames written before the failure"), "said once: \(tool.stderr)")
            let holds = "(libsndfile); the file holds the "
            let said = errors.first?.firstRange(of: holds).flatMap { Int64(errors[0][$0.upperBound...].prefix { $0.isNumber }) }
            let file = try #require(readAudioFile(path), "the file is closed with a valid header")
            #expect(said == file.info.frames && file.info.frames > 0, "said \(said ?? -1), the file holds \(file.info.frames)")
            #expect(!tool.stdout.contains("recorded "), "no success line: \(tool.stdout)")
        }

        /// Bad options: status 2 and one line saying what is wrong, before JACK is joined (the
        /// server named does not exist, so joining would have failed with status 1), and no
        /// file is left behind.
        static let badOptions: [([String], String)] = [
            (["/tmp/ag-grec-bad.m4a"], "cannot tell the file type from \"/tmp/ag-grec-bad.m4a\": use .wav, .flac, .opus, .ogg or .mp3 (AAC/.m4a is not available"),
            (["--quality", "0.5", "/tmp/ag-grec-bad.wav"], "wav is lossless: --quality and --bit-rate are for .opus, .ogg and .mp3"),
            (["--bit-rate", "64000", "/tmp/ag-grec-bad.ogg"], "--bit-rate is for Opus; vorbis takes --quality"),
            (["--bit-rate", "64000", "--quality", "0.5", "/tmp/ag-grec-bad.opus"], "--bit-rate and --quality both set the Opus encoder's rate: give one (--bit-rate is for .opus only; --quality for .opus, .ogg and .mp3)"),
            (["--bit-rate", "100", "/tmp/ag-grec-bad.opus"], "--bit-rate takes 6000…256000 bit/s per channel (12000…512000 in all for 2 channels), not '100'"),
            (["--channels", "1", "--bit-rate", "300000", "/tmp/ag-grec-bad.opus"], "--bit-rate takes 6000…256000 bit/s per channel, not '300000'"),
            (["--quality", "2", "/tmp/ag-grec-bad.opus"], "--quality takes 0 (smallest) … 1 (best), not '2'"),
            (["--format", "int16", "/tmp/ag-grec-bad.opus"], "opus is compressed: it takes a quality, not a sample format (int16)"),
            (["--rate", "0", "/tmp/ag-grec-bad.wav"], "--rate must be a whole number 1…768000, not '0'"),
            (["/nonexistent-dir/x.wav"], "cannot create /nonexistent-dir/x.wav: /nonexistent-dir: No such file or directory"),
            (["/tmp"], "cannot tell the file type from \"/tmp\""),
            (["--name", "a:b", "/tmp/ag-grec-bad.wav"], "--name 'a:b': ':' separates client and port names"),
            (["/tmp/ag-grec-bad.wav", "/tmp/ag-grec-bad2.wav"], "one file only ('/tmp/ag-grec-bad.wav' and '/tmp/ag-grec-bad2.wav')"),
            (["--format", "float32", "/tmp/ag-grec-bad.flac"], "flac cannot hold float32 samples"),
            (["--duration", "0", "/tmp/ag-grec-bad.wav"], "--duration takes a number of seconds above 0, not '0'"),
            (["--duration", "0.00001", "--rate", "8000", "/tmp/ag-grec-bad.wav"], "--duration 1e-05 is less than one frame at 8000 Hz"),
            (["--channels", "1", "--input", "a", "--input", "b", "/tmp/ag-grec-bad.wav"], "2 --input ports but only 1 channel (raise --channels)"),
            (["--output", "x", "/tmp/ag-grec-bad.wav"], "unknown option '--output'"),
            ([], "say which file to record to"),
        ]

        @Test(arguments: 0..<GraphrecordTests.badOptions.count)
        func badOptionsExit2BeforeJoiningJACK(_ index: Int) throws {
            let (options, message) = Self.badOptions[index]
            try expectRefusedBeforeJoiningJACK("graphrecord", options, saying: message, filesUnder: ["/tmp/ag-grec-bad"])
        }

        /// A --rate the server's cannot be converted to (more than 256 times lower) is found once
        /// the server's rate is known: still status 2, and no file.
        @Test func aRateTooFarFromTheServersIsABadOption() throws {
            let path = "/tmp/ag-grec-rate-\(getpid()).wav"
            let tool = try ToolProcess("graphrecord", ["--name", "grec-rate-\(getpid())", "--rate", "100", path], server: server)
            #expect(tool.waitForExit() == 2, "\(tool.stderr)")
            #expect(tool.stderr.contains("100 Hz from an element at 48000 Hz: the rate ratio must be within 1/256…256"), "\(tool.stderr)")
            #expect(access(path, F_OK) != 0)
        }

        /// --help: every option with a description, the file, the output and the exit statuses.
        @Test func helpDescribesOptionsOutputAndExitStatus() throws {
            let tool = try ToolProcess("graphrecord", ["--help"], server: server)
            #expect(tool.waitForExit() == 0)
            let help = tool.stdout
            #expect(help.hasPrefix("usage: graphrecord [options] FILE\n"), "\(help)")
            for option in ["--name NAME", "--server NAME", "--channels N", "--input PORT", "--format F", "--rate HZ", "--duration SECONDS", "--help"] {
                #expect(help.contains("\n  \(option) "), "\(option) is described: \(help)")
            }
            for section in ["\noptions:\n", "\nFILE: ", "\noutput: ", "\nexit status: 0 "] {
                #expect(help.contains(section), "section \(section): \(help)")
            }
            #expect(help.contains("2 for bad options"))
        }
    }
}

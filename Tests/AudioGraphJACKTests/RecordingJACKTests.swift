// Tests, JACK: taps, meters and recording through a real jackd.
import AudioGraph
import AudioGraphJACK
import CAllocCounter
import CSndFile
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing


/// A render callback writing a 0.25-amplitude tone that arms the allocation counter on the
/// thread calling it (the JACK process thread).
let armedTone: RenderCallback = { time, _, buffers in
    alloccounter_arm_this_thread()
    for c in 0..<buffers.channelCount {
        let out = buffers[c]
        for f in 0..<buffers.frameCount { out[f] = 0.25 * Float(sin(Double(Int(time.sampleTime) + f) * 0.05)) }
    }
    return 0
}

extension JACKIntegration {
    /// Taps, meters and recordings of live JACK audio, with real speech.
    @Suite("Taps, meters and recording through a real jackd")
    struct RecordingJACKTests {
        let server = TestServer.shared

        /// Speech played into the driver: the recording (Float32 WAV) holds it bit for bit; a
        /// speech-recognizer tap gets 16 kHz Int16 mono blocks with no gap; the input meter's
        /// maximum peak is the speech's own peak.
        @Test func speechIsRecordedBitExactAndTappedWithoutGaps() throws {
            let speech = Speech.load().samples
            let graph = AudioGraph()
            let io = IOUnit(), gate = MuteGateUnit()
            let ioNode = try graph.addNode(io), gateNode = try graph.addNode(gate)
            try io.setInputEnabled(true)
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, gateNode, destinationInputElement: 0)
            try graph.connectNodeInput(gateNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
            var options = JACKDriver.Options()
            options.clientName = "ag-rec5"
            options.serverName = server
            let driver = try JACKDriver(graph: graph, options: options)
            defer { driver.close() }
            try driver.start()

            let path = "/tmp/ag-rec5-\(getpid()).wav"
            defer { unlink(path) }
            let recorder = try Recorder(graph: graph, node: gateNode, path: path)
            let meter = try graph.installLevelMeter(on: ioNode, element: IOUnit.inputElement)
            let blocks = Mutex<[AudioTapBlock]>([])
            let speechFormat = try StreamFormat.int16(sampleRate: 16_000, channels: 1)
            let recognizer = try graph.installTap(on: ioNode, element: IOUnit.inputElement, blockFrames: 320, format: speechFormat) { block in
                blocks.withLock { $0.append(block) }
            }

            let probe = ProbeClient(server: server, name: "probe-rec5", play: speech, captureFrames: speech.count + 8192)
            probe.connect("\(probe.name):out", "\(driver.clientName):in_1")
            _ = probe.run()
            usleep(200_000)
            try graph.removeTap(recognizer)
            try recorder.stop()

            let file = try #require(readAudioFile(path))
            #expect(file.info.samplerate == Int32(driver.sampleRate) && file.info.channels == 2)
            #expect(exactOccurrence(of: speech, in: file.channels[0]) != nil, "the speech is in the file bit for bit")
            #expect(recorder.framesDropped == 0 && recorder.framesWritten == UInt64(file.channels[0].count))

            let received = blocks.withLock { $0 }
            #expect(recognizer.framesDropped == 0 && received.allSatisfy { $0.framesDroppedBefore == 0 })
            for (a, b) in zip(received, received.dropFirst()) {
                #expect(b.sampleTime == a.sampleTime + Double(a.frameCount) * 3, "contiguous: 320 frames at 16 kHz = 960 at 48 kHz")
            }
            let samples = received.flatMap { $0.int16Samples()! }
            let peak16 = Double(samples.map { abs(Int($0)) }.max() ?? 0) / 32768
            let speechPeak = Double(speech.map(abs).max()!)
            // Stereo → mono averages the channels; in_2 is silent, so the speech arrives at half level.
            #expect(abs(20 * log10(peak16 / (speechPeak / 2))) < 1, "the speech reached the recognizer: peak \(peak16) vs \(speechPeak / 2)")
            let meterPeak = try meter.maximumPeakPower(channel: 0)
            #expect(abs(Double(meterPeak) - 20 * log10(speechPeak)) < 0.001,
                    "input meter peak \(meterPeak) dBFS, speech \(20 * log10(speechPeak))")
        }

        /// A recording stopped by SIGINT, SIGHUP (the terminal closed) or SIGQUIT (Ctrl-\\) is
        /// finalized with status 0; one cut short by SIGKILL is still a readable file (its header
        /// is rewritten on every write) — all hold the speech exactly.
        @Test(arguments: [SIGINT, SIGHUP, SIGQUIT, SIGKILL])
        func interruptedRecordingIsReadable(signal: Int32) throws {
            let speech = Speech.load().samples
            let path = "/tmp/ag-rec5-sig\(signal)-\(getpid()).wav"
            defer { unlink(path) }
            let name = "ag-recsig-\(signal)"
            let probe = ProbeClient(server: server, name: "probe-sig\(signal)", play: speech, captureFrames: speech.count + 24_000)
            let tool = try ToolProcess("graphrecord", ["--name", name, "--input", "\(probe.name):out", path], server: server)
            #expect(tool.waitFor("recording"), "startup: \(tool.stdout) \(tool.stderr)")
            _ = probe.run()   // the speech, then 0.5 s of silence
            usleep(300_000)   // a block or two for the writer thread
            kill(tool.process.processIdentifier, signal)
            _ = tool.waitForExit()
            let reason = tool.process.terminationReason
            if signal != SIGKILL {
                #expect(reason == .exit && tool.process.terminationStatus == 0, "\(tool.stdout) \(tool.stderr)")
                #expect(tool.stdout.contains("recorded ") && tool.stdout.contains("(0 dropped)"), "\(tool.stdout)")
            } else {
                #expect(reason == .uncaughtSignal)
            }
            let file = try #require(readAudioFile(path), "libsndfile opens the file")
            #expect(file.info.frames > 0)
            #expect(exactOccurrence(of: speech, in: file.channels[0]) != nil, "the speech is in the file bit for bit")
            let soxi = Process()
            soxi.executableURL = URL(fileURLWithPath: "/usr/bin/soxi")
            soxi.arguments = ["-s", path]
            let pipe = Pipe()
            soxi.standardOutput = pipe
            soxi.standardError = FileHandle.nullDevice
            try soxi.run()
            let samples = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            soxi.waitUntilExit()
            #expect(soxi.terminationStatus == 0 && Int64(samples.trimmingCharacters(in: .whitespacesAndNewlines)) == Int64(file.info.frames),
                    "soxi reads \(samples) samples")
        }

        /// `graphthru --record`: the file holds what graphthru played, bit for bit, and the exit
        /// line says how much; a path it cannot create is a bad option (exit 2), nothing runs.
        @Test func graphthruRecordsWhatItPlays() throws {
            let speech = Speech.load().samples
            let path = "/tmp/ag-gt-rec5-\(getpid()).flac"
            defer { unlink(path) }
            let name = "gt-rec5-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--record", path, "--record-format", "int16"], server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stdout) \(tool.stderr)")
            let probe = ProbeClient(server: server, name: "probe-gtrec5", play: speech, captureFrames: speech.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            _ = probe.run()
            usleep(200_000)
            tool.send("quit")
            #expect(tool.waitForExit() == 0, "\(tool.stderr)")
            let file = try #require(readAudioFile(path))
            #expect(file.info.format == Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16))
            #expect(exactOccurrence(of: speech, in: file.channels[0]) != nil, "16-bit speech recorded bit for bit")
            #expect(tool.stdout.contains("graphthru: recorded \(file.info.frames) frames to \(path) (0 dropped)"), "\(tool.stdout)")

            let bad = try ToolProcess(["--name", "\(name)-bad", "--no-autoconnect", "--record", "/nonexistent-dir/x.wav"], server: server)
            #expect(bad.waitForExit() == 2)
            #expect(bad.stderr.contains("cannot create /nonexistent-dir/x.wav"), "\(bad.stderr)")
        }

        /// Real speech from a file through the player unit and JACK: out_1 carries it bit for
        /// bit (same rate; mono copied to both channels), then silence, with no underrun. A file
        /// plays once, so a pass the server reported an xrun in (audio lost by JACK's design) is
        /// set up and played again from the start, 5 times at most.
        @Test func playerStreamsSpeechThroughJACKExactly() throws {
            let speech = Speech.load().samples
            for attempt in 1...5 {
                let graph = AudioGraph()
                let io = IOUnit(), player = AudioFilePlayerUnit()
                let ioNode = try graph.addNode(io), playerNode = try graph.addNode(player)
                try graph.connectNodeInput(playerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
                var options = JACKDriver.Options()
                options.clientName = "ag-play5"
                options.serverName = server
                let driver = try JACKDriver(graph: graph, options: options)
                defer { driver.close() }
                try driver.start()
                try player.open(Speech.path)
                let probe = ProbeClient(server: server, name: "probe-play5", play: [], captureFrames: speech.count + 48_000)
                probe.connect("\(driver.clientName):out_2", "\(probe.name):in")
                // Start playing once the probe is recording (run() blocks this thread).
                let recording = probe.state
                let starter = Thread {
                    while !recording.armed.load(ordering: .acquiring) { usleep(1_000) }
                    try? player.play()
                }
                starter.start()
                let captured = probe.run(passes: 1)
                if probe.lastPassHadXruns && attempt < 5 { continue }
                #expect(!probe.lastPassHadXruns, "every attempt had an xrun")
                #expect(exactDelay(of: speech, in: captured, maxDelay: 48_000) != nil,
                        "the file's speech, bit for bit (attempt \(attempt); underruns \(player.underrunCount), played \(player.framesPlayed))")
                #expect(player.underrunCount == 0 && player.isAtEnd && player.framesPlayed == UInt64(speech.count))
                break
            }
        }

        /// The AVAudioPlayer analogue on the JACK driver: real speech at volume 0.5, played
        /// twice (numberOfLoops = 1) with no gap at the wrap, bit for bit on the playback port,
        /// then onFinish, and the player back at the start.
        @Test func audioPlayerPlaysSpeechTwiceAtHalfVolumeThroughJACKExactly() throws {
            let speech = Speech.load().samples
            let twice = (speech + speech).map { $0 * 0.5 }
            for attempt in 1...5 {
                let graph = AudioGraph()
                _ = try graph.addNode(IOUnit())
                var options = JACKDriver.Options()
                options.clientName = "ag-avplayer"
                options.serverName = server
                let driver = try JACKDriver(graph: graph, options: options)
                defer { driver.close() }
                try driver.start()
                let player = try AudioPlayer(contentsOf: Speech.path, graph: graph)
                player.volume = 0.5
                player.numberOfLoops = 1
                let finished = Atomic<Int>(0)
                player.onFinish = { ok in finished.add(ok ? 1 : 100, ordering: .relaxed) }
                #expect(player.prepareToPlay(), "\(String(describing: player.lastError))")
                let probe = ProbeClient(server: server, name: "probe-avplayer", play: [], captureFrames: twice.count + 48_000)
                probe.connect("\(driver.clientName):out_2", "\(probe.name):in")
                let recording = probe.state
                let starter = Thread {
                    while !recording.armed.load(ordering: .acquiring) { usleep(1_000) }
                    _ = player.play()
                }
                starter.start()
                let captured = probe.run(passes: 1)
                if probe.lastPassHadXruns && attempt < 5 { continue }
                #expect(!probe.lastPassHadXruns, "every attempt had an xrun")
                #expect(exactDelay(of: twice, in: captured, maxDelay: 48_000) != nil,
                        "speech twice at half volume, bit for bit (attempt \(attempt); underruns \(player.underrunFrames) frames)")
                let deadline = Date().addingTimeInterval(5)
                while finished.load(ordering: .relaxed) == 0 && Date() < deadline { usleep(10_000) }
                #expect(finished.load(ordering: .relaxed) == 1 && !player.isPlaying, "onFinish(true) once, stopped")
                break
            }
        }

        /// A writer stalled 4 s (the test hook) behind a 1 s ring, live on JACK: the process
        /// thread goes on untouched — in optimized builds it neither allocates nor locks during
        /// the stall (debug builds do not claim that) — and causes no xrun the server did not
        /// report to another client too; about 3 s of frames are dropped and located, and the
        /// recording continues after the stall.
        @Test func aStalledWriterNeverBlocksTheProcessThread() throws {
            try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds")
            // Opened first and kept open: it hears every xrun the server reports.
            let watcher = ProbeClient(server: server, name: "probe-stall-xruns", play: [], captureFrames: 0)
            let graph = AudioGraph()
            let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: 1)
            let ioNode = try graph.addNode(io), mixerNode = try graph.addNode(mixer)
            try graph.setNodeInputCallback(mixerNode, inputElement: 0, armedTone)
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
            var options = JACKDriver.Options()
            options.clientName = "ag-stall"
            options.serverName = server
            let driver = try JACKDriver(graph: graph, options: options)
            defer { driver.close() }
            try mixer.setStreamFormat(try .float32(sampleRate: Double(driver.sampleRate), channels: 2), scope: .output, element: 0)
            try driver.start()
            let rate = Double(driver.sampleRate)

            let path = "/tmp/ag-stall-\(getpid()).wav"
            defer { unlink(path) }
            let recorder = try Recorder(graph: graph, node: mixerNode, path: path,
                                        settings: RecordingSettings(fileType: .wav, sampleFormat: .float32, bufferDuration: 1))
            usleep(500_000)  // warm-up: the writer has written a few blocks
            #expect(recorder.framesWritten > 0 && alloccounter_armed_threads() >= 1)
            let xrunsBefore = driver.xrunCount, serverXrunsBefore = watcher.xrunCount
            let cyclesBefore = driver.processCycleCount
            alloccounter_reset()
            recorder.stallWriterForTesting(seconds: 4)
            usleep(4_200_000)
            let allocations = alloccounter_allocations(), frees = alloccounter_frees(), locks = alloccounter_locks()
            let cycles = driver.processCycleCount - cyclesBefore
            let writtenAfterStall = recorder.framesWritten
            usleep(1_000_000)  // the writer catches up and records on
            let xruns = driver.xrunCount - xrunsBefore, serverXruns = UInt64(watcher.xrunCount - serverXrunsBefore)
            try recorder.stop()

            #expect(Double(cycles) > 3.5 * rate / Double(driver.bufferSize), "the process thread ran through the stall: \(cycles) cycles")
            if isOptimizedBuild {
                #expect(allocations == 0 && frees == 0, "process thread during the stall: \(allocations) allocations, \(frees) frees")
                #expect(locks == 0, "process thread during the stall: \(locks) pthread_mutex_lock calls")
            }
            #expect(xruns <= serverXruns, "xruns: \(xruns) counted by the driver, \(serverXruns) reported to another client")
            let gaps = recorder.gaps
            let dropped = recorder.framesDropped
            // The ring holds 1 s of the 4 s stall: about 3 s are lost (less the blocks in flight).
            #expect(Double(dropped) > 2 * rate && Double(dropped) < 3.5 * rate, "dropped \(dropped) frames in \(gaps)")
            #expect(!gaps.isEmpty && gaps.reduce(0) { $0 + $1.frameCount } == dropped, "every dropped frame located: \(gaps)")
            if let first = gaps.first {
                #expect(first.fileFrame > 0 && first.sampleTime >= Double(first.fileFrame), "\(first)")
            }
            let file = try #require(readAudioFile(path))
            #expect(UInt64(file.info.frames) == recorder.framesWritten)
            // Recorded after the stall: more than half a second beyond the last gap, and it is the tone.
            let resumedAt = Int(gaps.last?.fileFrame ?? 0)
            #expect(Double(file.channels[0].count - resumedAt) > 0.5 * rate && recorder.framesWritten > writtenAfterStall,
                    "\(file.channels[0].count - resumedAt) frames after the gap")
            let after = file.channels[0][resumedAt...]
            #expect(after.count > 0 && after.map { abs($0) }.max()! > 0.2, "the tone continues after the stall")
        }

        /// Optimized builds only (scripts/test runs it with -c release): the JACK process thread
        /// neither allocates nor locks with taps (push and pull, with conversion), meters and a
        /// looping file player running, and while taps and meters are installed and removed.
        @Test(.enabled(if: isOptimizedBuild, "run with -c release (scripts/test does)"))
        func tapsAndMetersNeitherAllocateNorLockOnTheProcessThread() throws {
            try #require(alloccounter_available() == 1, "the allocation counter is off in sanitizer builds")
            let graph = AudioGraph()
            let io = IOUnit(), gate = MuteGateUnit(), mixer = MultichannelMixerUnit(inputs: 3), player = AudioFilePlayerUnit()
            let ioNode = try graph.addNode(io), gateNode = try graph.addNode(gate), mixerNode = try graph.addNode(mixer)
            let playerNode = try graph.addNode(player)
            try graph.connectNodeInput(playerNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 2)
            try io.setInputEnabled(true)
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, gateNode, destinationInputElement: 0)
            try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
            try graph.setNodeInputCallback(mixerNode, inputElement: 1, armedTone)
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
            var options = JACKDriver.Options()
            options.clientName = "ag-tap-rt5"
            options.serverName = server
            let driver = try JACKDriver(graph: graph, options: options)
            defer { driver.close() }
            try mixer.setStreamFormat(try .float32(sampleRate: Double(driver.sampleRate), channels: 2), scope: .output, element: 0)
            try driver.start()
            try driver.connectPhysicalPorts()
            try player.open(Speech.path)  // 48 kHz mono speech, converted to stereo on the disk thread
            player.isLooping = true
            try player.play()

            let delivered = Atomic<Int>(0)
            let push = try graph.installTap(on: mixerNode, blockFrames: 480, format: try .int16(sampleRate: 16_000, channels: 1)) { block in
                delivered.add(block.frameCount, ordering: .relaxed)
            }
            let pull = try graph.installTap(on: ioNode, element: IOUnit.outputElement)
            let meters = [try graph.installLevelMeter(on: ioNode, element: 1), try graph.installLevelMeter(on: mixerNode)]
            usleep(300_000)  // warm-up
            #expect(alloccounter_armed_threads() >= 1, "the callback ran on the process thread")
            alloccounter_reset()
            let cyclesBefore = driver.processCycleCount
            let deadline = Date().addingTimeInterval(2)
            var rounds = 0
            while Date() < deadline {
                // Live: a meter and a tap come and go while JACK pulls the graph.
                let extraMeter = try graph.installLevelMeter(on: gateNode)
                let extraTap = try graph.installTap(on: gateNode, blockFrames: 256) { _ in }
                usleep(20_000)
                _ = try pull.read(maxFrames: 4096)
                try graph.removeTap(extraTap)
                try graph.removeLevelMeter(extraMeter)
                rounds += 1
            }
            let allocations = alloccounter_allocations(), frees = alloccounter_frees(), locks = alloccounter_locks()
            let cycles = driver.processCycleCount - cyclesBefore
            try graph.removeTap(push)
            try graph.removeTap(pull)
            #expect(cycles > 100 && rounds > 20, "\(cycles) cycles, \(rounds) install/remove rounds")
            #expect(delivered.load(ordering: .relaxed) > 16_000, "the push tap delivered while measured")
            let toneLevel = try meters[1].averagePower(channel: 0)
            #expect(toneLevel > -20, "the meter saw the tone: \(toneLevel) dBFS")
            #expect(player.framesPlayed > 48_000, "the player played (looping speech): \(player.framesPlayed) frames")
            #expect(allocations == 0 && frees == 0, "process thread: \(allocations) allocations, \(frees) frees")
            #expect(locks == 0, "process thread: \(locks) pthread_mutex_lock calls")
        }
    }
}

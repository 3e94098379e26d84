// Tests, JACK: the JACK driver against a real jackd.
import AudioGraph
import AudioGraphTestSupport
import AudioGraphJACK
import CJack
import Foundation
import Synchronization
import Testing

extension JACKIntegration {
    /// The library's JACK driver in this process, against a real jackd (dummy driver).
    @Suite("JACK driver against a real jackd")
    struct JACKDriverTests {
        let server = TestServer.shared

        func makeChain(name: String, channels: Int = 2, server: String? = nil) throws -> (AudioGraph, MuteGateUnit, JACKDriver) {
            let graph = AudioGraph()
            let io = IOUnit(), gate = MuteGateUnit(), mixer = MultichannelMixerUnit(inputs: 1)
            let ioNode = try graph.addNode(io), gateNode = try graph.addNode(gate), mixerNode = try graph.addNode(mixer)
            try io.setInputEnabled(true)
            try mixer.setStreamFormat(try .float32(sampleRate: 48_000, channels: UInt32(channels)), scope: .output, element: 0)
            try graph.connectNodeInput(ioNode, sourceOutputElement: 1, gateNode, destinationInputElement: 0)
            try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
            var options = JACKDriver.Options()
            options.clientName = name
            options.serverName = server ?? self.server
            options.inputChannels = channels
            options.outputChannels = channels
            let driver = try JACKDriver(graph: graph, options: options)
            return (graph, gate, driver)
        }

        @Test func speechPassesBitExactAndMutesToSilence() throws {
            let (_, gate, driver) = try makeChain(name: "ag-driver-test")
            defer { driver.close() }
            try driver.start()
            #expect(driver.sampleRate == 48_000)
            #expect(driver.inputPortNames == ["ag-driver-test:in_1", "ag-driver-test:in_2"])
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-lib", play: speech, captureFrames: speech.count + 8192)
            probe.connect("\(probe.name):out", driver.inputPortNames[0])
            probe.connect(driver.outputPortNames[0], "\(probe.name):in")

            let captured = probe.run()
            let delay = exactDelay(of: speech, in: captured)
            #expect(delay != nil, "speech came back bit-exact")
            if let delay { #expect(delay % driver.bufferSize == 0, "delay \(delay) is whole JACK cycles") }

            gate.isMuted = true
            usleep(100_000)  // > the 10 ms ramp
            let muted = probe.run()
            #expect(muted.allSatisfy { $0 == 0 }, "muted output is exact silence; peak \(muted.map(abs).max() ?? 0)")
            #expect(driver.processCycleCount > 0)
        }

        @Test func periodChangesAreFollowedWithoutLosingBitExactness() throws {
            // A server of its own: changing the period must not disturb the other tests.
            let own = try PrivateServer(name: "audiograph-bufsize-\(getpid())")
            defer { own.stop() }
            let (_, _, driver) = try makeChain(name: "ag-bufsize", server: own.name)
            defer { driver.close() }
            try driver.start()
            let speech = Speech.load().samples
            let probe = ProbeClient(server: own.name, name: "probe-bufsize", play: speech, captureFrames: speech.count + 16_384)
            probe.connect("\(probe.name):out", driver.inputPortNames[0])
            probe.connect(driver.outputPortNames[0], "\(probe.name):in")
            // 4096 is longer than MaximumFramesPerSlice (1024): the graph renders it as four slices.
            // A pass with an xrun lost audio by JACK's design (a non-real-time dummy server at
            // period 64 on a busy 2-core machine has them); such a period is not judged, but
            // most periods must be, and every judged one must be bit-exact.
            // Bad requests are typed errors and change nothing.
            for bad in [0, 100, 8, 16_384, -256] {
                #expect(throws: JACKDriverError.invalidBufferSize(bad)) { try driver.setBufferSize(bad) }
            }
            #expect(driver.bufferSize == 256)
            var judged = 0
            for (index, period) in [1024, 4096, 64, 512, 256].enumerated() {
                if index % 2 == 0 {
                    try driver.setBufferSize(period)  // the driver's own request (setPreferredIOBufferDuration)
                    #expect(driver.bufferSize == period, "set: \(driver.bufferSize)")
                    let reported = try run("/usr/bin/jack_bufsize", [], server: own.name)
                    #expect(reported.contains("\(period)"), "jack_bufsize says: \(reported)")
                } else {
                    // Another client changes it (as jack_bufsize would): the callback follows.
                    #expect(jack_set_buffer_size(probe.client, jack_nframes_t(period)) == 0)
                    let deadline = Date().addingTimeInterval(5)
                    while driver.bufferSize != period && Date() < deadline { usleep(10_000) }
                    #expect(driver.bufferSize == period, "the buffer-size callback reported \(driver.bufferSize)")
                }
                let captured = probe.run()
                if probe.lastPassHadXruns { continue }
                judged += 1
                #expect(exactDelay(of: speech, in: captured, maxDelay: 16_384) != nil, "bit-exact at period \(period); xruns seen by the probe: \(probe.state.xruns.load(ordering: .relaxed)), by the driver: \(driver.xrunCount)")
            }
            #expect(judged >= 4, "only \(judged) of 5 periods ran a pass without xruns")
        }

        /// An xrun is located: a render callback that stalls the process thread 60 ms (over ten
        /// periods) once makes the server report an xrun, and the driver notes the graph's
        /// sample time of it, at the stall or a few periods after (when the server noticed).
        @Test func anXrunIsReportedWithTheGraphsSampleTime() throws {
            let graph = AudioGraph()
            let ioNode = try graph.addNode(IOUnit())
            let mixer = MultichannelMixerUnit(inputs: 1)
            let mixerNode = try graph.addNode(mixer)
            let stallAt = Atomic<UInt64>(.max), stalledAt = Atomic<UInt64>(0)
            try graph.setNodeInputCallback(mixerNode, inputElement: 0) { time, _, buffers in
                let now = UInt64(time.sampleTime)
                if now >= stallAt.load(ordering: .relaxed) {
                    stallAt.store(.max, ordering: .relaxed)
                    stalledAt.store(now, ordering: .relaxed)
                    usleep(60_000)  // the test's point: a process thread that misses its deadline
                }
                for c in 0..<buffers.channelCount { buffers[c].update(repeating: 0) }
                return 0
            }
            try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
            var options = JACKDriver.Options()
            options.clientName = "ag-xrun-times"
            options.serverName = server
            let driver = try JACKDriver(graph: graph, options: options)
            defer { driver.close() }
            try driver.start()
            #expect(driver.xrunSampleTimes.count == Int(min(driver.xrunCount, 64)))
            let before = driver.xrunCount
            stallAt.store(UInt64(graph.sampleTime) + 4800, ordering: .relaxed)
            let deadline = Date().addingTimeInterval(5)
            while (stalledAt.load(ordering: .relaxed) == 0 || driver.xrunCount == before) && Date() < deadline { usleep(5_000) }
            let stalled = stalledAt.load(ordering: .relaxed)
            try #require(stalled > 0 && driver.xrunCount > before, "the stall ran (\(stalled)) and the server reported an xrun (\(driver.xrunCount))")
            let times = driver.xrunSampleTimes
            #expect(times.count == Int(min(driver.xrunCount, 64)))
            let period = UInt64(driver.bufferSize)
            #expect(times.contains { $0 >= stalled && $0 <= stalled + 20 * period },
                    "an xrun at the stall's sample time \(stalled) (within 20 periods): \(times)")
            print("xrun located: stall at sample time \(stalled), xruns reported at \(times)")
        }

        @Test func noServerIsAClearTypedError() {
            let graph = AudioGraph()
            _ = try? graph.addNode(IOUnit())
            var options = JACKDriver.Options()
            options.serverName = "no-such-server-\(getpid())"
            #expect(throws: JACKDriverError.serverNotRunning(server: options.serverName)) {
                try JACKDriver(graph: graph, options: options)
            }
            let message = JACKDriverError.serverNotRunning(server: "x").description
            #expect(message.contains("jackd") && !message.contains("\n"))
        }

        /// libjack aborts the process for server names of 265 bytes or more (measured, 1.9.21):
        /// the driver refuses empty names and names over 255 bytes before libjack sees them.
        @Test func emptyAndOverlongServerNamesAreRefusedBeforeLibjack() {
            let graph = AudioGraph()
            _ = try? graph.addNode(IOUnit())
            for name in ["", String(repeating: "s", count: 256), String(repeating: "s", count: 4096)] {
                var options = JACKDriver.Options()
                options.serverName = name
                #expect(throws: JACKDriverError.self) { try JACKDriver(graph: graph, options: options) }
                do { _ = try JACKDriver(graph: graph, options: options) } catch {
                    guard case .invalidServerName(let refused, _) = error else { Issue.record("\(error)"); continue }
                    #expect(refused == name && !error.description.contains("\n"))
                }
                #expect(!JACKServer.isRunning(name))
            }
            var options = JACKDriver.Options()
            options.serverName = String(repeating: "s", count: 255)  // libjack takes it: no such server
            #expect(throws: JACKDriverError.serverNotRunning(server: options.serverName)) { try JACKDriver(graph: graph, options: options) }
        }

        @Test func badNamesAndCountsAreRefusedBeforeOpening() {
            let graph = AudioGraph()
            _ = try? graph.addNode(IOUnit())
            var options = JACKDriver.Options()
            options.serverName = server
            options.clientName = String(repeating: "n", count: 200)
            #expect(throws: JACKDriverError.self) { try JACKDriver(graph: graph, options: options) }
            options.clientName = ""
            #expect(throws: JACKDriverError.self) { try JACKDriver(graph: graph, options: options) }
            options.clientName = "ok"
            options.inputChannels = 0
            #expect(throws: JACKDriverError.invalidChannelCount(0)) { try JACKDriver(graph: graph, options: options) }
            options.inputChannels = 2
            #expect(throws: JACKDriverError.graph(AudioUnitError.outputNodeErr)) {
                try JACKDriver(graph: AudioGraph(), options: options)
            }
        }

        @Test func takenNameGetsTheServersSuffixOrAnExactNameError() throws {
            let (_, _, first) = try makeChain(name: "ag-dup")
            defer { first.close() }
            let (_, _, second) = try makeChain(name: "ag-dup")
            defer { second.close() }
            #expect(second.clientName != "ag-dup" && second.clientName.hasPrefix("ag-dup"))
            #expect(second.inputPortNames[0] == "\(second.clientName):in_1")

            let graph = AudioGraph()
            try graph.addNode(IOUnit())
            var options = JACKDriver.Options()
            options.clientName = "ag-dup"
            options.serverName = server
            options.useExactName = true
            #expect(throws: JACKDriverError.self) { try JACKDriver(graph: graph, options: options) }
        }

        @Test func connectingAMissingPortIsATypedError() throws {
            let (_, _, driver) = try makeChain(name: "ag-connect-test")
            defer { driver.close() }
            try driver.start()
            #expect(throws: JACKDriverError.portNotFound("nobody:out")) { try driver.connect("nobody:out", to: driver.inputPortNames[0]) }
            let made = try driver.connectPhysicalPorts()
            #expect(made.count == 4, "2 capture + 2 playback on the dummy driver: \(made)")
        }
    }
}

extension JACKIntegration.JACKDriverTests {
    /// The lag (0..<maxLag) at which `y` best matches `x`, by cross-correlation.
    func bestLag(_ x: [Float], _ y: [Float], maxLag: Int, window: Range<Int>) -> Int {
        var best = 0, bestScore = -Double.infinity
        for lag in 0..<maxLag {
            var score = 0.0
            for i in window where i + lag < y.count { score += Double(x[i]) * Double(y[i + lag]) }
            if score > bestScore { bestScore = score; best = lag }
        }
        return best
    }

    @Test func speechThrough16kHzInt16MonoRendersCorrectlyThroughJACK() throws {
        // The microphone as a speech recognizer takes it (IO element 1's application side at
        // 16 kHz, 16-bit, mono), then a 48 kHz float stereo mixer back to JACK.
        let graph = AudioGraph()
        let io = IOUnit(), mixer = MultichannelMixerUnit(inputs: 1)
        let ioNode = try graph.addNode(io), mixerNode = try graph.addNode(mixer)
        try io.setInputEnabled(true)
        let recognizer = try StreamFormat.int16(sampleRate: 16_000, channels: 1)
        try io.setStreamFormat(recognizer, scope: .output, element: IOUnit.inputElement)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        var options = JACKDriver.Options()
        options.clientName = "ag-mixed-formats"
        options.serverName = server
        options.inputChannels = 1
        options.outputChannels = 2
        let driver = try JACKDriver(graph: graph, options: options)
        defer { driver.close() }
        try mixer.setStreamFormat(.float32(sampleRate: Double(driver.sampleRate), channels: 2), scope: .output, element: 0)
        try driver.start()
        let latency = graph.renderContext.latencyFrames
        #expect(latency > 0 && latency < 1024, "conversion latency \(latency) frames")

        let speech = Speech.load().samples
        let probe = ProbeClient(server: server, name: "probe-mixed", play: speech, captureFrames: speech.count + 8192)
        probe.connect("\(probe.name):out", driver.inputPortNames[0])
        probe.connect(driver.outputPortNames[1], "\(probe.name):in")
        let captured = probe.run()

        // The reference: the same speech through AudioConverter, 48 k float → 16 k Int16 → 48 k.
        let down = try AudioConverter(from: .float32(sampleRate: 48_000, channels: 1), to: recognizer)
        let up = try AudioConverter(from: recognizer, to: .float32(sampleRate: 48_000, channels: 2))
        let narrowband = try runConverter(up, runConverterInt16(down, speech))[1]
        let lag = bestLag(narrowband, captured, maxLag: 8192, window: 0..<min(narrowband.count, 24_000))
        var signal = 0.0, error = 0.0
        for i in 0..<(narrowband.count - 2000) where i + lag < captured.count {
            signal += Double(narrowband[i]) * Double(narrowband[i])
            let d = Double(captured[i + lag] - narrowband[i])
            error += d * d
        }
        let snr = 10 * log10(signal / max(error, 1e-30))
        // What differs is the 48 k → 16 k sampling phase and Int16 rounding: > 40 dB apart.
        #expect(snr > 40, "speech through 16 kHz Int16 mono: \(snr) dB signal to difference")
        #expect((lag - latency) % driver.bufferSize == 0 || abs((lag - latency) % driver.bufferSize) <= 1,
                "delay \(lag) = whole JACK cycles + the reported \(latency) frames")

        // jack_lsp -l: an output's capture latency is its input's plus the conversion latency
        // The probe (no latency callback) would feed its input's latency back to ours, a loop
        // that grows on every recomputation: take its input off first.
        _ = try run("/usr/bin/jack_disconnect", [driver.outputPortNames[1], "\(probe.name):in"], server: server)
        usleep(100_000)
        func captureLatency(_ port: String) throws -> Int? {
            let text = try run("/usr/bin/jack_lsp", ["-l", port], server: server)
            guard let line = text.split(separator: "\n").first(where: { $0.contains("capture latency") }),
                  let value = line.split(separator: " ").compactMap({ Int($0) }).first else { return nil }
            return value
        }
        let inLatency = try #require(try captureLatency(driver.inputPortNames[0]))
        let outLatency = try #require(try captureLatency(driver.outputPortNames[0]))
        #expect(outLatency == inLatency + latency, "out_1 \(outLatency), in_1 \(inLatency), graph \(latency)")
    }
}

/// `runConverter` for a Float32 mono input whose converter emits Int16: the floats it produced.
func runConverterInt16(_ converter: AudioConverter, _ input: [Float]) throws -> [[Float]] {
    try runConverter(converter, [input], chunk: 256)
}

extension JACKIntegration.JACKDriverTests {
    @Test func aSampleRateChangeReconfiguresTheGraphAndMonitoringResumes() throws {
        // jack2 changes rate only by restarting its server, so the change is recorded as the
        // sample-rate callback would record it; the reconfiguration itself is the real one.
        let (graph, _, driver) = try makeChain(name: "ag-rate-change")
        defer { driver.close() }
        try driver.start()
        let io = try #require(graph.nodes.lazy.compactMap { try? graph.nodeInfo($0) as? IOUnit }.first)
        #expect(!driver.sampleRateChanged)
        try driver.followSampleRate()  // nothing to do

        driver.recordSampleRateForTesting(44_100)
        #expect(driver.sampleRateChanged)
        let cycles = driver.processCycleCount
        try driver.followSampleRate()
        #expect(!driver.sampleRateChanged)
        #expect(io.deviceOutputFormat.sampleRate == 44_100 && io.deviceInputFormat.sampleRate == 44_100)
        #expect(graph.isInitialized && graph.isRunning)
        // The mixer's output was set to 48 kHz by makeChain: it is now converted, with latency.
        #expect(graph.renderLatency > 0, "the 48 kHz mixer is resampled to the 44.1 kHz device")
        usleep(100_000)
        #expect(driver.processCycleCount > cycles, "JACK kept pulling throughout")

        // Back to the server's real rate: monitoring is bit-exact again.
        driver.recordSampleRateForTesting(48_000)
        try driver.followSampleRate()
        #expect(graph.renderLatency == 0)
        let speech = Speech.load().samples
        let probe = ProbeClient(server: server, name: "probe-rate", play: speech, captureFrames: speech.count + 8192)
        probe.connect("\(probe.name):out", driver.inputPortNames[0])
        probe.connect(driver.outputPortNames[0], "\(probe.name):in")
        probe.expectExact(speech, "speech came back bit-exact")
    }

    /// With setFormatsFollowServerRate, formats set at the server's rate move with it, both
    /// ways: nothing is converted at 44.1 kHz, and a cutoff above the new rate/2 is clamped.
    @Test func setFormatsFollowTheServerRateWhenAskedBothWays() throws {
        let graph = AudioGraph()
        let io = IOUnit(), filter = LowPassFilterUnit(), mixer = MultichannelMixerUnit(inputs: 1)
        let ioNode = try graph.addNode(io), filterNode = try graph.addNode(filter), mixerNode = try graph.addNode(mixer)
        try io.setInputEnabled(true)
        try mixer.setStreamFormat(try .float32(sampleRate: 48_000, channels: 2), scope: .output, element: 0)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, filterNode, destinationInputElement: 0)
        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 23_000, scope: .global)
        var options = JACKDriver.Options()
        options.clientName = "ag-rate-follow"
        options.serverName = server
        options.setFormatsFollowServerRate = true
        let driver = try JACKDriver(graph: graph, options: options)
        defer { driver.close() }
        try driver.start()
        let cutoff = { try filter.parameter(LowPassFilterUnit.Parameter.cutoffFrequency, scope: .global) }
        #expect(try cutoff() == 23_000)

        driver.recordSampleRateForTesting(44_100)
        try driver.followSampleRate()
        #expect(try mixer.streamFormat(scope: .output, element: 0).sampleRate == 44_100)
        #expect(graph.renderLatency == 0, "nothing converted at 44.1 kHz")
        #expect(try cutoff() == 22_050, "the cutoff is clamped to the new rate/2")
        #expect(try filter.parameterInfo(LowPassFilterUnit.Parameter.cutoffFrequency, scope: .global).maxValue == 22_050)

        driver.recordSampleRateForTesting(48_000)
        try driver.followSampleRate()
        #expect(try mixer.streamFormat(scope: .output, element: 0).sampleRate == 48_000)
        #expect(graph.renderLatency == 0)
        #expect(try cutoff() == 22_050, "a clamped value stays where it was clamped")
        let speech = Speech.load().samples
        let probe = ProbeClient(server: server, name: "probe-rate-follow", play: speech, captureFrames: speech.count + 8192)
        probe.connect("\(probe.name):out", driver.inputPortNames[0])
        probe.connect(driver.outputPortNames[0], "\(probe.name):in")
        let captured = probe.run()
        #expect(captured.contains { $0 != 0 }, "audio flows after the round trip")
    }
}

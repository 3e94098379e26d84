// Tests, Units: the voice-processing IO unit (`auou/vpio`) through the offline renderer — echo cancelled on real speech, the near end kept, AGC, Apple's properties, toggles without gaps, NaN, latency.
import AudioGraph
import AudioGraphTestSupport
import Foundation
import Synchronization
import Testing

/// What a voice-processing graph got and made offline: the far end played from an array by a
/// render callback on element 0 (what the device output plays), element 1 (the processed
/// microphone) captured by the input callback.
/// SAFETY (`@unchecked Sendable`): the offline renderer calls both callbacks on the test's thread.
final class VoiceRig: @unchecked Sendable {
    let graph = AudioGraph()
    let unit = VoiceProcessingIOUnit()
    let renderer: OfflineRenderer
    var farEnd: [Float]
    var captured: [Float] = []

    /// - Parameters: `farEnd` at `sampleRate` (48 kHz by default), mono; `configure` runs
    ///   before initialization.
    init(farEnd: [Float], sampleRate: Double = 48_000, configure: (VoiceProcessingIOUnit) throws -> Void = { _ in }) throws {
        self.farEnd = farEnd
        let ioNode = try graph.addNode(unit)
        try unit.setInputEnabled(true)
        renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 1, sampleRate: sampleRate)
        try configure(unit)
        try unit.setProperty(.setInputCallback, scope: .global, element: 0, .inputCallback { [unowned self] _, list in
            self.captured.append(contentsOf: list[0])
        })
        try graph.setNodeInputCallback(ioNode, inputElement: IOUnit.outputElement) { [unowned self] time, _, buffers in
            let start = Int(time.sampleTime)
            let out = buffers[0]
            for i in 0..<out.count { out[i] = start + i < self.farEnd.count ? self.farEnd[start + i] : 0 }
            return 0
        }
        try graph.initialize()
        try graph.start()
    }

    /// Renders `microphone` (mono) in slices of `slice`; returns element 1 for those frames.
    func render(_ microphone: [Float], slice: Int = 256, between: ((Int) -> Void)? = nil) throws -> [Float] {
        let before = captured.count
        var at = 0
        while at < microphone.count {
            let n = min(slice * 8, microphone.count - at)
            between?(at)
            _ = try renderer.render(input: [Array(microphone[at..<(at + n)])], frameCount: n, sliceFrames: slice)
            at += n
        }
        return Array(captured[before...])
    }

    /// Element 1's latency in frames (the unit's figure).
    var latency: Int { unit.statistics.latencyFrames }
}

/// A `.uint32` property value, or nil for another case.
private func flag(_ value: AudioUnitPropertyValue) -> UInt32? {
    if case .uint32(let v) = value { return v }
    return nil
}

extension VoiceProcessingSuites {
    @Suite("Voice-processing IO unit (offline)")
    struct VoiceProcessingIOUnitTests {
        static let rate = SimulatedRoom.rate

        /// ERLE while only the far end talks (from 2 s to the far end's end), from the recordings:
        /// the echo's energy at the microphone over what is left of it in element 1, aligned by the
        /// unit's reported latency. Processing on: ≥ 20 dB. Bypassed (Apple's property 2100): element
        /// 1 is the microphone exactly, the same latency late, and the figure is 0 dB.
        @Test func echoIsCancelledAndBypassIsTheMicrophoneExactly() throws {
            let room = SimulatedRoom()
            let mic = room.microphone
            let window = (2 * Self.rate)..<SimulatedRoom.farEndEnd
            var erle: [Bool: Double] = [:]
            for bypass in [false, true] {
                let rig = try VoiceRig(farEnd: room.farEnd) { unit in
                    try unit.setProperty(.voiceProcessingEnableAGC, scope: .global, element: 0, .uint32(0))
                    try unit.setProperty(.bypassVoiceProcessing, scope: .global, element: 0, .uint32(bypass ? 1 : 0))
                    unit.extraEchoPathDelay = SimulatedRoom.echoDelay
                }
                let out = try rig.render(mic)
                let latency = rig.latency
                #expect(latency > 480 + 256 && latency < 480 + 256 + 4 * 480, "latency \(latency) frames")
                let residual = energy(out, (window.lowerBound + latency)..<(window.upperBound + latency))
                erle[bypass] = 10 * log10(energy(room.echo, window) / max(residual, 1e-30))
                if bypass {
                    #expect(Array(out[latency...]) == Array(mic[..<(out.count - latency)]), "bypassed: the microphone, bit for bit, \(latency) frames late")
                } else {
                    let stats = rig.unit.statistics
                    #expect(stats.frames == UInt64(mic.count / 480) && stats.lateFrames == 0 && stats.latencyIncreases == 0)
                    #expect(stats.echoPathDelayMilliseconds == 40)
                    let meter = try rig.unit.parameter(VoiceProcessingIOUnit.Parameter.echoReturnLossEnhancement, scope: .global)
                    #expect(meter > 10, "the canceller's own ERLE meter: \(meter) dB")
                    guard case .float64(let reported) = try rig.unit.getProperty(.latency, scope: .global, element: 0) else {
                        Issue.record("Latency is not a float64"); return
                    }
                    #expect(abs(reported - Double(latency) / Double(Self.rate)) < 1e-9)
                }
            }
            print("VoiceProcessingIOUnit: ERLE \(String(format: "%.1f", erle[false]!)) dB processed, \(String(format: "%.1f", erle[true]!)) dB bypassed")
            #expect(erle[false]! >= 20, "ERLE \(erle[false]!) dB (issue 14: ≥ 20 dB)")
            #expect(abs(erle[true]!) < 1, "bypassed ERLE \(erle[true]!) dB")
        }

        /// The near-end talker survives: while only the near end talks, element 1 correlates ≥ 0.9
        /// with the clean near-end recording at the reported latency.
        @Test func theNearEndTalkerSurvives() throws {
            let room = SimulatedRoom()
            let rig = try VoiceRig(farEnd: room.farEnd) { unit in
                unit.enablesAGC = false
                unit.extraEchoPathDelay = SimulatedRoom.echoDelay
            }
            let out = try rig.render(room.microphone)
            let window = SimulatedRoom.nearEndStart..<(SimulatedRoom.nearEndStart + Self.rate)
            let r = correlation(room.nearEnd, out, window, lag: rig.latency)
            print("VoiceProcessingIOUnit: near-end correlation \(String(format: "%.4f", r)) at latency \(rig.latency)")
            #expect(r >= 0.9, "near-end correlation \(r)")
        }

        /// AGC (on by default, as Apple's): a talker at −30 dBFS comes out within 6 dB of the
        /// target set by the AGCTargetLevel parameter (−18 dBFS) after 20 s; with the property off
        /// the level stays where it was.
        @Test func gainControlBringsAQuietTalkerToItsTarget() throws {
            let left = Speech.load("/usr/share/sounds/alsa/Front_Left.wav").samples
            let gain = Float(pow(10, (-30 - speechLevels(left, 0..<left.count).envelope) / 20))
            var mic = [Float](repeating: 0, count: 20 * Self.rate)
            var starts: [Int] = []
            var at = 0
            while at + left.count < mic.count {
                for i in 0..<left.count { mic[at + i] = gain * left[i] }
                starts.append(at)
                at += left.count + Self.rate / 2
            }
            var levels: [Bool: Double] = [:]
            for agc in [true, false] {
                let rig = try VoiceRig(farEnd: []) { unit in
                    unit.enablesAGC = agc
                    try unit.setParameter(VoiceProcessingIOUnit.Parameter.agcTargetLevel, -18, scope: .global)
                }
                let out = try rig.render(mic)
                levels[agc] = speechLevels(out, (starts.last! + rig.latency)..<(starts.last! + rig.latency + left.count)).envelope
            }
            print("VoiceProcessingIOUnit: AGC talker −30 dBFS → \(String(format: "%.1f", levels[true]!)) dBFS (target −18); AGC off \(String(format: "%.1f", levels[false]!)) dBFS")
            #expect(abs(levels[true]! - -18) <= 6)
            #expect(abs(levels[false]! - -30) <= 3)
        }

        /// Apple's properties: global scope, element 0 (or 1, as iOS code passes it), 0/1, readable
        /// back; the wrong scope, element or value is a typed error that changes nothing; the plain
        /// IO unit has none of them.
        /// The component `auou/vpio/appl` makes this unit.
        @Test func propertiesBehaveAsAppleDocumentsThem() throws {
            let unit = VoiceProcessingIOUnit()
            let defaults: [(AudioUnitPropertyID, UInt32)] = [(.bypassVoiceProcessing, 0), (.voiceProcessingEnableAGC, 1), (.muteOutput, 0)]
            for (id, value) in defaults {
                #expect(flag(try unit.getProperty(id, scope: .global, element: 0)) == value, "\(id) default")
                try unit.setProperty(id, scope: .global, element: 0, .uint32(1 - value))
                #expect(flag(try unit.getProperty(id, scope: .global, element: 0)) == 1 - value)
                #expect(throws: AudioUnitError.invalidScope) { try unit.setProperty(id, scope: .input, element: 0, .uint32(value)) }
                #expect(throws: AudioUnitError.invalidElement) { try unit.setProperty(id, scope: .global, element: 2, .uint32(value)) }
                #expect(flag(try unit.getProperty(id, scope: .global, element: 1)) == 1 - value, "element 1 reads the same")
                #expect(throws: AudioUnitError.invalidPropertyValue) { try unit.setProperty(id, scope: .global, element: 0, .uint32(2)) }
                #expect(throws: AudioUnitError.invalidPropertyValue) { try unit.setProperty(id, scope: .global, element: 0, .float64(1)) }
                #expect(flag(try unit.getProperty(id, scope: .global, element: 0)) == 1 - value, "\(id) unchanged by refused sets")
                #expect(throws: AudioUnitError.invalidProperty) { try IOUnit().getProperty(id, scope: .global, element: 0) }
            }
            #expect(unit.bypassesVoiceProcessing && !unit.enablesAGC && unit.mutesOutput)
            #expect(throws: AudioUnitError.invalidParameter) {
                try unit.setParameter(VoiceProcessingIOUnit.Parameter.echoReturnLossEnhancement, 3, scope: .global)
            }
            let description = AudioComponentDescription(componentType: FourCharCode(fourCharacters: "auou")!,
                                                        componentSubType: FourCharCode(fourCharacters: "vpio")!,
                                                        componentManufacturer: FourCharCode(fourCharacters: "appl")!)
            let made = try #require(AudioComponentRegistry.findNext(matching: description)).instantiate()
            #expect(made is VoiceProcessingIOUnit)
        }

        /// Bypass, AGC and mute toggled every 0.3 s while rendering speech: never a gap (no 10 ms of
        /// exact zeros while unmuted), no click (no sample step larger than the largest in the
        /// microphone itself, times 1.5), muted frames silent once the 10 ms ramp is done.
        @Test func togglingWhileRenderingHasNoGapAndNoClick() throws {
            let room = SimulatedRoom()
            let mic = room.microphone
            let rig = try VoiceRig(farEnd: room.farEnd) { $0.extraEchoPathDelay = SimulatedRoom.echoDelay }
            var toggles = 0
            var muted: [Range<Int>] = []
            var muteStart = 0
            let out = try rig.render(mic, slice: 256) { at in
                guard at > 0, at % (Self.rate * 3 / 10) < 2048 else { return }
                toggles += 1
                switch toggles % 4 {
                case 0: rig.unit.bypassesVoiceProcessing.toggle()
                case 1: rig.unit.enablesAGC.toggle()
                case 2:
                    rig.unit.mutesOutput = true
                    muteStart = at
                default:
                    rig.unit.mutesOutput = false
                    muted.append(muteStart..<(at + 2048))
                }
            }
            #expect(toggles > 20)
            var maxStepIn: Float = 0, maxStepOut: Float = 0
            for i in 1..<mic.count { maxStepIn = max(maxStepIn, abs(mic[i] - mic[i - 1])) }
            for i in 1..<out.count { maxStepOut = max(maxStepOut, abs(out[i] - out[i - 1])) }
            #expect(maxStepOut <= 1.5 * maxStepIn, "largest step out \(maxStepOut), in \(maxStepIn)")
            // Gaps: 480 exact zeros in a row outside the muted stretches (and the start-up latency).
            var run = 0, gaps = 0
            let latency = rig.latency
            for i in latency..<out.count {
                let t = i - latency
                // The toggles land between renders of 8 slices: a mute takes effect in the frames
                // being processed then, up to 8 slices plus a frame from where it was asked.
                let inMute = muted.contains { $0.lowerBound - 480 <= t && t < $0.upperBound + 480 }
                run = out[i] == 0 && !inMute ? run + 1 : 0
                if run == 480 { gaps += 1 }
            }
            #expect(gaps == 0, "\(gaps) gaps")
            #expect(rig.unit.statistics.lateFrames == 0)
        }

        /// NaN and ±Inf in the microphone never reach the library's state or element 1: the output
        /// stays finite and the echo is still cancelled (≥ 20 dB).
        @Test func nonFiniteMicrophoneSamplesNeverReachTheOutput() throws {
            let room = SimulatedRoom()
            var mic = room.microphone
            for i in stride(from: 1000, to: mic.count, by: 4999) { mic[i] = i % 2 == 0 ? .nan : .infinity }
            let rig = try VoiceRig(farEnd: room.farEnd) { unit in
                unit.enablesAGC = false
                unit.extraEchoPathDelay = SimulatedRoom.echoDelay
            }
            let out = try rig.render(mic)
            #expect(out.allSatisfy { $0.isFinite })
            let window = (2 * Self.rate)..<SimulatedRoom.farEndEnd
            let erle = 10 * log10(energy(room.echo, window) / energy(out, (window.lowerBound + rig.latency)..<(window.upperBound + rig.latency)))
            #expect(erle >= 20, "ERLE with NaN in the microphone \(erle) dB")
            #expect(rig.graph.nonFiniteSampleCount > 0)
        }

        /// Silence in (microphone and far end) comes out as silence or the library's faint comfort
        /// noise, never louder than −90 dBFS; full-scale input (a ±1 square wave at 200 Hz on the
        /// microphone, a full-scale sine as the far end) comes out finite and within ±1 with the AGC
        /// on and off; and rendering is deterministic: the same input twice gives the same samples
        /// (with no other instance being created meanwhile: see ``VoiceProcessingSuites``).
        @Test func silenceAndFullScaleInputAndDeterminism() throws {
            let rate = Self.rate, frames = 2 * rate
            let quiet = try VoiceRig(farEnd: [Float](repeating: 0, count: frames))
            let silent = try quiet.render([Float](repeating: 0, count: frames))
            let peak = silent.map { abs($0) }.max() ?? 0
            #expect(silent.allSatisfy { $0.isFinite } && 20 * log10(max(Double(peak), 1e-12)) < -90, "silence in: peak \(peak)")

            let square = (0..<frames).map { Float(($0 / (rate / 400)) % 2 == 0 ? 1 : -1) }
            let sine = (0..<frames).map { Float(sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
            var outputs: [[Float]] = []
            for agc in [true, true, false] {
                let loud = try VoiceRig(farEnd: sine) { $0.enablesAGC = agc }
                outputs.append(try loud.render(square))
            }
            let loudPeak = outputs.map { $0.map { abs($0) }.max() ?? 0 }.max() ?? 0
            print("VoiceProcessingIOUnit: full-scale output checksum \(outputs.map { $0.reduce(0.0) { $0 + Double($1) } })")
            #expect(outputs.allSatisfy { $0.allSatisfy { $0.isFinite } } && loudPeak <= 1.0001, "full scale in: peak \(loudPeak)")
            #expect(outputs[0].contains { $0 != 0 }, "full scale in: something comes out")
            let first = zip(outputs[0], outputs[1]).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(first == nil, "the same input twice: the same samples; first difference at \(first?.offset ?? -1)")
        }

        /// Device rates other than 48 kHz cancel the echo too: 16 kHz (native), 44.1 and 96 kHz (the
        /// library resamples them inside), 22 050 and 11 025 Hz (10 ms is not whole frames there: the
        /// library runs at 32 and 16 kHz behind libsamplerate, never short of output). The far end
        /// (`Front_Center.wav` three times, resampled by linear interpolation) 20 ms late at −6 dB,
        /// ERLE after 1.5 s ≥ 20 dB.
        @Test(arguments: [16_000, 44_100, 96_000, 22_050, 11_025])
        func otherDeviceRatesCancelTheEchoToo(rate: Int) throws {
            let center = Speech.load().samples
            let frames = Int(Double(center.count) * 3 * Double(rate) / 48_000)
            let far = (0..<frames).map { i -> Float in
                let x = Double(i) * 48_000 / Double(rate)
                let k = Int(x) % center.count, t = Float(x - Double(Int(x)))
                return center[k] * (1 - t) + center[(k + 1) % center.count] * t
            }
            let delay = rate / 50
            let echo = (0..<frames).map { $0 >= delay ? 0.5 * far[$0 - delay] : 0 }
            let rig = try VoiceRig(farEnd: far, sampleRate: Double(rate)) { unit in
                unit.enablesAGC = false
                try unit.setParameter(VoiceProcessingIOUnit.Parameter.noiseSuppression, 0, scope: .global)
                unit.extraEchoPathDelay = 0.02
            }
            let out = try rig.render(echo)
            let latency = rig.latency
            let window = (rate * 3 / 2)..<(frames - latency)
            let erle = 10 * log10(energy(echo, window) / max(energy(out, (window.lowerBound + latency)..<(window.upperBound + latency)), 1e-30))
            print("VoiceProcessingIOUnit at \(rate) Hz: ERLE \(String(format: "%.1f", erle)) dB, latency \(latency) frames")
            #expect(erle >= 20, "ERLE \(erle) dB at \(rate) Hz")
            #expect(rig.unit.statistics.frames == UInt64(frames / (rate / 100)))
            #expect(rig.unit.statistics.resamplingShortfallFrames == 0)
            // The near end through the same path at the reported latency: a talker alone after the far end.
            let left = Speech.load("/usr/share/sounds/alsa/Front_Left.wav").samples
            let near = (0..<rate).map { i -> Float in left[min(left.count - 1, Int(Double(i) * 48_000 / Double(rate)))] }
            let quiet = try VoiceRig(farEnd: [], sampleRate: Double(rate)) { unit in
                unit.enablesAGC = false
                try unit.setParameter(VoiceProcessingIOUnit.Parameter.noiseSuppression, 0, scope: .global)
            }
            let kept = try quiet.render(near + [Float](repeating: 0, count: quiet.latency + 100))
            let r = correlation(near, kept, (rate / 10)..<(rate * 9 / 10), lag: quiet.latency)
            #expect(r >= 0.9, "near-end correlation \(r) at \(rate) Hz, latency \(quiet.latency)")
        }

        /// A new device rate (a server restarted at 16 kHz): the graph re-initialized at that rate
        /// makes a new engine there — 10 ms frames of 160, its own latency — and processing goes on.
        @Test func aNewDeviceRateGetsANewEngine() throws {
            let room = SimulatedRoom()
            let rig = try VoiceRig(farEnd: room.farEnd) { $0.enablesAGC = false }
            _ = try rig.render(Array(room.microphone[0..<4800]))
            let at48 = rig.unit.statistics
            #expect(at48.frames == 10)
            try rig.graph.uninitialize()
            let renderer16 = try OfflineRenderer(graph: rig.graph, inputChannels: 1, outputChannels: 1, sampleRate: 16_000)
            try rig.graph.initialize()
            try rig.graph.start()
            let mic = room.microphone  // computed: once
            let speech = (0..<16_000).map { mic[$0 * 3] }
            let out = try renderer16.render(input: [speech], frameCount: speech.count)
            let at16 = rig.unit.statistics
            #expect(at16.frames == 100, "a new engine at 16 kHz: \(at16.frames) frames of 10 ms")
            #expect(at16.latencyFrames >= 256 + 160 && at16.latencyFrames < at48.latencyFrames, "latency \(at16.latencyFrames) frames at 16 kHz")
            #expect(out[0].count == speech.count && out[0].allSatisfy { $0.isFinite })
        }

        /// A slice longer than expected (256) raises the latency once, by the difference, and
        /// processing goes on; formats the library cannot take are refused at initialization.
        @Test func aLongerSliceRaisesTheLatencyOnceAndBadFormatsAreRefused() throws {
            let room = SimulatedRoom()
            let rig = try VoiceRig(farEnd: room.farEnd) { $0.enablesAGC = false }
            let before = rig.latency
            _ = try rig.render(Array(room.microphone[0..<Self.rate]), slice: 256)
            _ = try rig.render(Array(room.microphone[Self.rate..<(3 * Self.rate)]), slice: 1024)
            let stats = rig.unit.statistics
            #expect(stats.latencyIncreases == 1 && stats.latencyFrames == before + 1024 - 256)
            #expect(stats.lateFrames == 0 && stats.frames == UInt64(3 * Self.rate / 480))

            // Element 1 through to element 0: the graph's render latency is the unit's.
            let through = AudioGraph()
            let unit = VoiceProcessingIOUnit()
            let node = try through.addNode(unit)
            try unit.setInputEnabled(true)
            try through.connectNodeInput(node, sourceOutputElement: IOUnit.inputElement, node, destinationInputElement: IOUnit.outputElement)
            let renderer = try OfflineRenderer(graph: through, inputChannels: 1, outputChannels: 1)
            try through.initialize()
            try through.start()
            _ = try renderer.render(input: [Array(room.microphone[0..<4800])], frameCount: 4800)
            #expect(unit.statistics.latencyFrames > 0)
            #expect(abs(through.renderLatency - Double(unit.statistics.latencyFrames) / Double(Self.rate)) < 1e-9,
                    "renderLatency \(through.renderLatency), unit \(unit.statistics.latencyFrames) frames")

            for (rate, channels) in [(4_000.0, 1), (48_000.0, 9)] {
                let graph = AudioGraph()
                let unit = VoiceProcessingIOUnit()
                _ = try graph.addNode(unit)
                _ = try OfflineRenderer(graph: graph, inputChannels: channels, outputChannels: 1, sampleRate: rate)
                #expect(throws: AudioUnitError.formatNotSupported) { try graph.initialize() }
                #expect(!graph.isInitialized)
            }
        }
    }
}

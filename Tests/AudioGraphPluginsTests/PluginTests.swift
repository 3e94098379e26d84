// Tests, Plugins: real Debian LV2 (swh-lv2, mda-lv2) and LADSPA (ladspa-sdk) plugins through PluginUnit against their reference hosts (lv2apply, applyplugin) on real speech; components, parameters, latency, bad input.
import AudioGraph
import AudioGraphPlugins
import AudioGraphTestSupport
import CSndFile
import Foundation
import Testing

let speechPath = "/usr/share/sounds/alsa/Front_Center.wav"
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("PluginFixtures").path

/// A fresh temporary folder.
func temporaryFolder() throws -> String {
    let path = NSTemporaryDirectory() + "ag-plugins-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs a program to completion; its exit status and standard error.
@discardableResult
func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, errors: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let data = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Writes `channels` copies of `samples` as Float32 WAV with libsndfile (what lv2apply reads
/// and, given float, writes back as float).
func writeFloatWAV(_ path: String, _ samples: [Float], channels: Int = 1, rate: Int32 = 48_000) {
    var info = SF_INFO()
    info.samplerate = rate
    info.channels = Int32(channels)
    info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
    let file = sf_open(path, Int32(SFM_WRITE), &info)!
    var interleaved = samples.flatMap { Array(repeating: $0, count: channels) }
    sf_writef_float(file, &interleaved, sf_count_t(samples.count))
    sf_close(file)
}

/// Speech through `unit` offline (IO → unit → IO, mono, 48 kHz, 256-frame slices).
func renderSpeech(_ unit: PluginUnit, slice: Int = 256) throws -> [Float] {
    let speech = try #require(readAudioFile(speechPath)).channels[0]
    let chain = try Chain([unit], channels: 1)
    return try chain.render([speech], slice: slice)[0]
}

@Suite("Plugins: LADSPA and LV2 units against their reference hosts")
struct PluginOracleTests {
    /// ladspa-sdk's amp, delay and filter through PluginUnit equal applyplugin's output on
    /// speech, to applyplugin's 16-bit output: our float output rounded to 16 bits differs by at
    /// most 1 LSB (applyplugin writes 16-bit WAV only; its float→short conversion is its own).
    @Test(arguments: [("amp.so", "amp_mono", [("gain", Float(0.5))]),
                      ("delay.so", "delay_5s", [("delay_seconds", 0.1), ("dry_wet_balance", 0.4)]),
                      ("filter.so", "lpf", [("cutoff_frequency_hz", 1000)]),
                      ("filter.so", "hpf", [("cutoff_frequency_hz", 300)])] as [(String, String, [(String, Float)])])
    func ladspaPluginsMatchApplyplugin(library: String, label: String, controls: [(String, Float)]) throws {
        let unit = try PluginUnit(ladspa: label, library: library, channels: 1)
        for (symbol, value) in controls { try unit.setParameter(try unit.parameterID(symbol: symbol), value, scope: .global) }
        let ours = try renderSpeech(unit)
        let folder = try temporaryFolder()
        let out = folder + "/applyplugin.wav"
        let result = try run("/usr/bin/applyplugin", [speechPath, out, "/usr/lib/ladspa/" + library, label] + controls.map { "\($0.1)" })
        #expect(result.status == 0, "\(result.errors)")
        let reference = try #require(readAudioFile(out)).channels[0]
        #expect(reference.count == ours.count)
        var worst: Float = 0
        for (a, b) in zip(ours, reference) { worst = max(worst, abs(a - b)) }
        #expect(worst <= 1.0 / 32768 + 1e-6, "\(label): largest difference \(worst * 32768) LSB")
        #expect(rms(reference[...]) > 0.001, "the reference is not silence")
    }

    /// swh-lv2 and mda-lv2 plugins through PluginUnit equal lv2apply on speech stored as Float32
    /// — bit-identical (both hosts hand the plugin the same floats; these plugins are
    /// deterministic). lv2apply runs the plugin one frame at a time; plugins whose output does
    /// not depend on the block length are compared at 256-frame slices, swh's delay_n (its
    /// delay time glides across each run from 0 to the set time at the start) at 1-frame
    /// slices: at 256 it differs from lv2apply in its first ~400 delayed samples only; mda's
    /// Overdrive likewise at 1-frame slices (it flushes tiny filter states to 0 at the end of
    /// each run, so at 256 its output differs by < 1e-11 in 545 samples of near-silence).
    @Test(arguments: [("http://plugin.org.uk/swh-plugins/amp", [("gain", Float(-6))], 256),
                      ("http://plugin.org.uk/swh-plugins/buttlow_iir", [("cutoff", 1200), ("resonance", 0.9)], 256),
                      ("http://drobilla.net/plugins/mda/Overdrive", [("drive", 0.6), ("muffle", 0.3), ("output", 0)], 1),
                      ("http://plugin.org.uk/swh-plugins/delay_n", [("delay_time", 0.05), ("max_delay", 0.2)], 1)] as [(String, [(String, Float)], Int)])
    func lv2PluginsMatchLV2apply(uri: String, controls: [(String, Float)], slice: Int) throws {
        let info = try LV2.find(uri: uri)
        let unit = try PluginUnit(info, channels: info.audioOutputs.count)
        for (symbol, value) in controls { try unit.setParameter(try unit.parameterID(symbol: symbol), value, scope: .global) }
        let speech = try #require(readAudioFile(speechPath)).channels[0]
        let ours = try Chain([unit], channels: info.audioOutputs.count).render(Array(repeating: speech, count: info.audioOutputs.count), slice: slice)[0]
        let folder = try temporaryFolder()
        writeFloatWAV(folder + "/in.wav", speech, channels: info.audioOutputs.count)
        var arguments = ["-i", folder + "/in.wav", "-o", folder + "/out.wav"]
        for (symbol, value) in controls { arguments += ["-c", symbol, "\(value)"] }
        let result = try run("/usr/bin/lv2apply", arguments + [uri])
        #expect(result.status == 0, "\(result.errors)")
        let reference = try #require(readAudioFile(folder + "/out.wav")).channels[0]
        #expect(reference.count == ours.count)
        let differing = zip(ours, reference).filter { $0 != $1 }.count
        let firsts = zip(ours, reference).enumerated().filter { $0.element.0 != $0.element.1 }.prefix(5).map { "\($0.offset): \($0.element.0) vs \($0.element.1)" }
        #expect(differing == 0, "\(uri): \(differing) of \(ours.count) samples differ \(firsts)")
        #expect(rms(reference[...]) > 0.001, "the reference is not silence")
    }
}

@Suite("Plugins: components, parameters, channels, latency, bad input")
struct PluginUnitTests {
    @Test func pluginsAreComponentsWithStableCodes() throws {
        try componentRegistryTestLock.withLock { _ in
            PluginComponents.register()
            AudioComponentRegistry.refresh()
            let amp = try #require(AudioComponentRegistry.all.first { $0.identifier == "http://plugin.org.uk/swh-plugins/amp" })
            #expect(amp.origin == "lv2")
            #expect(amp.componentDescription.componentType == FourCharCode(fourCharacters: "aufx"))
            #expect(amp.componentDescription.componentManufacturer == FourCharCode(fourCharacters: "LV2 "))
            // FNV-1a of the URI: the same number on every machine and run.
            var hash: UInt32 = 0x811C_9DC5
            for byte in "http://plugin.org.uk/swh-plugins/amp".utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
            #expect(amp.componentDescription.componentSubType == hash)
            let mono = try #require(AudioComponentRegistry.findNext(matching: AudioComponentDescription(
                componentType: FourCharCode(fourCharacters: "aufx")!, componentSubType: 1048,
                componentManufacturer: FourCharCode(fourCharacters: "LDSP")!)))
            #expect(mono.identifier.hasSuffix("amp.so:amp_mono") && mono.origin == "ladspa")
            // Every ladspa-sdk effect and the swh amp are there; the sine generator is an `augn`.
            for label in ["amp_mono", "amp_stereo", "delay_5s", "lpf", "hpf"] {
                #expect(AudioComponentRegistry.all.contains { $0.identifier.hasSuffix(":" + label) }, "\(label)")
            }
            #expect(AudioComponentRegistry.all.contains { $0.identifier.hasSuffix(":sine_fcac") && $0.componentDescription.componentType == FourCharCode(fourCharacters: "augn") })
            // AUGraphAddNode by description makes a PluginUnit.
            let graph = AudioGraph()
            let node = try graph.addNode(mono.componentDescription)
            let made = try graph.nodeInfo(node)
            #expect(made is PluginUnit)
        }
    }

    /// Installed plugins that cannot be units say why, through one check: an instrument (a
    /// required event port) and a plugin with more audio inputs than outputs are refused by
    /// PluginUnit with that reason, and are not components; an effect has no problem.
    @Test func unhostablePluginsSayWhyAndAreNotComponents() throws {
        let instrument = try LV2.find(uri: "http://drobilla.net/plugins/mda/DX10")
        let problem = try #require(instrument.hostingProblem)
        #expect("\(problem)".contains("port event_in is neither audio nor control"), "\(problem)")
        #expect(throws: problem) { try PluginUnit(instrument) }
        let twoIntoOne = try LV2.find(uri: "http://plugin.org.uk/swh-plugins/modDelay")
        #expect(twoIntoOne.hostingProblem == .unsupportedPorts(plugin: twoIntoOne.identifier,
                                                               reason: "2 audio inputs but only 1 output (a unit needs an output for each input)"))
        #expect(try LV2.find(uri: "http://plugin.org.uk/swh-plugins/amp").hostingProblem == nil)
        componentRegistryTestLock.withLock { _ in
            PluginComponents.register()
            let identifiers = Set(AudioComponentRegistry.all.map(\.identifier))
            #expect(!identifiers.contains(instrument.identifier) && !identifiers.contains(twoIntoOne.identifier))
            #expect(identifiers.contains("http://plugin.org.uk/swh-plugins/amp"))
        }
    }

    @Test func controlPortsBecomeParameters() throws {
        let unit = try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/buttlow_iir")
        let list = unit.parameterList(scope: .global)
        #expect(list.map(\.name) == ["Cutoff Frequency (Hz)", "Resonance"])
        // lv2:sampleRate bounds are fractions of the rate: 0.0001…0.45 × 48 kHz.
        #expect(abs(list[0].minValue - 4.8) < 1e-3 && abs(list[0].maxValue - 21_600) < 1e-1)
        #expect(list[1].minValue == 0.1 && abs(list[1].maxValue - 1.41) < 1e-6 && abs(list[1].defaultValue - 0.755) < 1e-6)
        // Clamped like a built-in parameter, NaN refused, unknown IDs and scopes refused.
        try unit.setParameter(1, 50, scope: .global)
        #expect(try unit.parameter(1, scope: .global) == list[1].maxValue)
        #expect(throws: AudioUnitError.invalidParameter) { try unit.setParameter(1, .nan, scope: .global) }
        #expect(throws: AudioUnitError.invalidParameter) { try unit.setParameter(7, 1, scope: .global) }
        #expect(throws: AudioUnitError.invalidScope) { try unit.setParameter(0, 1, scope: .input) }
        #expect(throws: PluginError.unknownPortSymbol("q", valid: ["cutoff", "resonance"])) { try unit.parameterID(symbol: "q") }
        // LADSPA: toggles, logarithmic defaults and sample-rate bounds come from the hints.
        let lpf = try PluginUnit(ladspa: "lpf", library: "filter.so")
        let cutoff = lpf.parameterList(scope: .global)[0]
        #expect(cutoff.minValue == 0 && cutoff.maxValue == 24_000 && cutoff.defaultValue == 440)
    }

    @Test func controlOutputsAreReadOnlyParametersAndLatencyIsReported() throws {
        let limiter = try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/fastLookaheadLimiter")
        let attenuation = try limiter.parameterID(symbol: "attenuation")
        let info = try #require(limiter.parameterList(scope: .global).first { $0.id == attenuation })
        #expect(info.isReadOnly)
        #expect(throws: AudioUnitError.invalidParameter) { try limiter.setParameter(attenuation, 1, scope: .global) }
        try limiter.setParameter(try limiter.parameterID(symbol: "ingain"), 20, scope: .global)
        try limiter.setParameter(try limiter.parameterID(symbol: "limit"), -12, scope: .global)
        let speech = try #require(readAudioFile(speechPath)).channels[0]
        let chain = try Chain([limiter], channels: 2)
        _ = try chain.render([speech, speech])
        #expect(try limiter.parameter(attenuation, scope: .global) > 1, "the limiter published its gain reduction")
        #expect(try limiter.propertyLatency() > 0, "the look-ahead is reported")

        // artificialLatency declares 2500 frames… of latency it reports through its port.
        let delayed = try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/artificialLatency", channels: 1)
        try delayed.setParameter(try delayed.parameterID(symbol: "delay"), 10, scope: .global)
        let reported = try delayed.propertyLatency()
        #expect(reported > 0, "latency \(reported) s")
    }

    @Test func aMonoPluginRunsOneInstancePerChannel() throws {
        let unit = try PluginUnit(ladspa: "lpf", library: "filter.so")
        #expect(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame == 2)
        let speech = try #require(readAudioFile(speechPath)).channels[0]
        let other = noise(frames: speech.count, seed: 7).map { $0 * 0.25 }
        let stereo = try Chain([unit], channels: 2).render([speech, other])
        #expect(unit.instanceCount == 2)
        let left = try Chain([try PluginUnit(ladspa: "lpf", library: "filter.so", channels: 1)], channels: 1).render([speech])[0]
        let right = try Chain([try PluginUnit(ladspa: "lpf", library: "filter.so", channels: 1)], channels: 1).render([other])[0]
        #expect(stereo[0] == left && stereo[1] == right, "each channel filtered by its own instance")
    }

    @Test func parameterEditsAndRampsReachThePorts() throws {
        let unit = try PluginUnit(ladspa: "amp_mono", library: "amp.so", channels: 1)
        let chain = try Chain([unit], channels: 1)
        let ones = [Float](repeating: 0.5, count: 4800)
        try unit.setParameter(0, 2, scope: .global)
        #expect(try chain.render([ones])[0].allSatisfy { $0 == 1 })
        try unit.scheduleParameter(AudioUnitParameterEvent(id: 0, scope: .global, bufferOffset: 0, .linearRamp(to: 0, durationFrames: 4800)))
        let ramp = try chain.render([ones])[0]
        #expect(ramp.first! > ramp[2400] && ramp[2400] > ramp.last!, "the gain ramps down between pieces")
    }

    @Test func badInputIsATypedErrorAndChangesNothing() throws {
        #expect {
            try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/ampp")
        } throws: { error in
            guard case let PluginError.unknownURI(_, near) = error else { return false }
            return near.contains("http://plugin.org.uk/swh-plugins/amp")
        }
        #expect {
            try PluginUnit(ladspa: "amp_mon", library: "amp.so")
        } throws: { error in
            guard case let PluginError.unknownLabel(_, near) = error else { return false }
            return near.contains("amp_mono")
        }
        #expect {
            try PluginUnit(ladspa: "x", library: speechPath)
        } throws: { error in
            if case PluginError.notALADSPALibrary = error { return true } else { return false }
        }
        try LV2.loadBundle(fixtures + "/needs-feature.lv2")
        #expect(throws: PluginError.missingFeature(plugin: "urn:audiograph:test:needs-feature", feature: "http://example.org/ns/no-such-feature")) {
            try PluginUnit(lv2: "urn:audiograph:test:needs-feature")
        }
        #expect(throws: PluginError.channelCount(3, pluginOutputs: 2)) { try PluginUnit(ladspa: "amp_stereo", library: "amp.so", channels: 3) }
        // The graph is unchanged by a component that fails: AUGraphAddNode by description throws.
        let graph = AudioGraph()
        let library = try compileFixture()
        #expect(throws: PluginError.instantiateFailed(library + ":refuses")) { try PluginUnit(ladspa: "refuses", library: library) }
        let before = graph.nodeCount
        let refusing = try #require(try LADSPA.plugins(inLibrary: library).first { $0.label == "refuses" })
        let component = AudioComponent(refusing.componentDescription, name: "refuses", origin: "ladspa") { () throws(AudioUnitError) -> AudioUnit in
            do { return try PluginUnit(refusing) } catch { throw .failedInitialization }
        }
        #expect(throws: AudioUnitError.failedInitialization) { _ = try graph.addNode(try component.instantiate()) }
        #expect(graph.nodeCount == before)
    }

    @Test func nonFiniteOutputIsReplacedAndCounted() throws {
        let library = try compileFixture()
        let unit = try PluginUnit(ladspa: "nan_writer", library: library, channels: 1)
        let out = try Chain([unit], channels: 1).render([[Float](repeating: 0.25, count: 1024)])[0]
        #expect(out.allSatisfy { $0.isFinite })
        #expect(unit.nonFiniteSampleCount == 512, "\(unit.nonFiniteSampleCount)")
        #expect(out[0] == 0.25 && out[1] == 0 && out[2] == 0.25 && out[3] == 0)
    }

    /// Four threads instantiating LV2 plugins at once share one URID table (each instance's
    /// feature array maps the options' URIs): every instance renders the same gain. Run under
    /// ThreadSanitizer by scripts/test, this is where a `Synchronization.Mutex` there was
    /// reported as a race (a contended Mutex waits in the kernel, unseen; see ControlLock).
    @Test func lv2UnitsInstantiatedOnFourThreadsAtOnceAllRender() throws {
        let outputs = ControlLock<[[Float]]>([])
        let failures = ControlLock<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<8 {
                do {
                    let amp = try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/amp", channels: 1)
                    try amp.setParameter(0, -6, scope: .global)
                    let out = try Chain([amp], channels: 1).render([[Float](repeating: 0.5, count: 256)])[0]
                    outputs.withLock { $0.append(out) }
                } catch { failures.withLock { $0.append("\(error)") } }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let all = outputs.withLock { $0 }
        #expect(all.count == 32 && all.allSatisfy { $0 == all[0] }, "32 instances, one output")
        #expect(abs((all.first?[255] ?? 0) - 0.5 * Float(pow(10, -6.0 / 20))) < 1e-6, "−6 dB of 0.5")
    }

    @Test func aRateChangeReinstantiatesOffTheRenderThread() throws {
        let unit = try PluginUnit(ladspa: "lpf", library: "filter.so", channels: 1)
        let chain = try Chain([unit], channels: 1, sampleRate: 44_100)
        let out = try chain.render([sine(frequency: 100, sampleRate: 44_100, frames: 4410)])[0]
        #expect(unit.failedRenderCount == 0 && rms(out[2000...]) > 0.2, "the 44.1 kHz instance renders")
    }
}

/// Compiles Tests/PluginFixtures/misbehaving.c into a LADSPA library with `cc`; its path.
func compileFixture() throws -> String {
    let folder = try temporaryFolder()
    let library = folder + "/misbehaving.so"
    let result = try run("/usr/bin/cc", ["-shared", "-fPIC", "-O2", "-o", library, fixtures + "/misbehaving.c", "-lm"])
    try #require(result.status == 0, "cc: \(result.errors)")
    return library
}

extension AudioUnit {
    /// The Latency property, seconds.
    func propertyLatency() throws -> Double {
        guard case let .float64(seconds) = try getProperty(.latency, scope: .global, element: 0) else { return -1 }
        return seconds
    }
}

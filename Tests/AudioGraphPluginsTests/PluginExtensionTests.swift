// Tests, Plugins: the LV2 host features no Debian plugin here uses — log:log, the worker extension, the state extension — through fixture plugins built with cc (Tests/PluginFixtures/hostfeatures.c).
import AudioGraph
import AudioGraphPlugins
import AudioGraphTestSupport
import Foundation
import Testing

/// Builds Tests/PluginFixtures/hostfeatures.c with cc into a temporary bundle (its .ttl files
/// copied beside it) and loads the bundle into lilv's world; once per test process.
let hostFeaturesBundle: Result<String, any Error> = Result {
    let folder = try temporaryFolder() + "/hostfeatures.lv2"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    for file in ["manifest.ttl", "plugin.ttl"] {
        try FileManager.default.copyItem(atPath: fixtures + "/hostfeatures.lv2/" + file, toPath: folder + "/" + file)
    }
    let result = try run("/usr/bin/cc", ["-shared", "-fPIC", "-O2", "-Wall", "-o", folder + "/hostfeatures.so", fixtures + "/hostfeatures.c", "-lm"])
    guard result.status == 0 else { throw PluginError.instantiateFailed("cc: \(result.errors)") }
    try LV2.loadBundle(folder)
    return folder
}

/// The fixture plugin `name` (log, worker, state), mono, one instance.
func hostFeaturePlugin(_ name: String) throws -> PluginUnit {
    _ = try hostFeaturesBundle.get()
    return try PluginUnit(lv2: "urn:audiograph:test:" + name, channels: 1)
}

@Suite("Plugins: LV2 host features (log:log, worker, state)")
struct PluginExtensionTests {
    @Test func logIsProvidedAndItsMessagesAreSeen() throws {
        #expect(LV2.providedFeatures.contains("http://lv2plug.in/ns/ext/log#log"))
        let unit = try hostFeaturePlugin("log")
        // Instantiated twice so far (48 kHz at creation); the Note and Warning of each, newline removed.
        #expect(unit.logCount(.note) >= 1 && unit.logCount(.warning) >= 1)
        #expect(unit.latestLogMessage(.note) == "instantiated at 48000 Hz")
        #expect(unit.latestLogMessage(.warning) == "a warning for the test, 1 of 1")
        #expect(unit.logCount(.error) == 0 && unit.latestLogMessage(.error) == nil)
        // Trace from run(), the render thread: counted and kept, one per run.
        let before = unit.logCount(.trace)
        _ = try Chain([unit], channels: 1).render([[Float](repeating: 0.5, count: 1024)], slice: 256)
        #expect(unit.logCount(.trace) - before == 4, "\(unit.logCount(.trace) - before) traces")
        #expect(unit.latestLogMessage(.trace) == "run 256 frames")
        // LADSPA plugins have no log.
        let ladspa = try PluginUnit(ladspa: "amp_mono", library: "amp.so", channels: 1)
        #expect(ladspa.logCount(.note) == 0 && ladspa.latestLogMessage(.note) == nil)
    }

    /// Renders `frames` of 0.5 through `chain` in 256-frame calls with a pause between, so the
    /// worker thread (asynchronous, as offline rendering runs faster than real time) answers;
    /// the last call's output.
    func renderWithPauses(_ chain: Chain, calls: Int) throws -> [Float] {
        var last: [Float] = []
        for _ in 0..<calls {
            last = try chain.render([[Float](repeating: 0.5, count: 256)], slice: 256)[0]
            usleep(5_000)
        }
        return last
    }

    @Test func theWorkerComputesOffTheRenderThreadAndItsResponseIsApplied() throws {
        let unit = try hostFeaturePlugin("worker")
        #expect(unit.hasWorker)
        let chain = try Chain([unit], channels: 1)
        try unit.setParameter(try unit.parameterID(symbol: "gain_db"), -6.0206, scope: .global)
        var out = try renderWithPauses(chain, calls: 4)
        for _ in 0..<100 where abs(out[255] - 0.25) > 1e-4 { out = try renderWithPauses(chain, calls: 1) }
        #expect(abs(out[0] - 0.25) < 1e-4 && abs(out[255] - 0.25) < 1e-4, "0.5 × 10^(−6.02/20): \(out[0])")
        #expect(abs(try unit.parameter(try unit.parameterID(symbol: "applied"), scope: .global) - 0.5) < 1e-4)
        // end_run() after every run: the port shows the calls before the last of the ≥ 4 runs.
        let endRuns = try unit.parameter(try unit.parameterID(symbol: "end_runs"), scope: .global)
        #expect(endRuns >= 3, "\(endRuns) end_run calls")
        let counts = try #require(unit.workerCounts)
        #expect(counts.scheduled >= 4 && counts.worked >= 1 && counts.responses >= 1 && counts.failed == 0 && counts.lost == 0, "\(counts)")

        // A work() that fails is counted; the plugin keeps the last gain it was given.
        try unit.setParameter(try unit.parameterID(symbol: "gain_db"), -80, scope: .global)
        out = try renderWithPauses(chain, calls: 4)
        for _ in 0..<100 where (unit.workerCounts?.failed ?? 0) == 0 { out = try renderWithPauses(chain, calls: 1) }
        #expect((unit.workerCounts?.failed ?? 0) >= 1)
        #expect(abs(out[255] - 0.25) < 1e-4, "the failed request changed nothing: \(out[255])")

        // A plugin without the worker extension has none.
        #expect(try hostFeaturePlugin("log").workerCounts == nil)
    }

    @Test func stateIsSavedAndRestoredIntoAFreshInstance() throws {
        let unit = try hostFeaturePlugin("state")
        #expect(unit.hasState)
        let chain = try Chain([unit], channels: 1)
        let input = [Float](repeating: 0.5, count: 512)
        try unit.setParameter(try unit.parameterID(symbol: "value"), 3, scope: .global)
        try unit.setParameter(try unit.parameterID(symbol: "learn"), 1, scope: .global)
        _ = try chain.render([input])
        try unit.setParameter(try unit.parameterID(symbol: "learn"), 0, scope: .global)
        try unit.setParameter(try unit.parameterID(symbol: "value"), 7, scope: .global)
        let learned = try chain.render([input])[0]
        #expect(learned.allSatisfy { $0 == 1.5 }, "the learned gain 3, not the value 7")

        let state = try unit.saveState()
        #expect(state.values["urn:audiograph:test:state#gain"] == PluginState.Value(type: "http://lv2plug.in/ns/ext/atom#Float", bytes: withUnsafeBytes(of: Float(3)) { Array($0) }))
        #expect(state.values["urn:audiograph:test:state#gain"]?.number == 3)
        #expect(state.values["urn:audiograph:test:state#name"]?.text == "learned")

        let fresh = try hostFeaturePlugin("state")
        let freshChain = try Chain([fresh], channels: 1)
        #expect(try freshChain.render([input])[0].allSatisfy { $0 == 0.5 }, "a fresh instance's gain is 1")
        try fresh.restoreState(state)
        let restored = try freshChain.render([input])[0]
        #expect(restored == learned, "restored: \(restored[0]), saved: \(learned[0])")
        #expect(try fresh.saveState() == state)

        // Bad input: a value of the wrong type is refused by the plugin; nothing changes.
        var wrong = state
        wrong.values["urn:audiograph:test:state#gain"] = try PluginState.Value(type: "http://lv2plug.in/ns/ext/atom#Int", number: 5)
        #expect(throws: PluginError.stateRejected(plugin: "urn:audiograph:test:state", status: "bad type")) { try fresh.restoreState(wrong) }
        #expect(throws: PluginError.stateRejected(plugin: "urn:audiograph:test:state", status: "unknown property")) { try fresh.restoreState(PluginState()) }
        #expect(throws: PluginError.invalidStateValue(key: "gain", reason: "the key is not a URI")) {
            try fresh.restoreState(PluginState(["gain": state.values["urn:audiograph:test:state#gain"]!]))
        }
        #expect(try freshChain.render([input])[0] == learned, "still the restored gain")
        #expect(throws: PluginError.invalidStateValue(key: "k", reason: "1.5 is not a 32-bit integer")) {
            try PluginState.Value(type: "http://lv2plug.in/ns/ext/atom#Int", number: 1.5, key: "k")
        }

        // A value saved without state:IS_PORTABLE cannot go into a file: refused by key.
        try unit.setParameter(try unit.parameterID(symbol: "portable"), 0, scope: .global)
        _ = try chain.render([input])
        #expect(throws: PluginError.stateValueNotPortable(plugin: "urn:audiograph:test:state", key: "urn:audiograph:test:state#gain")) { try unit.saveState() }

        // Plugins without the extension say so.
        let amp = try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/amp", channels: 1)
        #expect(!amp.hasState)
        #expect(throws: PluginError.noStateInterface("http://plugin.org.uk/swh-plugins/amp")) { try amp.saveState() }
        #expect(throws: PluginError.noStateInterface("http://plugin.org.uk/swh-plugins/amp")) { try amp.restoreState(state) }
    }
}

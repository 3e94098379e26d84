// Tests, JACK: LV2 and LADSPA plugin units on the JACK process thread under live parameter edits, ramps and inserts — no allocation, no lock.
import AudioGraph
import AudioGraphJACK
import AudioGraphPlugins
import CAllocCounter
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    /// A chain of real Debian plugins (ladspa-sdk's amp and low-pass, swh-lv2's amp, Butterworth
    /// low-pass and look-ahead limiter) pulled by the JACK driver while this thread edits,
    /// schedules and ramps their parameters, reads the limiter's control output, and inserts and
    /// removes a plugin (graph updates); the allocation/lock counter watches the process thread.
    @Suite("Plugins on the JACK process thread")
    struct PluginsRealTimeTests {
        @Test func pluginParameterEditsNeitherAllocateNorLockOnTheProcessThread() throws {
            let graph = AudioGraph()
            let io = IOUnit()
            let ioNode = try graph.addNode(io)
            let limiter = try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/fastLookaheadLimiter")
            let units: [PluginUnit] = [try PluginUnit(ladspa: "amp_mono", library: "amp.so"),
                                       try PluginUnit(ladspa: "lpf", library: "filter.so"),
                                       try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/amp"),
                                       try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/buttlow_iir"),
                                       limiter]
            let nodes = try countedToneChain(graph, units, into: ioNode)

            var meter: LevelMeter!
            let counted = try CountedProcessThread(graph: graph, clientName: "ag-plugins-rt", connectPhysicalPorts: false,
                                                   afterStart: { _ in meter = try graph.installLevelMeter(on: nodes.last!) })
            var random = SplitMix64(seed: 0x9106_1A5)
            let attenuation = try limiter.parameterID(symbol: "attenuation")
            var inserted: AUNode?
            var edits = 0, updates = 0, readings: Float = 0
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline {
                edits += 1
                let unit = units[random(units.count)]
                let infos = unit.parameterList(scope: .global).filter { !$0.isReadOnly }
                let info = infos[random(infos.count)]
                let value = info.minValue + (info.maxValue - info.minValue) * Float(random(1001)) / 1000
                switch random(6) {
                case 0, 1: try unit.setParameter(info.id, value, scope: .global)
                case 2: try unit.setParameter(info.id, value, scope: .global, bufferOffset: random(600))
                case 3 where info.unit != .boolean && info.unit != .indexed:
                    try unit.scheduleParameter(AudioUnitParameterEvent(id: info.id, scope: .global, bufferOffset: random(1000),
                                                                       .linearRamp(to: value, durationFrames: 1 + random(4000))))
                case 4 where random(20) == 0:
                    try graph.disconnectNodeInput(ioNode, inputElement: 0)
                    if let node = inserted {
                        try graph.removeNode(node)
                        inserted = nil
                        try graph.connectNodeInput(nodes.last!, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
                    } else {
                        let node = try graph.addNode(try PluginUnit(ladspa: "hpf", library: "filter.so"))
                        try graph.connectNodeInput(nodes.last!, sourceOutputElement: 0, node, destinationInputElement: 0)
                        try graph.connectNodeInput(node, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
                        inserted = node
                    }
                    try graph.update()
                    updates += 1
                default: readings = max(readings, try limiter.parameter(attenuation, scope: .global))
                }
                usleep(500)
            }
            counted.expectNeitherAllocationNorLock("the edits")
            for unit in units { for info in unit.parameterList(scope: .global) where !info.isReadOnly { try unit.setParameter(info.id, info.defaultValue, scope: .global) } }
            meter.resetPeaks()
            usleep(400_000)
            let peak = try meter.peakPower(channel: 0)
            #expect(edits >= 1000 && updates >= 5, "\(edits) edits, \(updates) updates in 2 s")
            #expect(peak.isFinite && peak > -60, "after the edits the chain still carries the tone: peak \(peak) dBFS")
            #expect(units.allSatisfy { $0.failedRenderCount == 0 && $0.nonFiniteSampleCount == 0 })
        }
    }
}

/// Builds Tests/PluginFixtures/hostfeatures.c with cc into a temporary LV2 bundle and loads it
/// (once per process): the fixture plugins using log:log and the worker extension.
let realTimeHostFeaturesBundle: Result<String, any Error> = Result {
    let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("PluginFixtures").path
    let folder = NSTemporaryDirectory() + "ag-rt-hostfeatures-\(getpid())/hostfeatures.lv2"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    for file in ["manifest.ttl", "plugin.ttl"] {
        try? FileManager.default.removeItem(atPath: folder + "/" + file)
        try FileManager.default.copyItem(atPath: fixtures + "/hostfeatures.lv2/" + file, toPath: folder + "/" + file)
    }
    let cc = Process()
    cc.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
    cc.arguments = ["-shared", "-fPIC", "-O2", "-o", folder + "/hostfeatures.so", fixtures + "/hostfeatures.c", "-lm"]
    try cc.run()
    cc.waitUntilExit()
    guard cc.terminationStatus == 0 else { throw PluginError.instantiateFailed("cc exited with \(cc.terminationStatus)") }
    try LV2.loadBundle(folder)
    return folder
}

extension JACKIntegration.PluginsRealTimeTests {
    /// The fixture plugins that log a Trace in every run() and schedule worker requests in
    /// every run() (the worker's responses delivered before the next run, end_run() after it),
    /// pulled by the JACK driver while this thread edits the worker's gain: the render-thread
    /// side of log:log and the worker neither allocates nor locks, and the responses arrive.
    @Test func logAndWorkerNeitherAllocateNorLockOnTheProcessThread() throws {
        _ = try realTimeHostFeaturesBundle.get()
        let graph = AudioGraph()
        let io = IOUnit()
        let ioNode = try graph.addNode(io)
        let logger = try PluginUnit(lv2: "urn:audiograph:test:log")
        let worker = try PluginUnit(lv2: "urn:audiograph:test:worker")
        let nodes = [try graph.addNode(logger), try graph.addNode(worker)]
        try graph.setNodeInputCallback(nodes[0], inputElement: 0) { _, _, buffers in
            alloccounter_arm_this_thread()
            for c in 0..<buffers.channelCount {
                let out = buffers[c]
                for f in 0..<out.count { out[f] = 0.5 }
            }
            return 0
        }
        try graph.connectNodeInput(nodes[0], sourceOutputElement: 0, nodes[1], destinationInputElement: 0)
        try graph.connectNodeInput(nodes[1], sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let counted = try CountedProcessThread(graph: graph, clientName: "ag-plugins-rt-worker", connectPhysicalPorts: false)
        let gain = try worker.parameterID(symbol: "gain_db")
        let traces = logger.logCount(.trace)
        var random = SplitMix64(seed: 0x3017_2E)
        let deadline = Date().addingTimeInterval(1.5)
        while Date() < deadline {
            try worker.setParameter(gain, -40 + Float(random(400)) / 10, scope: .global)
            usleep(2_000)
        }
        try worker.setParameter(gain, -6.0206, scope: .global)
        usleep(300_000)
        counted.expectNeitherAllocationNorLock("the log and the worker")
        let counts = try #require(worker.workerCounts)
        #expect(counts.scheduled >= 100 && counts.responses >= 100 && counts.failed == 0, "\(counts)")
        #expect(logger.logCount(.trace) - traces >= 100, "\(logger.logCount(.trace) - traces) traces from run()")
        let applied = try worker.parameter(try worker.parameterID(symbol: "applied"), scope: .global)
        #expect(abs(applied - 0.5) < 1e-3, "the last response applied: \(applied)")
    }
}

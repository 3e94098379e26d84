// Tests, JACK: graphrun running a graph file with an LV2 and a LADSPA plugin, bit-exact against the same plugins rendered offline, and its plugin listing and errors.
import AudioGraph
import AudioGraphPlugins
import AudioGraphTestSupport
import Foundation
import Testing

extension JACKIntegration {
    @Suite("graphrun with LV2 and LADSPA plugins")
    struct GraphrunPluginTests {
        let server = TestServer.shared

        static let file = """
        { "name": "plugins", "channels": 2,
          "nodes": [ { "id": "amp", "type": "lv2", "uri": "http://plugin.org.uk/swh-plugins/amp", "parameters": { "gain": -6 } },
                     { "id": "lp", "type": "ladspa", "label": "lpf", "library": "filter.so", "parameters": { "cutoff_frequency_hz": 2000 } } ],
          "connections": [ { "from": "io", "to": "amp" }, { "from": "amp", "to": "lp" }, { "from": "lp", "to": "io" } ] }
        """

        /// swh's amp at −6 dB then ladspa-sdk's low-pass at 2 kHz on speech through JACK equal the
        /// same two plugins rendered offline (which PluginOracleTests hold to lv2apply and
        /// applyplugin), sample for sample; an edit of the file re-parameterises them live.
        @Test func anLV2AndALADSPAPluginFromAFileRunLiveBitExact() throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(UUID().uuidString).json").path
            try Self.file.write(toFile: path, atomically: false, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let speech = Speech.load().samples
            func offline(gain: Float) throws -> [Float] {
                let amp = try PluginUnit(lv2: "http://plugin.org.uk/swh-plugins/amp", channels: 1)
                try amp.setParameter(0, gain, scope: .global)
                let lp = try PluginUnit(ladspa: "lpf", library: "filter.so", channels: 1)
                try lp.setParameter(0, 2000, scope: .global)
                return try Chain([amp, lp], channels: 1).render([speech])[0]
            }
            let name = "gr-plug-\(getpid())"
            let tool = try ToolProcess("graphrun", [path, "--name", name, "--no-autoconnect"], server: server)
            #expect(tool.waitFor("graphrun: running"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            let probe = ProbeClient(server: server, name: "probe-grp", play: speech, captureFrames: speech.count + 8192)
            probe.connect(probe.outPort, "\(name):in_1")
            probe.connect("\(name):out_1", probe.inPort)
            // Within 1e-6, not bit-exact: the low-pass's state after the silence before the probe
            // plays may sit at a denormal instead of 0 (see below).
            probe.expectNear(try offline(gain: -6), tolerance: 1e-6, "the plugins on JACK equal the plugins offline")

            try Self.file.replacingOccurrences(of: "\"gain\": -6", with: "\"gain\": -12").write(toFile: path, atomically: false, encoding: .utf8)
            #expect(tool.waitFor("1 parameter changed (amp.gain -6 → -12)"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            usleep(100_000)
            // Within 1e-6, not bit-exact: the low-pass's state, decaying through the silence since
            // the first pass, sticks at the smallest denormal instead of reaching 0.
            probe.expectNear(try offline(gain: -12), tolerance: 1e-6, "gain −12 dB applied live")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        /// An lv2 node's "state" (the LV2 state extension) is restored into the plugin: the
        /// fixture whose gain is its state (Tests/PluginFixtures/hostfeatures.c) plays speech ×3
        /// through JACK; a value of the wrong type is refused by the plugin, naming line and field.
        @Test func aPluginStateFromAFileIsRestored() throws {
            let bundle = try realTimeHostFeaturesBundle.get()
            let lv2Path = ["LV2_PATH": URL(fileURLWithPath: bundle).deletingLastPathComponent().path]
            let text = """
            { "name": "state", "channels": 1,
              "nodes": [ { "id": "s", "type": "lv2", "uri": "urn:audiograph:test:state",
                           "state": { "urn:audiograph:test:state#gain": { "type": "atom:Float", "value": 3 } } } ],
              "connections": [ { "from": "io", "to": "s" }, { "from": "s", "to": "io" } ] }
            """
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(UUID().uuidString).json").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            try text.replacingOccurrences(of: "atom:Float", with: "atom:Int").write(toFile: path, atomically: false, encoding: .utf8)
            let refused = try ToolProcess("graphrun", [path, "--check"], server: server, environment: lv2Path)
            #expect(refused.waitForExit() == 2)
            #expect(refused.stderr.contains(":3: nodes[0].state: urn:audiograph:test:state refused its state: bad type"), "\(refused.stderr)")

            try text.write(toFile: path, atomically: false, encoding: .utf8)
            let name = "gr-state-\(getpid())"
            let tool = try ToolProcess("graphrun", [path, "--name", name, "--no-autoconnect"], server: server, environment: lv2Path)
            #expect(tool.waitFor("graphrun: running"), "stdout: \(tool.stdout) stderr: \(tool.stderr)")
            let speech = Speech.load().samples
            let probe = ProbeClient(server: server, name: "probe-grs", play: speech, captureFrames: speech.count + 8192)
            probe.connect(probe.outPort, "\(name):in_1")
            probe.connect("\(name):out_1", probe.inPort)
            probe.expectNear(speech.map { $0 * 3 }, tolerance: 1e-6, "the restored gain 3 applies")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func listInfoAndBadPluginFiles() throws {
            let list = try run(ToolProcess.binary("graphrun").path, ["--list", "swh-plugins/amp"], server: server)
            #expect(list.contains("lv2 http://plugin.org.uk/swh-plugins/amp \"Simple amplifier\""), "\(list)")
            #expect(!list.contains("ladspa amp_mono"), "filtered by the text")
            let all = try run(ToolProcess.binary("graphrun").path, ["--list"], server: server)
            for label in ["amp_mono", "amp_stereo", "delay_5s", "lpf", "hpf", "noise_white", "sine_fcac"] { #expect(all.contains("ladspa \(label) "), "\(label)") }
            #expect(all.contains("lowpass: ") && all.contains("lv2 http://drobilla.net/plugins/mda/Delay"))
            let info = try run(ToolProcess.binary("graphrun").path, ["--info", "http://plugin.org.uk/swh-plugins/buttlow_iir"], server: server)
            #expect(info.contains("parameter cutoff (id 0") && info.contains("parameter resonance (id 1"), "\(info)")

            func check(_ text: String) throws -> String {
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(UUID().uuidString).json").path
                try text.write(toFile: path, atomically: false, encoding: .utf8)
                defer { try? FileManager.default.removeItem(atPath: path) }
                let tool = try ToolProcess("graphrun", [path, "--check"], server: server)
                #expect(tool.waitForExit() == 2)
                return tool.stderr
            }
            #expect(try check(Self.file.replacingOccurrences(of: "swh-plugins/amp\"", with: "swh-plugins/ampp\""))
                .contains(":2: nodes[0].uri: no installed LV2 plugin has the URI http://plugin.org.uk/swh-plugins/ampp (near: http://plugin.org.uk/swh-plugins/amp"))
            #expect(try check(Self.file.replacingOccurrences(of: "\"gain\"", with: "\"gian\""))
                .contains(":2: nodes[0].parameters.gian: an lv2 has no parameter 'gian' (it has: gain)"))
            #expect(try check(Self.file.replacingOccurrences(of: "\"lpf\"", with: "\"lpff\""))
                .contains(":3: nodes[1].label: no LADSPA plugin has the label or ID lpff (near: lpf)"))
            #expect(try check(Self.file.replacingOccurrences(of: "\"filter.so\"", with: "\"/etc/hostname\""))
                .contains(":3: nodes[1].library: /etc/hostname is not a LADSPA library"))
            #expect(try check(Self.file.replacingOccurrences(of: "\"cutoff_frequency_hz\": 2000", with: "\"cutoff_frequency_hz\": 90000"))
                .contains(":3: nodes[1].parameters.cutoff_frequency_hz: "))
        }
    }
}

extension JACKIntegration {
    /// graphthru --insert: plugins before the gate, by LV2 URI or LADSPA label; bad ones refused.
    @Suite("graphthru --insert")
    struct GraphthruInsertTests {
        let server = TestServer.shared

        /// ladspa-sdk's low-pass (at its 440 Hz default) and swh's amp (0 dB) inserted: speech out
        /// of graphthru equals the low-pass rendered offline, sample for sample (the amp at 0 dB,
        /// the gate and the mixer at unity are exact).
        @Test func insertedPluginsProcessTheInput() throws {
            let name = "gt-insert-\(getpid())"
            let tool = try ToolProcess(["--name", name, "--no-autoconnect", "--channels", "1",
                                        "--insert", "lpf", "--insert", "http://plugin.org.uk/swh-plugins/amp"], server: server)
            #expect(tool.waitFor("mute: off"), "startup: \(tool.stdout) \(tool.stderr)")
            let speech = Speech.load().samples
            let expected = try Chain([try PluginUnit(ladspa: "lpf", library: "filter.so", channels: 1)], channels: 1).render([speech])[0]
            let probe = ProbeClient(server: server, name: "probe-gti", play: speech, captureFrames: speech.count + 8192)
            probe.connect("\(probe.name):out", "\(name):in_1")
            probe.connect("\(name):out_1", "\(probe.name):in")
            // Within 1e-6: the plugin's state after the silence before the probe plays (as above).
            probe.expectNear(expected, tolerance: 1e-6, "speech through the inserted low-pass")
            tool.send("quit")
            #expect(tool.waitForExit() == 0)
        }

        @Test func unknownOrUnfittingPluginsAreRefused() throws {
            let unknown = try ToolProcess(["--insert", "lpff", "--no-autoconnect"], server: server)
            #expect(unknown.waitForExit() == 2)
            #expect(unknown.stderr.contains("--insert: no LADSPA plugin has the label or ID lpff (near: lpf"), "\(unknown.stderr)")
            let uri = try ToolProcess(["--insert", "http://plugin.org.uk/swh-plugins/ampp", "--no-autoconnect"], server: server)
            #expect(uri.waitForExit() == 2)
            #expect(uri.stderr.contains("near: http://plugin.org.uk/swh-plugins/amp"), "\(uri.stderr)")
            let stereo = try ToolProcess(["--insert", "amp_stereo", "--channels", "1", "--no-autoconnect"], server: server)
            #expect(stereo.waitForExit() == 2)
            #expect(stereo.stderr.contains("it cannot process 1 channel"), "\(stereo.stderr)")
            // Installed plugins that cannot go in the chain, each with its reason: an instrument
            // (an event port), more inputs than outputs, a generator (no audio input).
            for (plugin, reason) in [("http://drobilla.net/plugins/mda/DX10", "port event_in is neither audio nor control"),
                                     ("http://plugin.org.uk/swh-plugins/modDelay", "2 audio inputs but only 1 output"),
                                     ("sine_fcac", "has no audio input, so it cannot go in the chain")] {
                let refused = try ToolProcess(["--insert", plugin, "--no-autoconnect"], server: server)
                #expect(refused.waitForExit() == 2, "\(plugin)")
                #expect(refused.stderr.contains(reason), "\(plugin): \(refused.stderr)")
            }
        }
    }
}

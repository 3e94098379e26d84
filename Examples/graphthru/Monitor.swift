// graphthru: the monitor — the graph and its live edits (mute, volume, low-pass insert/remove), its meters and its recording.
import AudioGraph
import AudioGraphJACK
import AudioGraphPlugins
import ToolSupport
#if canImport(Glibc)
import Glibc
#endif

/// A start-up step that cannot go on: what to say and the exit status.
struct StartupError: Error {
    var message: String
    var status: Int32
}

/// One channel's level: average (RMS) and peak power, dBFS (−160 for silence).
struct MeterReading { var average: Float; var peak: Float }

/// The monitoring chain and every change made to it while it runs:
///
///     IO element 1 → [--insert plugins…] → [low-pass] → mute gate → mixer input 0 → IO element 0
///
/// The plugins (LV2 or LADSPA, `--insert`) stay for the run. The low-pass is a node inserted and removed live through `update()`; mute and volume are
/// parameters. Thread: the main thread (the control thread); JACK's thread renders the graph.
@MainActor
final class Monitor {
    let graph = AudioGraph()
    let io = IOUnit()
    let gate = MuteGateUnit()
    let mixer = MultichannelMixerUnit(inputs: 1)
    let filter = LowPassFilterUnit()
    let ioNode: AUNode, gateNode: AUNode, mixerNode: AUNode
    /// The `--insert` plugins, in chain order.
    let plugins: [PluginUnit]
    /// What feeds the low-pass or, without it, the gate: the last plugin, else the IO input.
    let source: (node: AUNode, element: AudioUnitElement)
    /// The low-pass node while it is in the chain.
    private(set) var filterNode: AUNode?
    /// The low-pass cutoff in Hz, kept while the filter is out.
    private(set) var cutoff: Float
    /// Output volume in dB (the mixer's output-scope Volume, ramped by the mixer across one slice).
    private(set) var volumeDB: Float = 0
    static let volumeStep: Float = 3
    static let volumeRange: ClosedRange<Float> = -60...12
    let channels: Int
    /// Level meters (RMS with τ = 0.3 s and a held peak, lock-free reads) on the IO unit's two
    /// sides: element 1 as the graph receives the input, element 0 as it sends the output.
    private(set) var meters: (input: LevelMeter, output: LevelMeter)?
    /// The EBU R128 loudness meter on IO element 0 (what goes to the outputs, as the output level
    /// meter sees it) while the status shows LUFS (`--meter lufs`, `u`, `meter lufs`); nil otherwise.
    private(set) var loudness: LoudnessMeter?
    /// --record: what IO element 0 sends to the outputs, written by the recorder's own thread.
    private(set) var recorder: Recorder?
    private var recordingFailureShown = false
    private var driver: JACKDriver?

    /// Builds the chain, uninitialized (the driver initializes it), with the filter in it when
    /// `options` start with a low-pass, and the `--insert` plugins first.
    /// - Throws: ``AudioUnitError`` from the graph, ``PluginError`` for a plugin that cannot be made.
    init(_ options: Options) throws {
        channels = options.client.channels
        cutoff = options.lowpass ?? 1000
        ioNode = try graph.addNode(io)
        gateNode = try graph.addNode(gate)
        mixerNode = try graph.addNode(mixer)
        try io.setInputEnabled(true)
        gate.isMuted = options.muted
        var tail = (node: ioNode, element: IOUnit.inputElement)
        var made: [PluginUnit] = []
        for info in options.inserts {
            let plugin = try PluginUnit(info, channels: options.client.channels)
            let node = try graph.addNode(plugin)
            try graph.connectNodeInput(tail.node, sourceOutputElement: tail.element, node, destinationInputElement: 0)
            tail = (node, 0)
            made.append(plugin)
        }
        plugins = made
        source = tail
        if options.lowpass != nil {
            let node = try graph.addNode(filter)
            try graph.connectNodeInput(source.node, sourceOutputElement: source.element, node, destinationInputElement: 0)
            try graph.connectNodeInput(node, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
            filterNode = node
        } else {
            try graph.connectNodeInput(source.node, sourceOutputElement: source.element, gateNode, destinationInputElement: 0)
        }
        try graph.connectNodeInput(gateNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
        try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
    }

    /// The server's current rate in Hz (48 000 until the client is open).
    var sampleRate: Int { driver?.sampleRate ?? 48_000 }
    /// Half the server's current rate: the low-pass cutoff's top.
    var nyquist: Float { Float(sampleRate) / 2 }

    /// Fits the chain to the opened client: the mixer's output carries the channel count at the
    /// server's rate, and the cutoff is checked against that rate.
    /// - Throws: ``StartupError``: status 1 for a format the mixer refuses, 2 for a --lowpass
    ///   outside 10…rate/2.
    func configure(for driver: JACKDriver, lowpass: Float?) throws(StartupError) {
        self.driver = driver
        do {
            let format = try StreamFormat.float32(sampleRate: Double(driver.sampleRate), channels: UInt32(channels))
            try mixer.setStreamFormat(format, scope: .output, element: 0)
        } catch {
            throw StartupError(message: "could not set the mixer format: \(error)", status: 1)
        }
        if let hz = lowpass, hz < 10 || hz > nyquist {
            throw StartupError(message: "--lowpass \(hz) Hz is outside 10…\(nyquist) Hz at the server's \(driver.sampleRate) Hz", status: 2)
        }
        cutoff = min(cutoff, nyquist)
        do { try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global) } catch {
            throw StartupError(message: "\(error)", status: 1)
        }
    }

    /// Gives the client's ports the names patchbays show: "Mic L"/"Mic R" and "Out L"/"Out R"
    /// in stereo, "Mic"/"Out" in mono, "Mic 3"/"Out 3" otherwise; under a client name other
    /// than ``defaultClientName`` (--name, or the `graphthru-01` JACK gives a second graphthru)
    /// that name comes first, "graphthru-01 Mic L", so two instances can be told apart. Pretty
    /// names are metadata set by this (control) thread; JACK callbacks never do it.
    func namePorts(of driver: JACKDriver) throws(JACKDriverError) {
        let prefix = driver.clientName == defaultClientName ? "" : driver.clientName + " "
        func names(_ base: String) -> [String] {
            switch channels {
            case 1: return [prefix + base]
            case 2: return ["\(prefix)\(base) L", "\(prefix)\(base) R"]
            default: return (1...channels).map { "\(prefix)\(base) \($0)" }
            }
        }
        for (port, pretty) in zip(driver.inputPortNames, names("Mic")) { try driver.setPrettyName(pretty, forPort: port) }
        for (port, pretty) in zip(driver.outputPortNames, names("Out")) { try driver.setPrettyName(pretty, forPort: port) }
    }

    // MARK: - Live edits

    var isMuted: Bool { gate.isMuted }

    func setMuted(_ muted: Bool) {
        if gate.isMuted != muted { gate.isMuted = muted }
    }

    /// Sets the output volume, clamped to ``volumeRange`` (``volumeDB`` then says what was set).
    /// - Throws: the mixer's refusal (``volumeDB`` keeps the level asked for all the same).
    func setVolume(_ db: Float) throws(AudioUnitError) {
        volumeDB = min(max(db, Monitor.volumeRange.lowerBound), Monitor.volumeRange.upperBound)
        let gain = Float(pow(10, Double(volumeDB) / 20))   // 0 dB is exactly 1: bit-exact again
        try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, gain, scope: .output, element: 0)
    }

    /// Inserts or removes the low-pass between the IO input (or the last plugin) and the gate: a live edit through
    /// `update()`. Unless muted, the gate ramps down first and up again afterwards, so the switch
    /// (filter memory appearing or vanishing) is not heard as a click.
    /// - Throws: the graph's refusal; the chain is then as it was without the filter.
    func setLowpass(_ on: Bool) throws(AudioUnitError) {
        if on == (filterNode != nil) { return }
        let fade = !gate.isMuted
        if fade {
            gate.isMuted = true
            // The 10 ms ramp, plus two periods for the parameter to be read and the ramp to finish.
            let period = driver.map { 2 * 1_000_000 * $0.bufferSize / max($0.sampleRate, 1) } ?? 0
            usleep(UInt32(10_000 + period))
        }
        defer { if fade { gate.isMuted = false } }
        if on {
            let node = try graph.addNode(filter)
            do {
                try graph.disconnectNodeInput(gateNode, inputElement: 0)
                try graph.connectNodeInput(source.node, sourceOutputElement: source.element, node, destinationInputElement: 0)
                try graph.connectNodeInput(node, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
                try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global)
                try graph.update()
                filterNode = node
            } catch {
                // Back to the chain without the filter: drop the node (and its queued
                // connections), feed the gate from the input again.
                try? graph.removeNode(node)
                if !graph.connections.contains(where: { $0.destinationNode == gateNode }) {
                    try? graph.connectNodeInput(source.node, sourceOutputElement: source.element, gateNode, destinationInputElement: 0)
                }
                try? graph.update()
                throw error
            }
        } else if let node = filterNode {
            try graph.removeNode(node)
            try graph.connectNodeInput(source.node, sourceOutputElement: source.element, gateNode, destinationInputElement: 0)
            try graph.update()
            filterNode = nil
        }
    }

    /// After the server's rate changed: a cutoff above the new rate/2 comes down to it (the
    /// filter in the graph has clamped itself already; one out of it is set for when it comes
    /// back). Returns the notice to say, nil when the cutoff fits.
    func clampCutoffToRate() throws(AudioUnitError) -> String? {
        guard cutoff > nyquist else { return nil }
        let was = cutoff
        try setCutoff(nyquist)
        return "the low-pass cutoff \(Int(was.rounded())) Hz is above half the new rate; it is now \(Int(nyquist.rounded())) Hz"
    }

    /// Sets the cutoff (the caller checked 10…``nyquist``), whether or not the filter is in.
    func setCutoff(_ hz: Float) throws(AudioUnitError) {
        cutoff = hz
        try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, hz, scope: .global)
    }

    // MARK: - Watching the running graph

    /// Installs the input and output meters.
    func installMeters() throws(AudioUnitError) {
        meters = (try graph.installLevelMeter(on: ioNode, element: IOUnit.inputElement),
                  try graph.installLevelMeter(on: ioNode, element: IOUnit.outputElement))
    }

    /// Each channel's level on both sides, or nil without meters.
    func meterReadings() -> (inputs: [MeterReading], outputs: [MeterReading])? {
        guard let meters else { return nil }
        func read(_ meter: LevelMeter) -> [MeterReading] {
            // The meter's own channel count: the IO element's format may differ from --channels.
            (0..<min(channels, meter.channelCount)).compactMap { c in
                guard let (average, peak) = try? meter.levels(channel: c) else { return nil }
                return MeterReading(average: average, peak: peak)
            }
        }
        return (read(meters.input), read(meters.output))
    }

    /// Switches the EBU R128 loudness meter on IO element 0 (the outputs) on or off. On, it
    /// measures from the next slice: momentary, short-term and integrated loudness count from
    /// there (switching it off and on again starts the integration again). Nothing changes when
    /// it is already as asked.
    /// - Throws: ``AudioUnitError`` from the graph or libebur128 (a channel count it refuses);
    ///   the meter is then off.
    /// - Thread: the main (control) thread; allocates, starts or stops the meter's tap thread.
    func setLoudness(_ on: Bool) throws(AudioUnitError) {
        if on == (loudness != nil) { return }
        if on {
            loudness = try LoudnessMeter(graph: graph, node: ioNode, element: IOUnit.outputElement)
        } else if let meter = loudness {
            loudness = nil
            try meter.stop()
        }
    }

    /// Starts recording what goes to the outputs (--record).
    func startRecording(path: String, format: RecordingSettings.SampleFormat?) throws(RecorderError) {
        recorder = try Recorder(graph: graph, node: ioNode, element: IOUnit.outputElement, path: path,
                                settings: try RecordingSettings.forPath(path, sampleFormat: format))
    }

    /// A write failure of the recording (disk full), said the first time it is asked after it
    /// happened — the file, libsndfile's reason, the frames the file holds — with the recording
    /// stopped there (its file closed); nil before and after. Audio keeps flowing to the outputs.
    /// - Thread: the main (control) thread; stopping waits for the recorder's writer.
    func newRecordingFailure() -> String? {
        guard let recorder, !recordingFailureShown, recorder.writeError != nil else { return nil }
        recordingFailureShown = true
        // Its error is the one just seen; the count is final once the writer has closed the file.
        try? recorder.stop()
        return writeFailureMessage(recorder)
    }

    /// Whether a recording failure was already said (so stopping need not say it again).
    var recordingFailureWasShown: Bool { recordingFailureShown }

    /// NaN and ±Inf samples replaced with 0 so far: by the graph where they entered it (the
    /// JACK inputs, and before the outputs) and by the `--insert` plugins in their own outputs
    /// (``PluginUnit/nonFiniteSampleCount``). None of them reached an output port or the
    /// recording. Counts samples (a 10-frame burst on two channels is 20).
    var nonFiniteSampleCount: UInt64 {
        plugins.reduce(graph.nonFiniteSampleCount) { $0 &+ $1.nonFiniteSampleCount }
    }
}

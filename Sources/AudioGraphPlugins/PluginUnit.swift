// Plugins: PluginUnit — an LV2 or LADSPA plugin as a graph unit: instances per rate and channel count made on the control thread, connect_port and run on the render thread, control ports as parameters.
import AudioGraph
import CLADSPA
import CLilv
import CLV2Host
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An LV2 or LADSPA plugin as a graph unit (an `AUAudioUnit` hosting a third-party component).
///
/// Elements: one output element whose channels are a multiple of the plugin's audio outputs
/// (a stereo plugin is one 2-channel element; a mono plugin on a stereo element runs one
/// instance per channel); one input element when the plugin has audio inputs (converted to the
/// output's rate and channel count like any unit's), none for a generator.
///
/// Parameters, global scope: the control input ports in port order are IDs 0…n−1 (names from
/// the port name, ranges and defaults from the plugin, clamped, scheduled and ramped as the
/// built-in units' are; toggles and integers rounded at the port, enumerations snapped to the
/// nearest scale point), then the control output ports as read-only parameters n…n+m−1 (a
/// meter's value after the last piece). ``parameterID(symbol:)`` finds an ID by port symbol.
///
/// Rate: instances are made for the rate and channel count the graph runs the unit at, on the
/// control thread when the plan is built (``willRender(sampleRate:channels:maximumFrames:)``);
/// one set is made at 48 kHz when the unit is created so a failing plugin throws there. A
/// channel count that is not a multiple of the plugin's outputs renders silence and counts
/// ``failedRenderCount``.
///
/// Latency: a plugin's latency port (LV2 `lv2:reportsLatency`, LADSPA output "latency") is read
/// once after instantiation (one silent run of a separate instance) and reported as the unit's
/// latency, so the graph compensates parallel paths and reports it.
///
/// LV2 host features (Docs/Plugins.md, "Host features"): every instance gets log:log (messages
/// counted and kept per type: ``logCount(_:)``, ``latestLogMessage(_:)``); a plugin using the
/// worker extension gets a worker thread per instance (``workerCounts``); a plugin with the
/// state extension can save and restore its own state (``saveState()``, ``restoreState(_:)``).
///
/// Thread: create, set formats and read ports on a control thread; parameters from any thread
/// (lock-free); the render thread only connects ports, delivers worker responses, runs, and
/// replaces non-finite output samples by 0 (counted in ``nonFiniteSampleCount``).
/// SAFETY (`@unchecked Sendable`): as ``RenderCallbackUnit``; the host's sets are made and freed
/// on the control thread, the render thread reads the current one through an atomic.
public final class PluginUnit: RenderCallbackUnit, @unchecked Sendable {
    /// The plugin hosted.
    public let info: PluginInfo
    let host: PluginHost

    /// Hosts the plugin `info` describes.
    /// - Parameters:
    ///   - info: from ``LV2/find(uri:)``, ``LADSPA/find(label:library:)`` or a scan.
    ///   - channels: the output element's channel count; nil for the plugin's audio outputs, or 2
    ///     (two instances) for a mono plugin. Must be a positive multiple of the outputs, ≤ 64.
    /// - Throws: ``PluginError/unsupportedPorts(plugin:reason:)`` for a plugin without audio
    ///   outputs, with more audio inputs than outputs, or with a required port that is neither
    ///   audio nor control; ``PluginError/channelCount(_:pluginOutputs:)``;
    ///   ``PluginError/missingFeature(plugin:feature:)``; ``PluginError/instantiateFailed(_:)``.
    /// - Thread: control thread; loads and instantiates the plugin.
    public init(_ info: PluginInfo, channels: Int? = nil) throws(PluginError) {
        if let problem = info.hostingProblem { throw problem }
        let outs = info.audioOutputs.count, ins = info.audioInputs.count
        let channelCount = channels ?? (outs == 1 ? 2 : outs)
        guard channelCount > 0, channelCount <= 64, channelCount % outs == 0 else { throw .channelCount(channelCount, pluginOutputs: outs) }
        self.info = info
        let host = try PluginHost(info)
        try host.prepare(sampleRate: 48_000, channels: channelCount, maximumFrames: 8192)
        self.host = host
        let parameters = host.parameterInfos
        // Valid by construction (finite, ordered, IDs 0…n−1), so the base initializer does not throw.
        // The format follows the graph's rate (instances are made for it when the plan is built).
        try! super.init(inputs: ins == 0 ? 0 : 1, channels: channelCount, parameters: parameters) { context in host.render(context) }
        if let frames = host.latencyFrames { try? setLatency(min(10, Double(frames) / 48_000)) }
    }

    /// Hosts the installed LV2 plugin `uri`.
    /// - Throws: ``PluginError/unknownURI(_:nearMatches:)``, or as ``init(_:channels:)``.
    /// - Thread: control thread.
    public convenience init(lv2 uri: String, channels: Int? = nil) throws(PluginError) {
        try self.init(try LV2.find(uri: uri), channels: channels)
    }

    /// Hosts the LADSPA plugin `label` (or unique ID written as a number) from `library` (a
    /// path, or a file name in `LADSPA_PATH`; every library when nil).
    /// - Throws: ``PluginError/unknownLabel(_:nearMatches:)``, ``PluginError/notALADSPALibrary(_:reason:)``,
    ///   or as ``init(_:channels:)``.
    /// - Thread: control thread.
    public convenience init(ladspa label: String, library: String? = nil, channels: Int? = nil) throws(PluginError) {
        try self.init(try LADSPA.find(label: label, library: library), channels: channels)
    }

    /// The parameter ID of the control port `symbol` (inputs first, then outputs).
    /// - Throws: ``PluginError/unknownPortSymbol(_:valid:)`` listing the symbols there are.
    /// - Thread: any.
    public func parameterID(symbol: String) throws(PluginError) -> AudioUnitParameterID {
        if let index = host.controls.firstIndex(where: { $0.symbol == symbol }) { return AudioUnitParameterID(index) }
        throw .unknownPortSymbol(symbol, valid: host.controls.map(\.symbol))
    }

    /// The port behind parameter `id`, or nil for an unknown ID. Thread: any.
    public func port(forParameter id: AudioUnitParameterID) -> PluginPort? {
        Int(id) < host.controls.count ? host.controls[Int(id)] : nil
    }

    /// The named values of parameter `id` (its port's scale points): the
    /// `kAudioUnitProperty_ParameterValueStrings` analogue. Empty when it has none.
    /// Thread: any.
    public func valueStrings(_ id: AudioUnitParameterID) -> [PluginPort.ScalePoint] {
        port(forParameter: id)?.scalePoints ?? []
    }

    /// Output samples the plugin wrote as NaN or ±Inf, replaced by 0 before they went on. Thread: any.
    public var nonFiniteSampleCount: UInt64 { host.nonFinite.load(ordering: .relaxed) }

    /// The instances currently rendering, or 0 before the first plan at a new rate. Thread: control thread.
    public var instanceCount: Int { host.currentSet?.state.pointee.instanceCount ?? 0 }

    // MARK: - log:log

    /// The LV2 log message types (<https://lv2plug.in/ns/ext/log>).
    public enum LogType: Int, CaseIterable, Sendable {
        case error, warning, note, trace
    }

    /// How many messages of `type` the plugin's instances logged through log:log (every
    /// instance of this unit shares one log). 0 for LADSPA. Thread: any.
    public func logCount(_ type: LogType) -> UInt64 {
        guard let log = host.log else { return 0 }
        return ag_lv2_log_count(log, Int32(type.rawValue))
    }

    /// The latest message of `type` (at most 255 bytes, trailing newline removed), or nil when
    /// there is none. Error and Warning messages also went to standard error as
    /// `lv2 <URI>: error: <message>`. Thread: any.
    public func latestLogMessage(_ type: LogType) -> String? {
        guard let log = host.log else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(AG_LOG_TEXT))
        guard ag_lv2_log_latest(log, Int32(type.rawValue), &buffer, buffer.count) != 0 else { return nil }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Worker

    /// What the worker extension did for this unit's instances (summed over them, every rate
    /// made so far).
    public struct WorkerCounts: Sendable, Equatable {
        /// Requests the plugin's schedule_work queued.
        public var scheduled: UInt64 = 0
        /// Requests refused (the ring was full, or the plugin gave no worker interface).
        public var refused: UInt64 = 0
        /// work() calls that succeeded.
        public var worked: UInt64 = 0
        /// work() calls that returned an error (nothing else happens: the plugin's run goes on).
        public var failed: UInt64 = 0
        /// Responses delivered to work_response() before a run.
        public var responses: UInt64 = 0
        /// Responses that did not fit the response ring (respond() was told no space).
        public var lost: UInt64 = 0
    }

    /// Whether the instances have workers (the plugin uses the LV2 worker extension). Thread: any.
    public var hasWorker: Bool { LV2.wantsWorker(info) }

    /// The worker counters, or nil when the plugin has no worker. Thread: control thread.
    public var workerCounts: WorkerCounts? {
        guard hasWorker else { return nil }
        var total = WorkerCounts()
        for worker in host.allWorkers {
            let c = ag_lv2_worker_get_counts(worker)
            total.scheduled += c.scheduled; total.refused += c.refused; total.worked += c.worked
            total.failed += c.failed; total.responses += c.responses; total.lost += c.lost
        }
        return total
    }

    // MARK: - State

    /// Whether the plugin offers the LV2 state extension (`state:interface`). Thread: control thread.
    public var hasState: Bool { host.hasStateInterface }

    /// The plugin's own state (LV2 state extension), besides its parameters: what its save()
    /// stores, read from the rendering instances (instance 0 when a mono plugin runs per
    /// channel). May be called while the graph renders.
    /// - Throws: ``PluginError/noStateInterface(_:)`` (LADSPA, or an LV2 plugin without it),
    ///   ``PluginError/stateValueNotPortable(plugin:key:)`` for a value that is not plain
    ///   portable data, ``PluginError/stateRejected(plugin:status:)`` when save() fails.
    /// - Thread: control thread.
    public func saveState() throws(PluginError) -> PluginState { try host.saveState() }

    /// Restores `state` (from ``saveState()``, here or in another unit of the same plugin):
    /// fresh instances are made, given the state, and replace the rendering ones at the next
    /// render piece (restore() may not run concurrently with run(); the plugin's filters
    /// and delay lines start from silence, as after a preset load). Units made later at
    /// another rate get it too. Parameters are unchanged.
    /// - Throws: ``PluginError/noStateInterface(_:)``, ``PluginError/invalidStateValue(key:reason:)``,
    ///   ``PluginError/stateRejected(plugin:status:)`` when the plugin's restore() refuses
    ///   (a wrong type, a missing key); ``PluginError/instantiateFailed(_:)``. On a throw
    ///   nothing changed: the old instances keep rendering.
    /// - Thread: control thread.
    public func restoreState(_ state: PluginState) throws(PluginError) { try host.restoreState(state) }

    /// Makes instances for the plan's rate and channel count (see the type's documentation);
    /// a plugin that fails to instantiate at the new rate leaves the old ones, and the unit
    /// renders silence (counted) until a rate it can run at.
    /// Thread: control thread (called by the graph when it builds a plan).
    public override func willRender(sampleRate: Double, channels: Int, maximumFrames: Int) {
        try? host.prepare(sampleRate: sampleRate, channels: channels, maximumFrames: maximumFrames)
    }
}

/// What the render thread runs: one set of instances for one rate and channel count. Trivial;
/// lives in memory a ``PluginHost/InstanceSet`` owns.
struct PluginRenderSet {
    typealias LADSPAConnect = @convention(c) (LADSPA_Handle?, UInt, UnsafeMutablePointer<LADSPA_Data>?) -> Void
    typealias LADSPARun = @convention(c) (LADSPA_Handle?, UInt) -> Void
    typealias LV2Connect = @convention(c) (LV2_Handle?, UInt32, UnsafeMutableRawPointer?) -> Void
    typealias LV2Run = @convention(c) (LV2_Handle?, UInt32) -> Void

    var sampleRate: Double
    var channels: Int
    var instanceCount: Int
    var ladspaConnect: LADSPAConnect?
    var ladspaRun: LADSPARun?
    var lv2Connect: LV2Connect?
    var lv2Run: LV2Run?
    var handles: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// Per instance, its worker (CLV2Host) or nil; nil when the plugin has none.
    var workers: UnsafeMutablePointer<OpaquePointer?>?
    /// `[instance][port]` control cells.
    var cells: UnsafeMutablePointer<Float>
    var portCount: Int
    var audioIn: UnsafeMutablePointer<UInt32>
    var audioInCount: Int
    var audioOut: UnsafeMutablePointer<UInt32>
    var audioOutCount: Int
    /// Control input port indices (parameter IDs 0…), then control outputs.
    var controls: UnsafeMutablePointer<UInt32>
    var controlInCount: Int
    var controlOutCount: Int
    /// Per control input: 0 plain, 1 toggle, 2 integer, 3 enumeration.
    var controlKinds: UnsafeMutablePointer<UInt8>
    /// Per control input with scale points: the sorted values, `pointOffsets[i]..<pointOffsets[i+1]`.
    var points: UnsafeMutablePointer<Float>
    var pointOffsets: UnsafeMutablePointer<Int>
    /// Silence for unconnected inputs, `capacity` frames.
    var zeros: UnsafeMutablePointer<Float>
    var capacity: Int

    @_noLocks @inline(__always)
    func connect(_ instance: Int, _ port: UInt32, _ data: UnsafeMutablePointer<Float>?) {
        if let c = ladspaConnect { _unsafePerformance { c(handles[instance], UInt(port), data) } }
        else if let c = lv2Connect { _unsafePerformance { c(handles[instance], port, UnsafeMutableRawPointer(data)) } }
    }

    @_noLocks @inline(__always)
    func run(_ instance: Int, _ frames: Int) {
        if let r = ladspaRun { _unsafePerformance { r(handles[instance], UInt(frames)) } }
        else if let r = lv2Run {
            // Worker responses arrive before the run; end_run() follows every run (worker.h).
            if let w = workers?[instance] { _unsafePerformance { ag_lv2_worker_deliver(w) } }
            _unsafePerformance { r(handles[instance], UInt32(frames)) }
            if let w = workers?[instance] { _unsafePerformance { ag_lv2_worker_end_run(w) } }
        }
    }
}

/// The control side of a ``PluginUnit``: its sets of instances and the render entry point.
/// SAFETY (`@unchecked Sendable`): `sets` is changed only on the control thread; the render
/// thread reads `current` (an atomic) and the set it points at, which stays alive while the host does.
final class PluginHost: @unchecked Sendable {
    let info: PluginInfo
    let controls: [PluginPort]
    let controlInCount: Int
    let parameterInfos: [AudioUnitParameterInfo]
    let ladspaDescriptor: UnsafePointer<LADSPA_Descriptor>?
    let nonFinite = Atomic<UInt64>(0)
    let current = Atomic<UInt>(0)
    private(set) var sets: [InstanceSet] = []
    /// Sets replaced by a state restore: kept until the host goes (the render thread may still
    /// be in one when it is replaced).
    private var retired: [InstanceSet] = []
    private(set) var latencyFrames: Float?
    /// The log:log every LV2 instance of this host is given (CLV2Host); nil for LADSPA.
    let log: OpaquePointer?
    /// The state last restored (``restoreState(_:)``), given to every set made after it.
    private(set) var restoredState: PluginState?
    var currentSet: InstanceSet? { sets.first { UInt(bitPattern: $0.state) == current.load(ordering: .acquiring) } }

    init(_ info: PluginInfo) throws(PluginError) {
        self.info = info
        ladspaDescriptor = info.standard == .ladspa ? try LADSPA.descriptor(info) : nil
        controls = info.controlInputs + info.controlOutputs
        controlInCount = info.controlInputs.count
        var infos: [AudioUnitParameterInfo] = []
        for (i, port) in controls.enumerated() {
            var lo = port.minimum ?? (port.isToggle ? 0 : -1e9), hi = port.maximum ?? (port.isToggle ? 1 : 1e9)
            if !lo.isFinite { lo = -1e9 }
            if !hi.isFinite { hi = 1e9 }
            if hi < lo { swap(&lo, &hi) }
            var def = port.defaultValue ?? (lo <= 0 && 0 <= hi ? 0 : lo)
            if !def.isFinite { def = lo }
            def = min(max(def, lo), hi)
            infos.append(AudioUnitParameterInfo(id: AudioUnitParameterID(i), name: port.name, scope: .global,
                                                unit: port.isEnumeration && !port.scalePoints.isEmpty ? .indexed : port.unit,
                                                minValue: lo, maxValue: hi, defaultValue: def,
                                                clampsToRange: port.minimum != nil || port.maximum != nil,
                                                isReadOnly: i >= info.controlInputs.count))
        }
        parameterInfos = infos
        log = info.standard == .lv2 ? LV2.makeLog(info.identifier) : nil
    }

    deinit {
        // Instances first (they may log while deactivated and cleaned up), then the log.
        sets.removeAll()
        retired.removeAll()
        if let log { ag_lv2_log_free(log) }
    }

    /// Makes (or reuses) the set for `sampleRate` × `channels` and makes it current.
    func prepare(sampleRate: Double, channels: Int, maximumFrames: Int) throws(PluginError) {
        if let existing = sets.first(where: { $0.state.pointee.sampleRate == sampleRate && $0.state.pointee.channels == channels
                                               && $0.state.pointee.capacity >= maximumFrames }) {
            current.store(UInt(bitPattern: existing.state), ordering: .releasing)
            return
        }
        let outs = info.audioOutputs.count
        guard channels > 0, channels % outs == 0 else { throw .channelCount(channels, pluginOutputs: outs) }
        let set = try InstanceSet(self, sampleRate: sampleRate, instances: channels / outs, channels: channels, capacity: maximumFrames)
        if let restoredState { try set.restore(restoredState, host: self) }
        sets.append(set)
        current.store(UInt(bitPattern: set.state), ordering: .releasing)
        if latencyFrames == nil, info.controlOutputs.contains(where: \.reportsLatency) {
            // A separate instance, so the rendering one's state starts as the reference host's does.
            let probe = try InstanceSet(self, sampleRate: sampleRate, instances: 1, channels: outs, capacity: 64)
            latencyFrames = probe.probeLatency()
        }
    }

    /// Every worker of every set (retired ones too). Thread: control thread.
    var allWorkers: [OpaquePointer] { (sets + retired).flatMap { $0.workers } }

    /// Makes `set` the only (and current) set, retiring the others, and remembers `state` for
    /// sets made later. Thread: control thread.
    func replaceSets(with set: InstanceSet, state: PluginState) {
        retired += sets
        sets = [set]
        restoredState = state
        current.store(UInt(bitPattern: set.state), ordering: .releasing)
    }

    /// One render call (or piece of one): control cells from the parameters, every instance
    /// run in chunks of at most the set's capacity, non-finite output replaced, control
    /// outputs published.
    @_noLocks
    func render(_ context: ProcessContext) -> Int32 {
        let address = current.load(ordering: .acquiring)
        guard let setPointer = UnsafeMutablePointer<PluginRenderSet>(bitPattern: address) else { return 1 }
        let set = setPointer.pointee
        let output = context.output
        guard set.sampleRate == context.sampleRate, set.channels == output.channelCount else { return 1 }
        // Control inputs: the parameter values in force for this piece, shaped as the port wants.
        for p in 0..<set.controlInCount {
            var value = context.parameter(AudioUnitParameterID(p))
            switch set.controlKinds[p] {
            case 1: value = value > 0 ? 1 : 0
            case 2: value = PluginRealTime.rintf(value)
            case 3:
                let lo = set.pointOffsets[p], hi = set.pointOffsets[p + 1]
                if hi > lo {
                    var best = set.points[lo]
                    for k in lo..<hi where abs(set.points[k] - value) < abs(best - value) { best = set.points[k] }
                    value = best
                }
            default: break
            }
            let port = Int(set.controls[p])
            for i in 0..<set.instanceCount { set.cells[i * set.portCount + port] = value }
        }
        let input = context.input(0)
        let frames = context.frameCount
        var done = 0
        while done < frames {
            let n = min(set.capacity, frames - done)
            for i in 0..<set.instanceCount {
                for j in 0..<set.audioInCount {
                    let channel = i * set.audioOutCount + j
                    if let input, channel < input.channelCount {
                        set.connect(i, set.audioIn[j], input.channelPointers[channel] + done)
                    } else {
                        set.connect(i, set.audioIn[j], set.zeros)
                    }
                }
                for j in 0..<set.audioOutCount {
                    set.connect(i, set.audioOut[j], output.channelPointers[i * set.audioOutCount + j] + done)
                }
                set.run(i, n)
            }
            done += n
        }
        // NaN and Inf never leave the unit.
        var bad: UInt64 = 0
        for c in 0..<output.channelCount {
            let samples = output.channelPointers[c]
            for f in 0..<frames where !samples[f].isFinite {
                samples[f] = 0
                bad += 1
            }
        }
        if bad > 0 { nonFinite.add(bad, ordering: .relaxed) }
        for k in 0..<set.controlOutCount {
            let port = Int(set.controls[set.controlInCount + k])
            context.publishParameter(AudioUnitParameterID(set.controlInCount + k), set.cells[port])
        }
        return 0
    }

    /// Instances of one plugin for one rate and channel count, every port connected to its cell
    /// and activated. Freed (deactivated, cleaned up) on the control thread with the host.
    final class InstanceSet {
        let state: UnsafeMutablePointer<PluginRenderSet>
        private(set) var lv2Instances: [UnsafeMutablePointer<LilvInstance>] = []
        private var lv2Features: [LV2.Features] = []
        private let ladspa: UnsafePointer<LADSPA_Descriptor>?
        private let controlOutputs: [(id: Int, port: PluginPort)]

        init(_ host: PluginHost, sampleRate: Double, instances: Int, channels: Int, capacity: Int) throws(PluginError) {
            let info = host.info
            ladspa = host.ladspaDescriptor
            controlOutputs = Array(host.controls.enumerated().dropFirst(host.controlInCount).map { ($0.offset, $0.element) })
            let portCount = info.ports.count
            let handles = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: instances)
            handles.initialize(repeating: nil, count: instances)
            var made = 0
            var lv2: [UnsafeMutablePointer<LilvInstance>] = []
            var features: [LV2.Features] = []
            func undo() {
                for f in features { f.stopWorker() }
                for i in 0..<made {
                    if let d = host.ladspaDescriptor { d.pointee.cleanup?(handles[i]) }
                }
                for instance in lv2 { LV2.free(instance) }
                handles.deallocate()
            }
            for _ in 0..<instances {
                if let d = host.ladspaDescriptor {
                    guard let handle = d.pointee.instantiate(d, UInt(sampleRate.rounded())) else {
                        undo()
                        throw .instantiateFailed(info.identifier)
                    }
                    handles[made] = handle
                } else {
                    do throws(PluginError) {
                        let (instance, f) = try LV2.instantiate(info, sampleRate: sampleRate, maximumFrames: capacity, log: host.log)
                        lv2.append(instance)
                        features.append(f)
                        handles[made] = instance.pointee.lv2_handle
                    } catch {
                        undo()
                        throw error
                    }
                }
                made += 1
            }
            lv2Instances = lv2
            lv2Features = features
            var workers: UnsafeMutablePointer<OpaquePointer?>?
            if features.contains(where: { $0.worker != nil }) {
                workers = .allocate(capacity: instances)
                for (i, f) in features.enumerated() { workers![i] = f.worker }
            }
            let cells = UnsafeMutablePointer<Float>.allocate(capacity: max(1, instances * portCount))
            cells.initialize(repeating: 0, count: max(1, instances * portCount))
            func indices(_ ports: [PluginPort]) -> UnsafeMutablePointer<UInt32> {
                let p = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, ports.count))
                for (i, port) in ports.enumerated() { p[i] = port.index }
                return p
            }
            let kinds = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, host.controlInCount))
            let offsets = UnsafeMutablePointer<Int>.allocate(capacity: host.controlInCount + 1)
            var allPoints: [Float] = []
            offsets[0] = 0
            for (i, port) in info.controlInputs.enumerated() {
                kinds[i] = port.isToggle ? 1 : port.isInteger ? 2 : (port.isEnumeration && !port.scalePoints.isEmpty) ? 3 : 0
                if kinds[i] == 3 { allPoints += port.scalePoints.map(\.value) }
                offsets[i + 1] = allPoints.count
            }
            let points = UnsafeMutablePointer<Float>.allocate(capacity: max(1, allPoints.count))
            for (i, v) in allPoints.enumerated() { points[i] = v }
            let zeros = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
            zeros.initialize(repeating: 0, count: capacity)
            state = .allocate(capacity: 1)
            state.initialize(to: PluginRenderSet(
                sampleRate: sampleRate, channels: channels, instanceCount: instances,
                ladspaConnect: host.ladspaDescriptor?.pointee.connect_port, ladspaRun: host.ladspaDescriptor?.pointee.run,
                lv2Connect: lv2.first?.pointee.lv2_descriptor.pointee.connect_port, lv2Run: lv2.first?.pointee.lv2_descriptor.pointee.run,
                handles: handles, workers: workers, cells: cells, portCount: portCount,
                audioIn: indices(info.audioInputs), audioInCount: info.audioInputs.count,
                audioOut: indices(info.audioOutputs), audioOutCount: info.audioOutputs.count,
                controls: indices(host.controls), controlInCount: host.controlInCount, controlOutCount: info.controlOutputs.count,
                controlKinds: kinds, points: points, pointOffsets: offsets, zeros: zeros, capacity: capacity))
            // Every control port to its cell, every audio port to silence until the first run
            // connects it; controls at their defaults; then activate.
            let s = state.pointee
            for i in 0..<instances {
                for (id, port) in host.controls.enumerated() {
                    let cell = cells + i * portCount + Int(port.index)
                    cell.pointee = host.parameterInfos[id].defaultValue
                    s.connect(i, port.index, cell)
                }
                // Audio to silence; an optional port of another kind (atom, CV) to nothing, as
                // lv2:connectionOptional allows.
                for port in info.ports where port.kind != .control {
                    s.connect(i, port.index, port.kind == .audio ? zeros : nil)
                }
                if let d = host.ladspaDescriptor { d.pointee.activate?(handles[i]) }
            }
            for instance in lv2 { lilv_instance_activate(instance) }
        }

        /// The instances' workers.
        var workers: [OpaquePointer] { lv2Features.compactMap(\.worker) }

        /// Runs instance 0 for 1 frame of silence and reads its latency port (frames).
        func probeLatency() -> Float? {
            let s = state.pointee
            guard let (_, port) = controlOutputs.first(where: { $0.port.reportsLatency }) else { return nil }
            let scratch = UnsafeMutablePointer<Float>.allocate(capacity: s.capacity * max(1, s.audioOutCount))
            defer { scratch.deallocate() }
            for j in 0..<s.audioInCount { s.connect(0, s.audioIn[j], s.zeros) }
            for j in 0..<s.audioOutCount { s.connect(0, s.audioOut[j], scratch + j * s.capacity) }
            s.run(0, 1)
            let value = s.cells[Int(port.index)]
            return value.isFinite && value >= 0 ? value : nil
        }

        deinit {
            let s = state.pointee
            for i in 0..<s.instanceCount {
                if let d = ladspa {
                    d.pointee.deactivate?(s.handles[i])
                    d.pointee.cleanup?(s.handles[i])
                }
            }
            // Workers first: work() may be running on an instance.
            for f in lv2Features { f.stopWorker() }
            for instance in lv2Instances {
                lilv_instance_deactivate(instance)
                LV2.free(instance)
            }
            lv2Features.removeAll()
            s.workers?.deallocate()
            s.handles.deallocate(); s.cells.deallocate(); s.audioIn.deallocate(); s.audioOut.deallocate()
            s.controls.deallocate(); s.controlKinds.deallocate(); s.points.deallocate(); s.pointOffsets.deallocate()
            s.zeros.deallocate()
            state.deallocate()
        }
    }
}

/// The plugin module's render-path escapes from the `@_noLocks` checks, besides
/// ``PluginRenderSet``'s `connect` and `run` (the plugin's own `connect_port` and `run`), as
/// the RealTimeRules article lists them. Thread: the render thread.
enum PluginRealTime {
    /// `rintf` from libm (pure arithmetic): values of integer ports.
    @_noLocks @inline(__always)
    static func rintf(_ x: Float) -> Float { _unsafePerformance { Glibc.rintf(x) } }
}

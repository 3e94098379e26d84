// Units: RenderCallbackUnit, your own Swift processing (the internalRenderBlock analogue).
import Synchronization

/// What a ``RenderCallbackUnit``'s process callback gets for one piece of a slice. A view,
/// valid only during the call.
/// SAFETY (`@unchecked Sendable`): pointers valid for one process call, on the render thread that makes it.
public struct ProcessContext: @unchecked Sendable {
    /// The first frame's time, in frames at the unit's rate since the graph started.
    public let timeStamp: AudioTimeStamp
    /// Frames to process, 0…MaximumFramesPerSlice (fewer than a slice when scheduled
    /// parameter changes split it: each piece sees the parameter values in force during it).
    public let frameCount: Int
    /// The unit's sample rate in Hz (its output format's).
    public let sampleRate: Double
    /// Input elements, connected or not.
    public let inputCount: Int
    /// What the unit writes: its output format's channels, `frameCount` frames each. Zeroed
    /// before the call.
    public let output: AudioBufferList

    let inputLists: UnsafePointer<AudioBufferList>
    let inputConnected: UnsafePointer<Bool>
    let parameterValues: UnsafeMutablePointer<Atomic<UInt32>>
    let parameterCount: Int

    /// Input element `element`'s audio in the unit's processing format (the output's rate and
    /// channel count; the graph converts), or nil when nothing feeds it.
    @_noLocks
    public func input(_ element: Int) -> AudioBufferList? {
        guard element >= 0, element < inputCount, inputConnected[element] else { return nil }
        return inputLists[element]
    }

    /// The current value of the parameter with ID `id` (IDs are 0…count−1, in the order the unit
    /// declared them), with scheduled ramps applied; 0 for an unknown ID.
    @_noLocks
    public func parameter(_ id: AudioUnitParameterID) -> Float {
        guard Int(id) < parameterCount else { return 0 }
        return loadParameter(parameterValues, Int(id))
    }

    /// Publishes the value of a read-only parameter (``AudioUnitParameterInfo/isReadOnly``), e.g.
    /// a hosted plugin's control output (a meter): readers on any thread see it through
    /// ``AudioUnit/parameter(_:scope:element:)``. Ignored for an unknown ID. Writable parameters
    /// must not be published (the application's values and ramps own them).
    /// Thread: the render thread, inside the process callback. Lock-free, no allocation.
    @_noLocks
    public func publishParameter(_ id: AudioUnitParameterID, _ value: Float) {
        guard Int(id) < parameterCount else { return }
        parameterValues[Int(id)].store(value.bitPattern, ordering: .relaxed)
    }
}

/// Your own processing in Swift: the callback is called on the render thread for every slice
/// (or piece of one) with the unit's inputs, converted to its processing format, and its output
/// to fill. The `AUAudioUnit.internalRenderBlock` analogue.
///
/// The callback must follow the real-time rules (<doc:RealTimeRules>): no allocation, locks,
/// I/O, waiting, or touching class instances it did not capture beforehand; read parameters
/// through the context. Return 0; any other value renders silence for that piece and counts a
/// failed render (``failedRenderCount``).
///
/// Formats: the output is Float32 non-interleaved, any rate and channel count (default 48 kHz
/// stereo, following the graph's rate until set); every input takes any format and is converted
/// to the output's rate and channel count. Parameters: global scope, IDs 0…count−1, with the
/// same clamping, scheduling and ramps as the built-in units'.
/// Thread: create and configure on a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit; the process closure is @Sendable and the failure counter an atomic.
///
/// Hosting (core hook for other modules, e.g. AudioGraphPlugins): the class is `open` so a
/// module can subclass it to host foreign processing (an LV2 or LADSPA plugin), and
/// ``willRender(sampleRate:channels:maximumFrames:)`` tells a subclass, on the control thread,
/// the rate and channel count the next plan runs it at, so it can (re)instantiate off the
/// render thread.
open class RenderCallbackUnit: AudioUnit, @unchecked Sendable {
    /// Called on the render thread; see the type's documentation.
    public typealias Process = @Sendable (_ context: ProcessContext) -> Int32

    let process: Process
    let failures = Atomic<UInt64>(0)

    /// Creates a unit.
    /// - Parameters:
    ///   - inputs: input elements, 0…64.
    ///   - parameters: the unit's parameters, global scope, with IDs 0…count−1 in order.
    ///   - process: the processing, called on the render thread.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for an input count out of bounds;
    ///   ``AudioUnitError/invalidParameter`` for parameters that are not global, not numbered
    ///   0…count−1 in order, or whose range or default is not finite and ordered.
    public convenience init(inputs: Int = 1, parameters: [AudioUnitParameterInfo] = [], process: @escaping Process) throws(AudioUnitError) {
        try self.init(inputs: inputs, channels: 2, parameters: parameters, process: process)
    }

    /// Creates a unit whose formats start with `channels` channels (at 48 kHz, following the
    /// graph's rate until set), e.g. a hosted mono plugin's one channel.
    /// - Parameters:
    ///   - inputs: input elements, 0…64.
    ///   - channels: the output's (and each input's) channel count, 1…64.
    ///   - parameters: as for ``init(inputs:parameters:process:)``.
    ///   - process: the processing, called on the render thread.
    /// - Throws: as ``init(inputs:parameters:process:)``; ``AudioUnitError/invalidPropertyValue``
    ///   for a channel count out of bounds.
    public init(inputs: Int, channels: Int, parameters: [AudioUnitParameterInfo] = [], process: @escaping Process) throws(AudioUnitError) {
        guard (0...64).contains(inputs), (1...64).contains(channels) else { throw .invalidPropertyValue }
        for (index, info) in parameters.enumerated() {
            guard info.id == AudioUnitParameterID(index), info.scope == .global,
                  info.minValue.isFinite, info.maxValue.isFinite, info.defaultValue.isFinite,
                  info.minValue <= info.defaultValue, info.defaultValue <= info.maxValue
            else { throw .invalidParameter }
        }
        self.process = process
        let format = try! StreamFormat.float32(sampleRate: 48_000, channels: UInt32(channels))
        super.init(type: .renderCallback, inputFormats: Array(repeating: format, count: inputs), outputFormats: [format],
                   parameterDefinitions: parameters)
    }

    /// Creates a unit that owns a state value and hands it to every call mutably: the typed
    /// way to keep an LFO phase, a filter's memory or a counter between slices, with no pointer
    /// laundered through an integer. The state lives as long as the unit; only the render
    /// thread touches it (share values with other threads through an `Atomic` instead; see
    /// <doc:RealTimeRules>).
    ///
    /// ```swift
    /// struct Tremolo { var phase = 0.0 }
    /// let unit = try RenderCallbackUnit(inputs: 1, state: Tremolo()) { tremolo, context in
    ///     tremolo.phase += 5 * Double(context.frameCount) / context.sampleRate
    ///     return 0
    /// }
    /// ```
    /// - Parameters:
    ///   - inputs: input elements, 0…64.
    ///   - parameters: as for ``init(inputs:parameters:process:)``.
    ///   - state: the initial state. `BitwiseCopyable` (no class references), so changing it on
    ///     the render thread never retains, releases or frees.
    ///   - process: the processing, called on the render thread with the unit's state.
    /// - Throws: as ``init(inputs:parameters:process:)``.
    public convenience init<State: BitwiseCopyable>(inputs: Int = 1, parameters: [AudioUnitParameterInfo] = [], state: State,
                                                    process: @escaping @Sendable (_ state: inout State, _ context: ProcessContext) -> Int32) throws(AudioUnitError) {
        let cell = RenderState(state)
        try self.init(inputs: inputs, parameters: parameters) { context in process(&cell.value, context) }
    }

    /// Pieces whose callback returned non-zero (rendered as silence). Thread: any.
    public var failedRenderCount: UInt64 { failures.load(ordering: .relaxed) }

    /// Seconds your processing delays the signal (a look-ahead, a block): the AUv3 `latency`.
    /// The graph counts it on every path through the unit, delays parallel paths that meet this
    /// one so they arrive aligned (latency compensation), and reports it in the Latency property,
    /// ``AudioGraph/renderLatency`` and the JACK ports' latency ranges. Default 0.
    /// Thread: control thread.
    public private(set) var latency: Double = 0

    /// Sets ``latency``; it takes effect with the next ``AudioGraph/initialize()`` or
    /// ``AudioGraph/update()`` (which re-plans the compensation; paths whose delay did not
    /// change keep playing without a gap).
    /// - Parameter seconds: 0…10, finite.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a value out of bounds (nothing changes).
    /// - Thread: control thread.
    public func setLatency(_ seconds: Double) throws(AudioUnitError) {
        guard seconds.isFinite, (0...10).contains(seconds) else { throw .invalidPropertyValue }
        latency = seconds
    }

    override var processingLatency: Double { latency }

    override var kernelKind: KernelKind { .custom }

    /// Called on the control thread each time the graph builds a render plan with this unit
    /// (initialize, update, format changes), before the plan can reach the render thread: the
    /// rate (Hz) and output channel count the plan runs the unit at, and an upper bound on the
    /// frames of one process call is not promised: `maximumFrames` (8 × MaximumFramesPerSlice,
    /// at least 4096) is a capacity hint, and a host must split longer calls itself. A subclass that hosts a plugin instantiates for a new rate here; the default
    /// does nothing. Must not block on the render thread; may allocate.
    /// Thread: control thread.
    open func willRender(sampleRate: Double, channels: Int, maximumFrames: Int) {}

    override func kernelStateSize(inputChannels: [Int], outputChannels: Int, sampleRate: Double) -> Int {
        willRender(sampleRate: sampleRate, channels: outputChannels, maximumFrames: max(4096, 8 * Int(maximumFramesPerSlice)))
        return super.kernelStateSize(inputChannels: inputChannels, outputChannels: outputChannels, sampleRate: sampleRate)
    }
}

/// A custom unit's render-side view: the callback box and scratch for the context. Trivial.
struct CustomKernel {
    var box: UnsafeMutableRawPointer          // unretained RenderCallbackUnit
    var lists: UnsafeMutablePointer<AudioBufferList>
    var connected: UnsafeMutablePointer<Bool>
    /// `[inputCount + 1][maxChannels]` channel pointers for pieces that start inside a slice.
    var pointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var maxChannels: Int
    var parameterCount: Int
    /// The slice's first frame time at the unit's rate (set before the step runs).
    var sliceTime: Double

    /// Renders one piece by calling the unit's process callback with a ``ProcessContext`` over
    /// it (outputs zeroed first, and again if the callback fails). Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let offset = piece.offset, frames = piece.frames
        guard let kernel = step.pointee.custom, frames > 0 else { return }
        let s = step.pointee
        let k = kernel.pointee
        for i in 0..<s.inputCount {
            let input = s.inputs[i]
            k.connected[i] = input.channels != nil
            let base = k.pointers + i * k.maxChannels
            let count = input.channels == nil ? 0 : input.channelCount
            if let channels = input.channels { for c in 0..<count { base[c] = channels[c] + offset } }
            (k.lists + i).initialize(to: AudioBufferList(channelPointers: UnsafePointer(base), channelCount: count, frameCount: frames))
        }
        let outBase = k.pointers + s.inputCount * k.maxChannels
        for c in 0..<s.outputChannelCount {
            outBase[c] = s.output[c] + offset
            outBase[c].update(repeating: 0, count: frames)
        }
        let output = AudioBufferList(channelPointers: UnsafePointer(outBase), channelCount: s.outputChannelCount, frameCount: frames)
        let context = ProcessContext(timeStamp: AudioTimeStamp(sampleTime: k.sliceTime + Double(offset)), frameCount: frames,
                                     sampleRate: Double(s.sampleRate), inputCount: s.inputCount, output: output,
                                     inputLists: UnsafePointer(k.lists), inputConnected: UnsafePointer(k.connected),
                                     parameterValues: s.parameters, parameterCount: k.parameterCount)
        let status = RealTime.callProcess(k.box, context)
        if status != 0 {
            for c in 0..<s.outputChannelCount { outBase[c].update(repeating: 0, count: frames) }
        }
    }
}

/// Mutable state owned by one render callback: created on a control thread, captured by the
/// callback, then read and written only on the render thread that calls it. The `Sendable`
/// box a `@Sendable` callback needs for state that is not an atomic (an LFO phase, a smoothing
/// filter's memory, a sample counter): what Examples used to do with a pointer passed as an
/// integer.
///
/// ```swift
/// let phase = RenderState(0.0)
/// try graph.setNodeInputCallback(mixerNode, inputElement: 1) { _, _, buffers in
///     for f in 0..<buffers.frameCount { buffers[0][f] = Float(sin(2 * .pi * phase.value)); phase.value += 440.0 / 48_000 }
///     return 0
/// }
/// ```
///
/// Not a lock and not an atomic: values another thread must see (a mute flag set by the UI)
/// belong in an `Atomic` instead (<doc:RealTimeRules>, "Sharing state with a callback").
/// `Value` is `BitwiseCopyable`, so writing it never retains, releases or frees.
/// Thread: ``value`` on the render thread, from the one callback that owns the box.
/// SAFETY (`@unchecked Sendable`): one writer (the render thread, in the owning callback); the pointer is allocated in init and freed in deinit, after the last callback has released the box.
public final class RenderState<Value: BitwiseCopyable>: @unchecked Sendable {
    private let storage: UnsafeMutablePointer<Value>

    /// Boxes an initial value. Thread: any; allocates.
    public init(_ initial: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: initial)
    }

    deinit { storage.deallocate() }

    /// The state. Thread: the render thread, in the callback that owns the box (or any thread
    /// before that callback is installed).
    public var value: Value {
        @inline(__always) get { storage.pointee }
        @inline(__always) set { storage.pointee = newValue }
    }
}

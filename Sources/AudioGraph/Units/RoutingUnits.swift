// Units: the splitter, the channel splitter and the merger (units with several elements on one side) and their routing kernel.

/// A unit that routes channels between its elements without changing a sample: the common
/// base of ``SplitterUnit``, ``ChannelSplitterUnit`` and ``MergerUnit``. Each output channel is
/// a fixed input element's channel (or silence when that element is unconnected).
///
/// Channel counts are fixed when the unit is created; a stream format may change an element's
/// sample rate but not its channel count (``AudioUnitError/formatNotSupported``). Inputs take
/// any format and are converted to their element's channel count at the unit's rate; every
/// output element runs at output element 0's rate (set that one; the others follow). On a whole
/// slice the outputs pass their inputs' buffers on instead of copying them.
/// Thread: properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread; no parameters.
public class RoutingUnit: AudioUnit, @unchecked Sendable {
    /// For each output channel, element by element: the input element and channel it copies.
    let routes: [(element: Int, channel: Int)]

    init(type: AudioUnitType, inputChannels: [Int], outputChannels: [Int], routes: [(element: Int, channel: Int)]) {
        precondition(routes.count == outputChannels.reduce(0, +))
        self.routes = routes
        func format(_ channels: Int) -> StreamFormat { try! StreamFormat.float32(sampleRate: 48_000, channels: UInt32(channels)) }
        super.init(type: type, inputFormats: inputChannels.map(format), outputFormats: outputChannels.map(format))
    }

    /// Checks a channel count and the elements' shared limits (1…64 elements, 1…64 channels).
    static func valid(_ counts: [Int]) -> Bool {
        (1...64).contains(counts.count) && counts.allSatisfy { (1...64).contains($0) }
    }

    override func checkFormat(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) {
        try super.checkFormat(format, scope: scope, element: element)
        let fixed = scope == .input ? inputFormats[Int(element)] : outputFormats[Int(element)]
        guard format.channelsPerFrame == fixed.channelsPerFrame else { throw .formatNotSupported }
    }

    override func processingChannels(ofInput element: Int, outputChannels: Int) -> Int {
        Int(inputFormats[element].channelsPerFrame)
    }

    override var kernelKind: KernelKind { .routing }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int {
        MemoryLayout<RoutingState>.stride + routes.count * MemoryLayout<RoutingState.Route>.stride
    }
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        state.bindMemory(to: RoutingState.self, capacity: 1).initialize(to: RoutingState(count: routes.count))
        let table = RoutingState.routes(state.assumingMemoryBound(to: RoutingState.self))
        for (i, route) in routes.enumerated() {
            table[i] = RoutingState.Route(element: Int32(route.element), channel: Int32(route.channel))
        }
    }
}

/// One input copied to several output elements: the `kAudioUnitSubType_Splitter` (AUSplitter)
/// analogue, and the way to feed two chains from one source with a format of its own per branch
/// (each output element is an ordinary connection source; fan-out from one output also works).
///
/// Every output element has the input's channel count; output element k is the input, bit for
/// bit (on a whole slice, the same buffers).
/// Thread: create and configure on a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit.
public final class SplitterUnit: RoutingUnit, @unchecked Sendable {
    /// Creates a splitter.
    /// - Parameters:
    ///   - outputs: output elements, 1…64 (AUSplitter has 2).
    ///   - channels: channels of the input and of every output, 1…64.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a count out of bounds.
    public init(outputs: Int = 2, channels: Int = 2) throws(AudioUnitError) {
        guard Self.valid(Array(repeating: channels, count: outputs)) else { throw .invalidPropertyValue }
        let routes = (0..<outputs).flatMap { _ in (0..<channels).map { (element: 0, channel: $0) } }
        super.init(type: .splitter, inputChannels: [channels], outputChannels: Array(repeating: channels, count: outputs), routes: routes)
    }
}

/// Each channel of the input on its own mono output element: Web Audio's `ChannelSplitterNode`
/// (output k is input channel k). Use it to process one side of a stereo signal, or to send a
/// channel to another chain; a ``MergerUnit`` puts channels back together.
/// Thread: create and configure on a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit.
public final class ChannelSplitterUnit: RoutingUnit, @unchecked Sendable {
    /// Creates a channel splitter.
    /// - Parameter channels: the input's channels, and so the mono output elements, 1…64
    ///   (Web Audio's default is 6; ours 2).
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for a count out of bounds.
    public init(channels: Int = 2) throws(AudioUnitError) {
        guard Self.valid(Array(repeating: 1, count: channels)) else { throw .invalidPropertyValue }
        super.init(type: .channelSplitter, inputChannels: [channels], outputChannels: Array(repeating: 1, count: channels),
                   routes: (0..<channels).map { (element: 0, channel: $0) })
    }
}

/// Several input elements side by side in one output: the `kAudioUnitSubType_Merger` (AUMerger)
/// and Web Audio `ChannelMergerNode` analogue. The output's channels are input element 0's
/// channels, then element 1's, and so on; an unconnected element's channels are silent.
/// Thread: create and configure on a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit.
public final class MergerUnit: RoutingUnit, @unchecked Sendable {
    /// Whether the graph's latency compensation aligns this merger's inputs (the default, as at
    /// every unit where paths meet). Off, each input keeps its own latency: for inputs that are
    /// independent streams merely sharing one device output — channels sent on to different
    /// destinations, such as graphrun's sends to another JACK server, which a later path
    /// brings back — so that delaying one to match another would be wrong. Takes effect at the
    /// graph's next `initialize()` or `update()`. Thread: control thread.
    public var alignsInputs = true

    /// Creates a merger.
    /// - Parameter inputChannels: each input element's channel count, 1…64 elements of 1…64
    ///   channels, 64 channels in all at most. `[1, 1]` (the default) makes stereo from two mono
    ///   inputs, as Web Audio's merger does; AUMerger's two stereo inputs are `[2, 2]`.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for counts out of bounds.
    public init(inputChannels: [Int] = [1, 1]) throws(AudioUnitError) {
        let total = inputChannels.reduce(0, +)
        guard Self.valid(inputChannels), total <= 64 else { throw .invalidPropertyValue }
        let routes = inputChannels.enumerated().flatMap { element, count in (0..<count).map { (element: element, channel: $0) } }
        super.init(type: .merger, inputChannels: inputChannels, outputChannels: [total], routes: routes)
    }
}

/// The routing kernel's state: the route count, followed in memory by the routes. Trivial.
struct RoutingState {
    /// Where one output channel comes from.
    struct Route {
        var element: Int32
        var channel: Int32
    }
    var count: Int

    /// The routes, right after the state.
    @_noLocks @inline(__always)
    static func routes(_ state: UnsafeMutablePointer<RoutingState>) -> UnsafeMutablePointer<Route> {
        UnsafeMutableRawPointer(state + 1).assumingMemoryBound(to: Route.self)
    }
}

/// The splitters' and merger's kernel: each output channel, element by element, is its route's
/// input channel — passed on (whole slices) or copied (pieces) — or silence.
enum RoutingKernel {
    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: RoutingState.self)
        let routes = RoutingState.routes(state)
        let count = state.pointee.count
        var slot = 0
        for e in 0...s.moreOutputCount {
            let channels = e == 0 ? s.output : s.moreOutputs.unsafelyUnwrapped[e - 1].channels
            let channelCount = e == 0 ? s.outputChannelCount : s.moreOutputs.unsafelyUnwrapped[e - 1].channelCount
            for c in 0..<channelCount where slot < count {
                let route = routes[slot]
                slot += 1
                let input = s.inputs[Int(route.element)]
                if let source = input.channels, Int(route.channel) < input.channelCount {
                    if piece.isWholeSlice { channels[c] = source[Int(route.channel)] }
                    else { copy(source[Int(route.channel)] + piece.offset, to: channels[c] + piece.offset, frames: piece.frames) }
                } else {
                    (channels[c] + piece.offset).update(repeating: 0, count: piece.frames)
                }
            }
        }
    }
}

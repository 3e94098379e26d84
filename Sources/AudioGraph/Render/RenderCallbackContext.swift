// Render: what a pulling render callback gets — its buffers, and AudioUnitRender for the node outputs it declared.

/// A node's output element, as a render callback names what it pulls: the unit and bus of
/// `AudioUnitRender(unit, …, bus, …)`.
public struct AUNodeOutput: Hashable, Sendable, CustomStringConvertible {
    /// The node whose output is read.
    public var node: AUNode
    /// Its output element: 0, or for the ``IOUnit`` 1 (the device input as the graph receives it).
    public var element: AudioUnitElement
    /// Names a node's output element.
    public init(_ node: AUNode, element: AudioUnitElement = 0) {
        self.node = node
        self.element = element
    }
    /// For example `node 1:1`.
    public var description: String { "\(node):\(element)" }
}

/// A render callback that may pull other nodes' outputs for the slice it fills: the
/// `AURenderCallback` whose body calls `AudioUnitRender` on another unit, as the classic
/// play-through does with the microphone (RemoteIO element 1).
///
/// Set with ``AudioGraph/setNodeInputCallback(_:inputElement:pulling:_:)``. Called on the render
/// thread once per slice, with the same rules and return value as ``RenderCallback``.
public typealias PullingRenderCallback = @Sendable (_ context: RenderCallbackContext) -> Int32

/// What a ``PullingRenderCallback`` gets for one slice: the buffers to fill, and
/// ``render(_:element:)``, the `AudioUnitRender` analogue for the node outputs it declared. A
/// view, valid only during the call.
/// SAFETY (`@unchecked Sendable`): pointers valid for one callback, on the render thread that makes it.
public struct RenderCallbackContext: @unchecked Sendable {
    /// The slice's first frame, in frames at the element's rate since the graph started.
    public let timeStamp: AudioTimeStamp
    /// The input element being fed.
    public let element: AudioUnitElement
    /// The buffers to fill: the element's stream format, ``AudioBufferList/frameCount`` frames,
    /// zeroed before the call.
    public let buffers: AudioBufferList

    let input: UnsafeMutablePointer<PlanInput>

    @_noLocks
    init(timeStamp: AudioTimeStamp, element: AudioUnitElement, buffers: AudioBufferList, input: UnsafeMutablePointer<PlanInput>) {
        self.timeStamp = timeStamp
        self.element = element
        self.buffers = buffers
        self.input = input
    }

    /// AudioUnitError.invalidElement's OSStatus (an enum's synthesized rawValue is not callable under `@_noLocks`).
    private var invalidElementStatus: Int32 { @_noLocks get { -10877 } }

    /// Fills ``buffers`` with a declared node output's audio for this slice: the
    /// `AudioUnitRender(unit, flags, timeStamp, element, frames, ioData)` analogue. The node has
    /// already rendered this cycle (the graph renders it before this callback, once, however
    /// many read it), so this is a copy, converted to the buffers' sample format; a mono output
    /// fills every channel. Call it as often as you like; each call overwrites ``buffers``.
    /// - Parameters:
    ///   - node: a node named in the callback's `pulling` list.
    ///   - element: its output element (default 0; the ``IOUnit``'s microphone is 1).
    /// - Returns: 0; ``AudioUnitError/invalidElement``'s `OSStatus` (−10877) for an output the
    ///   callback did not declare (nothing is written); ``AudioUnitError/noConnection``'s
    ///   (−10876, buffers left as they were) when the node has been removed from the graph since.
    /// - Thread: the render thread, inside the callback. Real-time safe (`@_noLocks`).
    @_noLocks
    public func render(_ node: AUNode, element: AudioUnitElement = 0) -> Int32 {
        let p = input.pointee
        guard let pulls = p.pulls, let destination = p.source else { return invalidElementStatus }
        for i in 0..<p.pullCount where pulls[i].node == node.rawValue && pulls[i].element == element {
            guard let channels = pulls[i].channels else { return -10876 }  // AudioUnitError.noConnection
            let count = pulls[i].channelCount
            let frames = buffers.frameCount
            for c in 0..<p.rawLayout.channels {
                copy(channels[count == 1 ? 0 : c], to: destination[c], frames: frames)
            }
            if let raw = p.raw {
                SampleConversion.encode(destination, p.rawLayout, offset: 0, frames: frames, into: raw)
            }
            return 0
        }
        return invalidElementStatus
    }
}

/// One node output a pulling callback declared, as the render thread reads it. Trivial.
struct PlanPull {
    /// `AUNode.rawValue` and output element, to match ``RenderCallbackContext/render(_:element:)``'s arguments.
    var node: Int32
    var element: UInt32
    /// The node's `[channel]` output pointers for the slice (read at call time: a forwarding
    /// unit repoints them each slice), or nil when the node is no longer in the graph.
    var channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
    /// 1 (copied to every channel) or the callback format's channel count.
    var channelCount: Int
}

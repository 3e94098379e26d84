// Plan: the memory and objects a plan points to, freed only after the render thread has left it.

/// Owns a callback closure so a plan can hold it as a raw pointer.
final class CallbackBox: Sendable {
    let render: RenderCallback?
    let input: InputCallback?
    let notify: RenderNotification?
    let pulling: PullingRenderCallback?
    /// The node outputs a pulling callback reads (rendered before it).
    let sources: [AUNodeOutput]
    init(render: @escaping RenderCallback) { self.render = render; self.input = nil; self.notify = nil; pulling = nil; sources = [] }
    init(input: @escaping InputCallback) { self.render = nil; self.input = input; self.notify = nil; pulling = nil; sources = [] }
    init(notify: @escaping RenderNotification) { self.render = nil; self.input = nil; self.notify = notify; pulling = nil; sources = [] }
    init(pulling: @escaping PullingRenderCallback, sources: [AUNodeOutput]) {
        render = nil; input = nil; notify = nil
        self.pulling = pulling
        self.sources = sources
    }
}

/// Everything a plan points to; freed (on a control thread) only after the render thread has
/// moved past the plan. Converters use it for their own memory too.
/// SAFETY (`@unchecked Sendable`): filled on the control thread before the plan is published (a release store), read by the render thread after its acquire load, freed after it has left.
final class PlanResources: @unchecked Sendable {
    private var blocks: [UnsafeMutableRawPointer] = []
    var retained: [AnyObject] = []
    var plan: UnsafeMutablePointer<RenderPlan>?

    /// Zero-filled memory for `count` values of `T`, freed with the resources.
    func allocate<T: ~Copyable>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let bytes = max(1, count) * MemoryLayout<T>.stride
        let raw = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: max(16, MemoryLayout<T>.alignment))
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        blocks.append(raw)
        return raw.bindMemory(to: T.self, capacity: max(1, count))
    }

    /// `channels` buffers of `frames` floats, zeroed, as a `[channel]` pointer array.
    func allocateChannels(_ channels: Int, frames: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<Float>> {
        let pointers = allocate(UnsafeMutablePointer<Float>.self, count: channels)
        for c in 0..<channels { pointers[c] = allocate(Float.self, count: frames) }
        return pointers
    }

    /// Buffers a step may forward instead of filling: its own `[channel]` buffers, and the
    /// `[channel]` pointer array consumers read, which starts out pointing at them.
    func allocateForwardable(_ channels: Int, frames: Int)
        -> (current: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, owned: UnsafeMutablePointer<UnsafeMutablePointer<Float>>) {
        let owned = allocateChannels(channels, frames: frames)
        let current = allocate(UnsafeMutablePointer<Float>.self, count: channels)
        current.update(from: owned, count: channels)
        return (current, owned)
    }

    /// `count` raw buffers of `bytes` bytes each, zeroed, as a pointer array.
    func allocateRaw(_ count: Int, bytes: Int) -> UnsafeMutablePointer<UnsafeMutableRawPointer> {
        let pointers = allocate(UnsafeMutableRawPointer.self, count: count)
        for i in 0..<count { pointers[i] = UnsafeMutableRawPointer(allocate(UInt8.self, count: bytes)) }
        return pointers
    }

    deinit {
        for block in blocks { block.deallocate() }
    }
}

import Synchronization

/// Which kernel a plan step runs; the render loop dispatches with a switch (no existentials).
/// The IO unit is not a step: the render entry handles its two sides.
enum KernelKind: UInt8 {
    /// Copies input element 0 to the output (the default for a unit without a kernel of its own).
    case passthrough
    case mixer, lowPass, muteGate
    /// A ``RenderCallbackUnit``: calls the application's process callback.
    case custom
    /// ``AudioFilePlayerUnit``: reads its ring (the unit's render context).
    case filePlayer
}

/// One input element as the render thread sees it. Trivial: pointers and counts only.
struct PlanInput {
    /// `[channel]` pointers to the frames the unit reads, in its processing format (its rate,
    /// `channelCount` channels), or nil when the element is unconnected (silence).
    var channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
    var channelCount: Int
    /// For a render-callback input: an unretained `CallbackBox` (kept alive by the plan's resources).
    var callback: UnsafeMutableRawPointer?
    var element: UInt32
    /// What the element receives before conversion: the source's output buffers, or the
    /// callback's buffers decoded to Float32. Equal to `channels` when nothing converts.
    var source: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
    var sourceRateIndex: Int
    /// A render callback in a non-canonical format fills these raw buffers (the callback
    /// format's `bufferCount` of them), decoded into `source` afterwards.
    var raw: UnsafeMutablePointer<UnsafeMutableRawPointer>?
    var rawLayout: RawLayout
    var rawBytesPerFrame: Int
    /// Channel/rate conversion from `source` to `channels`, when the two differ, and the rate
    /// domain of `channels` (the unit's).
    var converter: UnsafeMutablePointer<PlanConverter>?
    var destinationRateIndex: Int
}

/// One unit's work in a cycle. Trivial: everything it points to is owned by `PlanResources`.
struct PlanStep {
    var kind: KernelKind
    var state: UnsafeMutablePointer<Float>
    /// The unit's parameter values; while automation runs, pointed at its effective values.
    var parameters: UnsafeMutablePointer<Atomic<UInt32>>
    /// Scheduled parameter changes and ramps (owned by the unit's parameter bank).
    var automation: UnsafeMutablePointer<AutomationState>
    var inputs: UnsafeMutablePointer<PlanInput>
    var inputCount: Int
    /// `[channel]` pointers consumers read. Reset to `ownedOutput` before the kernel runs; a
    /// kernel that passes its input through unchanged may point them at its input's buffers
    /// instead of copying (valid for the rest of the slice: every producer renders before its
    /// consumers and only once).
    var output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The step's own buffers, `maxFrames` floats per channel.
    var ownedOutput: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var outputChannelCount: Int
    /// The unit's rate (its output format's), and that rate's index in the plan's domains.
    var sampleRate: Float
    var rateIndex: Int
    /// A custom unit's `CustomKernel` (nil for the built-in kernels).
    var custom: UnsafeMutablePointer<CustomKernel>?
    /// The unit's observers (taps, meters) and render context; the unit keeps it alive.
    var links: Unmanaged<UnitRenderLinks>
}

/// An immutable compiled graph: units in pull order with preallocated buffers for
/// `maxFrames` frames. Built on a control thread, published atomically, freed on a control thread.
struct RenderPlan {
    var steps: UnsafeMutablePointer<PlanStep>
    var stepCount: Int
    var maxFrames: Int
    var sampleRate: Double
    // IO element 1 (device input) as the graph sees it, `ioInputChannels` channels at the
    // application side's rate. Without conversion it is the `ioDevice` array itself: pointed at
    // the device's buffers each slice (read-only for every consumer), or at `ioDeviceSilence`,
    // which stays all zeros (nothing writes to it), when input is off or missing.
    var ioInput: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ioInputChannels: Int
    var ioInputEnabled: Bool
    var inputCallback: UnsafeMutableRawPointer?
    // What feeds IO element 0 (device output).
    var ioOutput: PlanInput
    var ioOutputEnabled: Bool
    /// The rates units run at, and the frames each gets per slice.
    var domains: RateDomains
    /// Render notifications: unretained `CallbackBox`es (kept alive by the plan's resources).
    var notifications: UnsafeMutablePointer<UnsafeMutableRawPointer>
    var notificationCount: Int
    /// `[channel]` pointer array for the notifications' view, room for the larger device side
    /// (its entries are set each slice before the view is made).
    var notificationChannels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var notificationCapacity: Int
    /// When the IO unit's application input side differs from the device: `ioDevice` holds the
    /// device's `[channel]` pointers for the slice, converted into `ioInput`; `ioInputLayout`
    /// says which integer steps to round to; `ioInputRaw` holds the callback's encoded copy
    /// for a non-canonical application format.
    var ioDevice: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ioDeviceSilence: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ioDeviceChannels: Int
    var ioInputConverter: UnsafeMutablePointer<PlanConverter>?
    var ioInputRateIndex: Int
    var ioInputLayout: RawLayout
    var ioInputRaw: UnsafeMutablePointer<UnsafeMutableRawPointer>?
    var ioInputRawBytesPerFrame: Int
    /// The IO unit's observers: element 1 sees the device input, element 0 what the device gets.
    var ioLinks: Unmanaged<UnitRenderLinks>
}

/// Owns a callback closure so a plan can hold it as a raw pointer.
final class CallbackBox: @unchecked Sendable {
    let render: RenderCallback?
    let input: InputCallback?
    let notify: RenderNotification?
    init(render: @escaping RenderCallback) { self.render = render; self.input = nil; self.notify = nil }
    init(input: @escaping InputCallback) { self.render = nil; self.input = input; self.notify = nil }
    init(notify: @escaping RenderNotification) { self.render = nil; self.input = nil; self.notify = notify }
}

/// Everything a plan points to; freed (on a control thread) only after the render thread has
/// moved past the plan. Converters use it for their own memory too.
final class PlanResources: @unchecked Sendable {
    private var blocks: [UnsafeMutableRawPointer] = []
    var retained: [AnyObject] = []
    var plan: UnsafeMutablePointer<RenderPlan>?

    /// Zero-filled memory for `count` values of `T`, freed with the resources.
    func allocate<T>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
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

// MARK: - Buffer helpers (render thread)

@_noLocks @inline(__always)
func zero(_ buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channels: Int, frames: Int) {
    for c in 0..<channels { buffers[c].update(repeating: 0, count: frames) }
}

@_noLocks @inline(__always)
func copy(_ src: UnsafeMutablePointer<Float>, to dst: UnsafeMutablePointer<Float>, frames: Int) {
    if src != dst { UnsafeMutableRawPointer(dst).copyMemory(from: src, byteCount: frames &* MemoryLayout<Float>.stride) }
}

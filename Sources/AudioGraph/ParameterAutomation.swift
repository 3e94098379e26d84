import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A parameter change scheduled sample-accurately: the `AudioUnitParameterEvent` analogue
/// (immediate and ramped events), plus an exponential approach like Web Audio's
/// `setTargetAtTime`.
///
/// `bufferOffset` counts frames, at the unit's sample rate, from the start of the next slice the
/// unit renders (`AudioUnitScheduleParameters`' `bufferOffset`); it may reach past that slice,
/// up to ``maximumBufferOffset``. Thread: a plain value.
public struct AudioUnitParameterEvent: Sendable, Equatable {
    /// What the event does from its start frame.
    public enum Kind: Sendable, Equatable {
        /// The value jumps to `value` at the start frame (no smoothing: the frame before has the
        /// old value, the start frame the new one).
        case immediate(value: Float)
        /// A straight line from the value at the start frame (or `from`) to `to`, reaching it
        /// `durationFrames` frames later (`kParameterEvent_Ramped`; Web Audio's
        /// `linearRampToValueAtTime`). 1…``AudioUnitParameterEvent/maximumDurationFrames``.
        case linearRamp(from: Float? = nil, to: Float, durationFrames: Int)
        /// An exponential approach: `v(t) = target + (v₀ − target)·e^(−t/timeConstant)`, t in
        /// seconds from the start frame (Web Audio's `setTargetAtTime`). It ends, exactly at
        /// `target`, once within 10⁻⁶ of it. `timeConstant` > 0 seconds, ≤ 60.
        case target(Float, timeConstant: Double)
    }

    /// The parameter's ID, as for ``AudioUnit/setParameter(_:_:scope:element:)``.
    public var id: AudioUnitParameterID
    /// The scope the parameter lives in.
    public var scope: AudioUnitScope
    /// The element of that scope, 0…elementCount−1.
    public var element: AudioUnitElement
    /// Frames from the start of the unit's next slice, 0…``maximumBufferOffset``.
    public var bufferOffset: Int
    /// What the event does from its start frame.
    public var kind: Kind

    /// The farthest ahead an event may start: 10 s at 48 kHz.
    public static let maximumBufferOffset = 480_000
    /// The longest linear ramp: 60 s at 48 kHz.
    public static let maximumDurationFrames = 2_880_000

    /// Creates an event.
    public init(id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement = 0,
                bufferOffset: Int = 0, _ kind: Kind) {
        self.id = id; self.scope = scope; self.element = element; self.bufferOffset = bufferOffset; self.kind = kind
    }
}

/// One queued change as the render thread takes it. Trivial.
struct ParameterChange {
    enum Kind: UInt8 { case immediate, linear, target, cancel }
    var kind: Kind
    var slot: Int32
    /// Immediate value, ramp end, or target.
    var value: Float
    /// Ramp start value, NaN = from the current value.
    var from: Float
    var offset: Int
    /// Linear: frames; target: time constant in frames.
    var duration: Double
    /// Absolute start (frames at the unit's rate), set when the render thread takes the change.
    var start: Int64
}

/// Render-side state of one parameter slot. Trivial.
struct SlotRamp {
    /// 0 none, 1 linear, 2 target.
    var mode: UInt8
    var value: Float
    var end: Float
    var increment: Double
    var remaining: Int
    /// Per-frame decay factor for a target approach: e^(−1/τ).
    var decay: Double
}

/// Parameter automation of one unit: a bounded multi-producer queue of changes from any thread
/// (Vyukov's bounded MPMC queue, 1024cores.net, used here with a single consumer), and the
/// render thread's ramps. Lives with the unit's ``ParameterBank``.
final class ParameterAutomation: @unchecked Sendable {
    static let queueCapacity = 256  // a power of two
    static let pendingCapacity = 64
    let slotCount: Int
    let sequences: UnsafeMutablePointer<Atomic<Int>>
    let cells: UnsafeMutablePointer<ParameterChange>
    let enqueuePosition = Atomic<Int>(0)
    let state: UnsafeMutablePointer<AutomationState>
    /// What kernels read while automation runs: the bank's values with ramps' current values
    /// over them (render thread only).
    let effective: UnsafeMutablePointer<Atomic<UInt32>>
    /// Changes refused because the queue was full, or dropped because too many were pending.
    let dropped = Atomic<UInt64>(0)
    /// Set once anything is scheduled; until then plain parameter sets need not cancel ramps.
    let used = Atomic<Bool>(false)

    init(slots: Int) {
        slotCount = slots
        sequences = .allocate(capacity: Self.queueCapacity)
        for i in 0..<Self.queueCapacity { (sequences + i).initialize(to: Atomic(i)) }
        cells = .allocate(capacity: Self.queueCapacity)
        cells.initialize(repeating: ParameterChange(kind: .cancel, slot: 0, value: 0, from: .nan, offset: 0, duration: 0, start: 0),
                         count: Self.queueCapacity)
        let ramps = UnsafeMutablePointer<SlotRamp>.allocate(capacity: max(1, slots))
        ramps.initialize(repeating: SlotRamp(mode: 0, value: 0, end: 0, increment: 0, remaining: 0, decay: 0), count: max(1, slots))
        let pending = UnsafeMutablePointer<ParameterChange>.allocate(capacity: Self.pendingCapacity)
        pending.initialize(repeating: ParameterChange(kind: .cancel, slot: 0, value: 0, from: .nan, offset: 0, duration: 0, start: 0),
                           count: Self.pendingCapacity)
        effective = .allocate(capacity: max(1, slots))
        for i in 0..<max(1, slots) { (effective + i).initialize(to: Atomic(0)) }
        state = .allocate(capacity: 1)
        state.initialize(to: AutomationState(owner: nil, sequences: sequences, ramps: ramps, pending: pending, pendingCount: 0, active: 0))
        state.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        sequences.deinitialize(count: Self.queueCapacity)
        sequences.deallocate()
        cells.deallocate()
        state.pointee.ramps.deallocate()
        state.pointee.pending.deallocate()
        state.deallocate()
        effective.deinitialize(count: max(1, slotCount))
        effective.deallocate()
    }

    /// Queues a change. Any thread; lock-free; false when the queue is full.
    @_noLocks
    func enqueue(_ change: ParameterChange) -> Bool {
        let mask = Self.queueCapacity - 1
        var position = enqueuePosition.load(ordering: .relaxed)
        while true {
            let cell = position & mask
            let sequence = sequences[cell].load(ordering: .acquiring)
            let difference = sequence - position
            if difference == 0 {
                let (exchanged, original) = enqueuePosition.compareExchange(expected: position, desired: position + 1, ordering: .relaxed)
                if exchanged {
                    cells[cell] = change
                    sequences[cell].store(position + 1, ordering: .releasing)
                    return true
                }
                position = original
            } else if difference < 0 {
                dropped.add(1, ordering: .relaxed)
                return false
            } else {
                position = enqueuePosition.load(ordering: .relaxed)
            }
        }
    }
}

/// The render thread's view of a unit's automation. Trivial; lives in `ParameterAutomation`.
struct AutomationState {
    var owner: UnsafeMutableRawPointer?
    /// The queue's sequence numbers (the owner's), for the idle check without a hop through it.
    var sequences: UnsafeMutablePointer<Atomic<Int>>
    var ramps: UnsafeMutablePointer<SlotRamp>
    var pending: UnsafeMutablePointer<ParameterChange>
    var pendingCount: Int
    /// Slots with a ramp in progress.
    var active: Int
    /// Next position to dequeue (single consumer: the render thread).
    var dequeuePosition: Int = 0

    /// Whether nothing is queued, pending or ramping: the unit renders its slice in one piece.
    var isIdle: Bool {
        @_noLocks @inline(__always) get {
            if pendingCount != 0 || active != 0 { return false }
            let cell = dequeuePosition & (ParameterAutomation.queueCapacity - 1)
            return sequences[cell].load(ordering: .acquiring) != dequeuePosition + 1
        }
    }
}

enum AutomationRenderer {
    /// Longest piece of a slice rendered with one parameter value while a ramp runs: kernels
    /// interpolate linearly inside a piece, so linear ramps are exact and target approaches
    /// are followed within a 32-frame chord.
    static let rampPiece = 32

    /// Renders `frames` frames of `step` in pieces split at scheduled events and, while ramps
    /// run, every ``rampPiece`` frames. Kernels read the automation's effective values
    /// meanwhile; `snap` tells them an immediate change is a step, not something to smooth.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, frames: Int, time: Int64) {
        let automation = step.pointee.automation
        let bank = step.pointee.parameters
        let owner = Unmanaged<ParameterAutomation>.fromOpaque(automation.pointee.owner!)
        let effective = owner._withUnsafeGuaranteedRef { $0.effective }
        let slots = owner._withUnsafeGuaranteedRef { $0.slotCount }
        owner._withUnsafeGuaranteedRef { owner in
            // 1. Take queued changes, stamped with their absolute start.
            let mask = ParameterAutomation.queueCapacity - 1
            while true {
                let position = automation.pointee.dequeuePosition
                let cell = position & mask
                guard owner.sequences[cell].load(ordering: .acquiring) == position + 1 else { break }
                var change = owner.cells[cell]
                owner.sequences[cell].store(position + ParameterAutomation.queueCapacity, ordering: .releasing)
                automation.pointee.dequeuePosition = position + 1
                change.start = time + Int64(change.offset)
                if automation.pointee.pendingCount < ParameterAutomation.pendingCapacity {
                    automation.pointee.pending[automation.pointee.pendingCount] = change
                    automation.pointee.pendingCount += 1
                } else {
                    owner.dropped.add(1, ordering: .relaxed)
                }
            }
        }
        // 2. Pieces, each with the values in force at its end.
        step.pointee.parameters = effective
        var position = 0
        while position < frames {
            let now = time + Int64(position)
            var snap = false
            var nextStart = Int64.max
            var i = 0
            while i < automation.pointee.pendingCount {
                let change = automation.pointee.pending[i]
                if change.start <= now {
                    if apply(change, automation, bank) { snap = true }
                    let last = automation.pointee.pendingCount - 1
                    for k in i..<last { automation.pointee.pending[k] = automation.pointee.pending[k + 1] }
                    automation.pointee.pendingCount = last
                } else {
                    nextStart = min(nextStart, change.start)
                    i += 1
                }
            }
            var length = frames - position
            if nextStart != Int64.max { length = min(length, Int(nextStart - now)) }
            if automation.pointee.active > 0 {
                // Pieces end where linear ramps end, so each ramp lands on its last frame.
                length = min(length, rampPiece)
                let ramps = automation.pointee.ramps
                for slot in 0..<slots where ramps[slot].mode == 1 { length = min(length, max(1, ramps[slot].remaining)) }
            }
            if snap {
                // A step: the kernel starts from the values in force now (a zero-frame render
                // only moves its smoothing state), then glides along any ramp from there.
                refresh(automation, bank, effective, slots: slots)
                GraphRenderContext.runKernel(step, offset: position, frames: 0, snap: true, whole: false)
            }
            if automation.pointee.active > 0 { advance(automation, bank, slots: slots, frames: length) }
            refresh(automation, bank, effective, slots: slots)
            GraphRenderContext.runKernel(step, offset: position, frames: length, snap: false, whole: false)
            position += length
        }
        step.pointee.parameters = bank
    }

    /// Effective values: ramps' current values over the bank's.
    @_noLocks @inline(__always)
    static func refresh(_ automation: UnsafeMutablePointer<AutomationState>, _ bank: UnsafeMutablePointer<Atomic<UInt32>>,
                        _ effective: UnsafeMutablePointer<Atomic<UInt32>>, slots: Int) {
        let ramps = automation.pointee.ramps
        for slot in 0..<slots {
            let value = ramps[slot].mode != 0 ? ramps[slot].value.bitPattern : bank[slot].load(ordering: .relaxed)
            effective[slot].store(value, ordering: .relaxed)
        }
    }

    /// Starts or applies one change; true for a step the kernel must not smooth.
    @_noLocks
    static func apply(_ change: ParameterChange, _ automation: UnsafeMutablePointer<AutomationState>,
                      _ bank: UnsafeMutablePointer<Atomic<UInt32>>) -> Bool {
        let slot = Int(change.slot)
        let ramp = automation.pointee.ramps + slot
        let wasActive = ramp.pointee.mode != 0
        let current = wasActive ? ramp.pointee.value : loadParameter(bank, slot)
        switch change.kind {
        case .cancel:
            ramp.pointee.mode = 0
            if wasActive { automation.pointee.active -= 1 }
            return false
        case .immediate:
            ramp.pointee.mode = 0
            if wasActive { automation.pointee.active -= 1 }
            bank[slot].store(change.value.bitPattern, ordering: .relaxed)
            return true
        case .linear:
            let from = change.from == change.from ? change.from : current
            ramp.pointee = SlotRamp(mode: 1, value: from, end: change.value,
                                    increment: (Double(change.value) - Double(from)) / max(1, change.duration),
                                    remaining: Int(change.duration), decay: 0)
            if !wasActive { automation.pointee.active += 1 }
            return from != current
        case .target:
            ramp.pointee = SlotRamp(mode: 2, value: current, end: change.value, increment: 0, remaining: 0,
                                    decay: _unsafePerformance { exp(-1 / change.duration) })
            if !wasActive { automation.pointee.active += 1 }
            return false
        }
    }

    /// Moves every running ramp `frames` frames on; a finished ramp leaves its end value in the bank.
    @_noLocks
    static func advance(_ automation: UnsafeMutablePointer<AutomationState>, _ bank: UnsafeMutablePointer<Atomic<UInt32>>,
                        slots: Int, frames: Int) {
        let ramps = automation.pointee.ramps
        for slot in 0..<slots where ramps[slot].mode != 0 {
            var r = ramps[slot]
            if r.mode == 1 {
                if r.remaining <= frames {
                    r.value = r.end
                    r.mode = 0
                } else {
                    r.remaining -= frames
                    r.value = Float(Double(r.end) - r.increment * Double(r.remaining))
                }
            } else {
                let factor = _unsafePerformance { pow(r.decay, Double(frames)) }
                let v = Double(r.end) + (Double(r.value) - Double(r.end)) * factor
                if abs(v - Double(r.end)) <= 1e-6 { r.value = r.end; r.mode = 0 } else { r.value = Float(v) }
            }
            ramps[slot] = r
            if r.mode == 0 {
                automation.pointee.active -= 1
                bank[slot].store(r.end.bitPattern, ordering: .relaxed)
            }
        }
    }
}

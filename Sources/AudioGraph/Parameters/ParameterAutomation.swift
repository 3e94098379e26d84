// Parameters: each unit's lock-free queue of scheduled changes (Vyukov's bounded MPMC queue), filled from any thread.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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


/// The sizes of a unit's automation queue. Constants as `@_noLocks` getters: the render loop reads
/// them from another file, where a stored `static let` would be a lazily initialized global.
enum ParameterQueue {
    /// Changes the queue holds (a power of two).
    static var capacity: Int { @_noLocks @inline(__always) get { 256 } }
    /// Changes the render thread keeps waiting for their start frame.
    static var pendingCapacity: Int { @_noLocks @inline(__always) get { 64 } }
}

/// Parameter automation of one unit: a bounded multi-producer queue of changes from any thread
/// (Vyukov's bounded MPMC queue, 1024cores.net, used here with a single consumer), and the
/// render thread's ramps. Lives with the unit's ``ParameterBank``.
/// SAFETY (`@unchecked Sendable`): Vyukov's queue publishes each cell with a release store of its sequence number; the ramp state is the render thread's alone.
final class ParameterAutomation: @unchecked Sendable {
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
        sequences = .allocate(capacity: ParameterQueue.capacity)
        for i in 0..<ParameterQueue.capacity { (sequences + i).initialize(to: Atomic(i)) }
        cells = .allocate(capacity: ParameterQueue.capacity)
        cells.initialize(repeating: ParameterChange(kind: .cancel, slot: 0, value: 0, from: .nan, offset: 0, duration: 0, start: 0),
                         count: ParameterQueue.capacity)
        let ramps = UnsafeMutablePointer<SlotRamp>.allocate(capacity: max(1, slots))
        ramps.initialize(repeating: SlotRamp(mode: .idle, value: 0, end: 0, increment: 0, remaining: 0, decay: 0), count: max(1, slots))
        let pending = UnsafeMutablePointer<ParameterChange>.allocate(capacity: ParameterQueue.pendingCapacity)
        pending.initialize(repeating: ParameterChange(kind: .cancel, slot: 0, value: 0, from: .nan, offset: 0, duration: 0, start: 0),
                           count: ParameterQueue.pendingCapacity)
        effective = .allocate(capacity: max(1, slots))
        for i in 0..<max(1, slots) { (effective + i).initialize(to: Atomic(0)) }
        state = .allocate(capacity: 1)
        state.initialize(to: AutomationState(owner: nil, sequences: sequences, ramps: ramps, pending: pending, pendingCount: 0, active: 0))
        state.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        sequences.deinitialize(count: ParameterQueue.capacity)
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
        let mask = ParameterQueue.capacity - 1
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

// Parameters: a unit's parameter values as relaxed atomics, read by the render thread once per slice.
import Synchronization

/// Lock-free parameter storage: one relaxed atomic Float (stored as its bit pattern) per
/// (scope, element, parameter). Written by control threads, read by the render thread once per slice.
/// SAFETY (`@unchecked Sendable`): the values are relaxed atomics behind an immutable pointer; the automation queue is lock-free.
final class ParameterBank: @unchecked Sendable {
    let count: Int
    let values: UnsafeMutablePointer<Atomic<UInt32>>
    /// Scheduled changes and ramps for these slots.
    let automation: ParameterAutomation

    init(values initial: [Float]) {
        count = initial.count
        automation = ParameterAutomation(slots: initial.count)
        values = .allocate(capacity: max(1, initial.count))
        for (i, v) in initial.enumerated() { (values + i).initialize(to: Atomic(v.bitPattern)) }
    }

    deinit {
        values.deinitialize(count: count)
        values.deallocate()
    }

    func load(_ slot: Int) -> Float { Float(bitPattern: values[slot].load(ordering: .relaxed)) }
    func store(_ slot: Int, _ value: Float) { values[slot].store(value.bitPattern, ordering: .relaxed) }
}

/// Reads a parameter slot on the render thread.
@_noLocks @inline(__always)
func loadParameter(_ bank: UnsafeMutablePointer<Atomic<UInt32>>, _ slot: Int) -> Float {
    Float(bitPattern: bank[slot].load(ordering: .relaxed))
}

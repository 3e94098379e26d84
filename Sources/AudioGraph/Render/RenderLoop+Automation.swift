// Render: rendering a unit's slice in pieces split at scheduled parameter events, and the ramps' render-side state.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Render-side state of one parameter slot. Trivial.
struct SlotRamp {
    /// What the slot is doing: nothing (the bank's value holds), a linear ramp, or a target approach.
    enum Mode: UInt8 { case idle, linear, target }
    var mode: Mode
    var value: Float
    var end: Float
    var increment: Double
    var remaining: Int
    /// Per-frame decay factor for a target approach: e^(−1/τ).
    var decay: Double
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
            let cell = dequeuePosition & (ParameterQueue.capacity - 1)
            return sequences[cell].load(ordering: .acquiring) != dequeuePosition + 1
        }
    }
}

extension RenderLoop {
    /// Longest piece of a slice rendered with one parameter value while a ramp runs: kernels
    /// interpolate linearly inside a piece, so linear ramps are exact and target approaches
    /// are followed within a 32-frame chord.
    static let rampPiece = 32

    /// Renders `frames` frames of `step` in pieces split at scheduled events and, while ramps
    /// run, every ``rampPiece`` frames. Kernels read the automation's effective values
    /// meanwhile; `snap` tells them an immediate change is a step, not something to smooth.
    @_noLocks
    static func renderAutomated(_ step: UnsafeMutablePointer<PlanStep>, frames: Int, time: Int64) {
        let automation = step.pointee.automation
        let bank = step.pointee.parameters
        let owner = Unmanaged<ParameterAutomation>.fromOpaque(automation.pointee.owner!)
        let effective = owner._withUnsafeGuaranteedRef { $0.effective }
        let slots = owner._withUnsafeGuaranteedRef { $0.slotCount }
        owner._withUnsafeGuaranteedRef { owner in
            // 1. Take queued changes, stamped with their absolute start.
            let mask = ParameterQueue.capacity - 1
            while true {
                let position = automation.pointee.dequeuePosition
                let cell = position & mask
                guard owner.sequences[cell].load(ordering: .acquiring) == position + 1 else { break }
                var change = owner.cells[cell]
                owner.sequences[cell].store(position + ParameterQueue.capacity, ordering: .releasing)
                automation.pointee.dequeuePosition = position + 1
                change.start = time + Int64(change.offset)
                if automation.pointee.pendingCount < ParameterQueue.pendingCapacity {
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
                for slot in 0..<slots where ramps[slot].mode == .linear { length = min(length, max(1, ramps[slot].remaining)) }
            }
            if snap {
                // A step: the kernel starts from the values in force now (a zero-frame render
                // only moves its smoothing state), then glides along any ramp from there.
                refresh(automation, bank, effective, slots: slots)
                runKernel(step, RenderPiece(offset: position, frames: 0, snapsParameters: true, isWholeSlice: false))
            }
            if automation.pointee.active > 0 { advance(automation, bank, slots: slots, frames: length) }
            refresh(automation, bank, effective, slots: slots)
            runKernel(step, RenderPiece(offset: position, frames: length, snapsParameters: false, isWholeSlice: false))
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
            let value = ramps[slot].mode != .idle ? ramps[slot].value.bitPattern : bank[slot].load(ordering: .relaxed)
            effective[slot].store(value, ordering: .relaxed)
        }
    }

    /// Starts or applies one change; true for a step the kernel must not smooth.
    @_noLocks
    static func apply(_ change: ParameterChange, _ automation: UnsafeMutablePointer<AutomationState>,
                      _ bank: UnsafeMutablePointer<Atomic<UInt32>>) -> Bool {
        let slot = Int(change.slot)
        let ramp = automation.pointee.ramps + slot
        let wasActive = ramp.pointee.mode != .idle
        let current = wasActive ? ramp.pointee.value : loadParameter(bank, slot)
        switch change.kind {
        case .cancel:
            ramp.pointee.mode = .idle
            if wasActive { automation.pointee.active -= 1 }
            return false
        case .immediate:
            ramp.pointee.mode = .idle
            if wasActive { automation.pointee.active -= 1 }
            bank[slot].store(change.value.bitPattern, ordering: .relaxed)
            return true
        case .linear:
            let from = change.from == change.from ? change.from : current
            ramp.pointee = SlotRamp(mode: .linear, value: from, end: change.value,
                                    increment: (Double(change.value) - Double(from)) / max(1, change.duration),
                                    remaining: Int(change.duration), decay: 0)
            if !wasActive { automation.pointee.active += 1 }
            return from != current
        case .target:
            ramp.pointee = SlotRamp(mode: .target, value: current, end: change.value, increment: 0, remaining: 0,
                                    decay: RealTime.exp(-1 / change.duration))
            if !wasActive { automation.pointee.active += 1 }
            return false
        }
    }

    /// Moves every running ramp `frames` frames on; a finished ramp leaves its end value in the bank.
    @_noLocks
    static func advance(_ automation: UnsafeMutablePointer<AutomationState>, _ bank: UnsafeMutablePointer<Atomic<UInt32>>,
                        slots: Int, frames: Int) {
        let ramps = automation.pointee.ramps
        for slot in 0..<slots where ramps[slot].mode != .idle {
            var r = ramps[slot]
            if r.mode == .linear {
                if r.remaining <= frames {
                    r.value = r.end
                    r.mode = .idle
                } else {
                    r.remaining -= frames
                    r.value = Float(Double(r.end) - r.increment * Double(r.remaining))
                }
            } else {
                let factor = RealTime.pow(r.decay, Double(frames))
                let v = Double(r.end) + (Double(r.value) - Double(r.end)) * factor
                if abs(v - Double(r.end)) <= 1e-6 { r.value = r.end; r.mode = .idle } else { r.value = Float(v) }
            }
            ramps[slot] = r
            if r.mode == .idle {
                automation.pointee.active -= 1
                bank[slot].store(r.end.bitPattern, ordering: .relaxed)
            }
        }
    }
}

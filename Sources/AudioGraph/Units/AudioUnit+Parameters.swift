// Units: an AudioUnit's parameters — the bank layout, reading, setting and scheduling (AudioUnitSetParameter, AudioUnitScheduleParameters).
import Synchronization

extension AudioUnit {
    // MARK: - Parameters

    /// Bank layout: input-scope parameters (element-major), then output-scope ones for each
    /// output element, then global ones.
    func slot(_ info: AudioUnitParameterInfo, element: Int, inputElements: Int) -> Int? {
        // Plain index loops rather than firstIndex(where:): fewer allocations in unoptimized
        // builds. Optimized builds allocate nothing here either way (RealTimeSafetyTests).
        let p = parameters
        switch info.scope {
        case .input:
            guard element < inputElements, let i = AudioUnit.index(of: info.id, in: p.input) else { return nil }
            return element * p.input.count + i
        case .output:
            guard element < outputFormats.count, let i = AudioUnit.index(of: info.id, in: p.output) else { return nil }
            return inputElements * p.input.count + element * p.output.count + i
        case .global:
            guard element == 0, let i = AudioUnit.index(of: info.id, in: p.global) else { return nil }
            return inputElements * p.input.count + outputFormats.count * p.output.count + i
        }
    }

    private static func index(of id: AudioUnitParameterID, in list: [AudioUnitParameterInfo]) -> Int? {
        var i = 0
        while i < list.count {
            if list[i].id == id { return i }
            i += 1
        }
        return nil
    }

    func defaultParameterValues(inputElements: Int) -> [Float] {
        var values: [Float] = []
        for _ in 0..<inputElements { values += parameters.input.map(\.defaultValue) }
        for _ in 0..<outputFormats.count { values += parameters.output.map(\.defaultValue) }
        values += parameters.global.map(\.defaultValue)
        return values
    }

    /// The parameters that exist in a scope (once per element of that scope).
    /// Thread: any.
    public func parameterList(scope: AudioUnitScope) -> [AudioUnitParameterInfo] {
        parameters.all.filter { $0.scope == scope }.map(withCurrentBounds)
    }

    /// Describes one parameter. Mirrors reading `kAudioUnitProperty_ParameterInfo`.
    /// - Throws: ``AudioUnitError/invalidParameter`` (no such ID on this unit),
    ///   ``AudioUnitError/invalidScope`` (the ID exists, in another scope).
    /// - Thread: any.
    public func parameterInfo(_ id: AudioUnitParameterID, scope: AudioUnitScope) throws(AudioUnitError) -> AudioUnitParameterInfo {
        withCurrentBounds(try definition(id, scope: scope))
    }

    /// The stored definition, found without allocating.
    private func definition(_ id: AudioUnitParameterID, scope: AudioUnitScope) throws(AudioUnitError) -> AudioUnitParameterInfo {
        var known = false
        var i = 0
        let all = parameters.all
        while i < all.count {
            if all[i].id == id {
                if all[i].scope == scope { return all[i] }
                known = true
            }
            i += 1
        }
        throw known ? .invalidScope : .invalidParameter
    }

    private func withCurrentBounds(_ info: AudioUnitParameterInfo) -> AudioUnitParameterInfo {
        AudioUnitParameterInfo(id: info.id, name: info.name, scope: info.scope, unit: info.unit,
                               minValue: info.minValue, maxValue: maxValue(of: info),
                               defaultValue: info.defaultValue, clampsToRange: info.clampsToRange, isReadOnly: info.isReadOnly)
    }

    private func resolveSlot(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> (AudioUnitParameterInfo, Int) {
        let info = try definition(id, scope: scope)
        try checkElement(scope, element)
        guard let slot = slot(info, element: Int(element), inputElements: inputFormats.count) else { throw .invalidElement }
        return (info, slot)
    }

    /// Reads a parameter. Mirrors `AudioUnitGetParameter`.
    /// - Parameters:
    ///   - id: the unit type's parameter ID (see each unit's `Parameter` enum).
    ///   - scope: the scope the parameter lives in.
    ///   - element: 0…elementCount(scope)−1.
    /// - Returns: the stored value, after any clamping.
    /// - Throws: ``AudioUnitError/invalidParameter``, ``AudioUnitError/invalidScope``, ``AudioUnitError/invalidElement``.
    /// - Thread: any; lock-free, allocation-free (safe in a render callback). Not concurrently
    ///   with ElementCount changes, which are control-thread calls made while uninitialized.
    public func parameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement = 0) throws(AudioUnitError) -> Float {
        let (_, slot) = try resolveSlot(id, scope: scope, element: element)
        return bank.load(slot)
    }

    /// Sets a parameter; the render thread picks it up at the start of the next slice, and units
    /// glide to it rather than jump (the mixer across that slice, the low-pass filter's cutoff
    /// with a 5 ms time constant, the mute gate over its RampTime), so changes never click.
    /// Mirrors `AudioUnitSetParameter` with a buffer offset of 0. Re-setting the current value
    /// changes nothing. For sample-accurate steps and ramps see ``scheduleParameters(_:)``.
    ///
    /// Values outside the documented range are clamped (and the clamped value reads back) for
    /// parameters with `clampsToRange`; others store any finite value.
    /// - Parameters:
    ///   - id: the unit type's parameter ID.
    ///   - value: in the parameter's unit; finite.
    ///   - scope: the scope the parameter lives in.
    ///   - element: 0…elementCount(scope)−1.
    /// - Throws: ``AudioUnitError/invalidParameter`` (unknown ID, NaN or infinite value, a
    ///   read-only parameter), ``AudioUnitError/invalidScope``, ``AudioUnitError/invalidElement``.
    /// - Thread: any; lock-free, allocation-free, never blocks (safe in a render callback). Not
    ///   concurrently with ElementCount changes, which are control-thread calls made while uninitialized.
    public func setParameter(_ id: AudioUnitParameterID, _ value: Float, scope: AudioUnitScope, element: AudioUnitElement = 0) throws(AudioUnitError) {
        let (info, slot) = try resolveSlot(id, scope: scope, element: element)
        let v = try checkedValue(value, info)
        bank.store(slot, v)
        parameterDidChange(id, v)
        // A ramp running on this parameter stops: the value just set wins.
        if bank.automation.used.load(ordering: .relaxed) {
            _ = bank.automation.enqueue(ParameterChange(kind: .cancel, slot: Int32(slot), value: v, from: .nan,
                                                        offset: 0, duration: 0, start: 0))
        }
    }

    /// Clamps stored values that a new sample rate put above their parameter's bound (a
    /// filter's cutoff above the new rate/2): the value reads back clamped and the unit glides
    /// to it, as if ``setParameter(_:_:scope:element:)`` had been called with it. Called when
    /// the unit's rate changes (the graph stores new formats). Thread: control thread.
    func clampParametersToCurrentBounds() {
        for info in parameters.all where info.clampsToRange && !info.isReadOnly {
            let top = maxValue(of: info)
            for element in 0..<elementCount(info.scope) {
                guard let (_, slot) = try? resolveSlot(info.id, scope: info.scope, element: element), bank.load(slot) > top else { continue }
                try? setParameter(info.id, top, scope: info.scope, element: element)  // in range, known ID: cannot throw
            }
        }
    }

    /// A value as the parameter stores it: clamped for parameters with `clampsToRange`, 0 or 1
    /// for booleans, the nearest whole number for indexed ones; NaN and infinities refused, and
    /// so is any value for a read-only parameter.
    private func checkedValue(_ value: Float, _ info: AudioUnitParameterInfo) throws(AudioUnitError) -> Float {
        guard value.isFinite, !info.isReadOnly else { throw .invalidParameter }
        var v = value
        if info.clampsToRange { v = min(max(v, info.minValue), maxValue(of: info)) }
        if info.unit == .boolean { v = v >= 0.5 ? 1 : 0 }
        if info.unit == .indexed { v = v.rounded() }
        try checkParameterValue(info, v)
        return v
    }

    /// Schedules parameter changes sample-accurately: the `AudioUnitScheduleParameters` analogue
    /// (plus Web Audio's `setTargetAtTime`). Each event starts `bufferOffset` frames (at the
    /// unit's rate) into the next slice the unit renders; a later ``setParameter(_:_:scope:element:)``
    /// on the same parameter stops a ramp in progress.
    ///
    /// Values are clamped as ``setParameter(_:_:scope:element:)`` clamps them. Every event is
    /// checked before any is queued, so a bad one changes nothing.
    /// - Parameter events: immediate changes, linear ramps (1…``AudioUnitParameterEvent/maximumDurationFrames``
    ///   frames) and target approaches (time constant > 0 and ≤ 60 s), each with a buffer offset
    ///   0…``AudioUnitParameterEvent/maximumBufferOffset``. Ramps need a continuous parameter
    ///   (not Enable, Mute or a choice such as an oscillator's Waveform).
    /// - Throws: ``AudioUnitError/invalidParameter`` (unknown ID, NaN or infinite value, a
    ///   read-only parameter, a ramp on a boolean or indexed one), ``AudioUnitError/invalidScope``,
    ///   ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/invalidPropertyValue`` (offset, duration or time constant out of bounds),
    ///   ``AudioUnitError/cannotDoInCurrentContext`` when the unit's queue (256 changes not yet
    ///   taken by the render thread) is full — events before the one refused stay scheduled.
    /// - Thread: any; lock-free (the array is copied, so it allocates: from a render callback
    ///   use ``scheduleParameter(_:)``).
    public func scheduleParameters(_ events: [AudioUnitParameterEvent]) throws(AudioUnitError) {
        var changes: [ParameterChange] = []
        changes.reserveCapacity(events.count)
        for event in events { changes.append(try change(for: event)) }
        bank.automation.used.store(true, ordering: .relaxed)
        for change in changes {
            guard bank.automation.enqueue(change) else { throw .cannotDoInCurrentContext }
        }
    }

    /// Schedules one parameter change; as ``scheduleParameters(_:)``, without allocating.
    /// - Thread: any; lock-free and allocation-free (a render callback may schedule).
    public func scheduleParameter(_ event: AudioUnitParameterEvent) throws(AudioUnitError) {
        let change = try change(for: event)
        bank.automation.used.store(true, ordering: .relaxed)
        guard bank.automation.enqueue(change) else { throw .cannotDoInCurrentContext }
    }

    /// Checks an event and makes the queued form of it.
    private func change(for event: AudioUnitParameterEvent) throws(AudioUnitError) -> ParameterChange {
        let (info, slot) = try resolveSlot(event.id, scope: event.scope, element: event.element)
        guard (0...AudioUnitParameterEvent.maximumBufferOffset).contains(event.bufferOffset) else { throw .invalidPropertyValue }
        var change = ParameterChange(kind: .immediate, slot: Int32(slot), value: 0, from: .nan,
                                     offset: event.bufferOffset, duration: 0, start: 0)
        switch event.kind {
        case .immediate(let value):
            change.value = try checkedValue(value, info)
        case .linearRamp(let from, let to, let duration):
            guard info.unit != .boolean, info.unit != .indexed else { throw .invalidParameter }
            guard (1...AudioUnitParameterEvent.maximumDurationFrames).contains(duration) else { throw .invalidPropertyValue }
            change.kind = .linear
            change.value = try checkedValue(to, info)
            if let from { change.from = try checkedValue(from, info) }
            change.duration = Double(duration)
        case .target(let target, let timeConstant):
            guard info.unit != .boolean, info.unit != .indexed else { throw .invalidParameter }
            guard timeConstant.isFinite, timeConstant > 0, timeConstant <= 60 else { throw .invalidPropertyValue }
            change.kind = .target
            change.value = try checkedValue(target, info)
            change.duration = timeConstant * currentSampleRate
        }
        return change
    }

    /// Sets a parameter `bufferOffset` frames into the next slice: `AudioUnitSetParameter` with
    /// its `inBufferOffsetInFrames`. The same as scheduling an immediate event.
    /// - Throws: as ``scheduleParameters(_:)``.
    /// - Thread: any.
    public func setParameter(_ id: AudioUnitParameterID, _ value: Float, scope: AudioUnitScope, element: AudioUnitElement = 0,
                             bufferOffset: Int) throws(AudioUnitError) {
        try scheduleParameter(AudioUnitParameterEvent(id: id, scope: scope, element: element, bufferOffset: bufferOffset,
                                                       .immediate(value: value)))
    }
}

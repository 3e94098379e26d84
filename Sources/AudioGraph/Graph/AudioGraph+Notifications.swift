// Graph: render notifications (AUGraphAddRenderNotify) and the CPU load.

/// When a render notification is called. Mirrors `kAudioUnitRenderAction_PreRender` /
/// `kAudioUnitRenderAction_PostRender`.
public enum RenderNotificationPhase: Sendable {
    /// Before the graph renders a slice; the buffers hold the device input (IO element 1).
    case preRender
    /// After it rendered; the buffers hold what goes to the device (IO element 0).
    case postRender
}

/// A render notification: the `AUGraphAddRenderNotify` callback. Called on the render thread
/// before and after every slice, with the slice's time stamp and buffers (device input before,
/// device output after; read them, and you may write the output ones, e.g. for metering or a
/// final limiter). It must follow the real-time rules (<doc:RealTimeRules>): no allocation,
/// locks, I/O or waiting.
public typealias RenderNotification = @Sendable (_ phase: RenderNotificationPhase, _ timeStamp: AudioTimeStamp, _ buffers: AudioBufferList) -> Void

extension AudioGraph {
    // MARK: - Render notifications and CPU load

    /// Adds a render notification, called before and after every slice from the next one on.
    /// Mirrors `AUGraphAddRenderNotify`.
    /// - Returns: a token for ``removeRenderNotification(_:)``.
    /// - Throws: ``AudioUnitError/cannotDoInCurrentContext`` (from the render thread).
    /// - Thread: control thread; allocates, and (while initialized) republishes the render plan.
    @discardableResult
    public func addRenderNotification(_ notification: @escaping RenderNotification) throws(AudioUnitError) -> Int {
        try checkControlThread()
        nextNotification += 1
        notifications.append((nextNotification, CallbackBox(notify: notification)))
        try republish()
        return nextNotification
    }

    /// Removes a render notification. Mirrors `AUGraphRemoveRenderNotify`. After it returns, the
    /// notification is not called again.
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` for an unknown token,
    ///   ``AudioUnitError/cannotDoInCurrentContext``.
    /// - Thread: control thread; may wait for the render thread to leave the current plan.
    public func removeRenderNotification(_ token: Int) throws(AudioUnitError) {
        try checkControlThread()
        guard let index = notifications.firstIndex(where: { $0.token == token }) else { throw .invalidPropertyValue }
        notifications.remove(at: index)
        try republish()
    }

    /// The render path's CPU load since the last call: time spent in ``GraphRenderContext/render(frameCount:input:inputChannelCount:output:outputChannelCount:)``
    /// over the audio time rendered, as an average over all cycles and the maximum of a single
    /// cycle (0…1, above 1 when a cycle took longer than it lasts). Mirrors `AUGraphGetCPULoad`
    /// and `AUGraphGetMaxCPULoad`, which likewise reset what they report.
    /// Measured with `clock_gettime(CLOCK_MONOTONIC)` around each cycle, from the first call on
    /// (a graph nobody asks does not pay for the two clock reads): the first call starts the
    /// measurement and returns zeros.
    /// - Thread: any (atomic reads and exchanges).
    public func cpuLoad() -> (average: Double, maximum: Double) {
        shared.measuresLoad.store(true, ordering: .relaxed)
        let busy = shared.busyNanoseconds.exchange(0, ordering: .relaxed)
        let audio = shared.audioNanoseconds.exchange(0, ordering: .relaxed)
        let maximum = Double(bitPattern: shared.maximumLoad.exchange(0, ordering: .relaxed))
        return (audio == 0 ? 0 : Double(busy) / Double(audio), maximum)
    }

    /// Rebuilds and publishes the plan for the committed topology (notifications changed).
    func republish() throws(AudioUnitError) {
        guard isInitialized else { return }
        let built = try buildPlan(committed)
        apply(committed, built, keepingPendingEdits: true)
    }

    func isInputConnected(_ node: AUNode, _ element: AudioUnitElement) -> Bool {
        if case .connection? = pending.inputs[InputKey(node: node, element: element)] { return true }
        return false
    }

    func pendingRenderCallback(_ node: AUNode, _ element: AudioUnitElement) -> RenderCallback? {
        if case .callback(let box)? = pending.inputs[InputKey(node: node, element: element)] { return box.render }
        return nil
    }
}

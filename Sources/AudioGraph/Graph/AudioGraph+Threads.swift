// Graph: rendering independent branches on several threads — the setting, the workers, the estimate.
#if canImport(Glibc)
import Glibc
#endif

extension AudioGraph {
    /// Sets how many threads render the graph's units: 0 chooses (the default), 1 renders on the
    /// render thread alone, 2…64 uses that many — the render thread and `count − 1` workers.
    ///
    /// With several, units whose inputs do not depend on each other (the branches of a graph)
    /// render at the same time within one slice; the output is bit for bit the single-threaded
    /// render's, since every unit computes the same from the same inputs and a mixer sums its
    /// inputs in element order whatever thread finished first. How it works and what it costs:
    /// ``RenderWorkers`` and <doc:RealTimeRules>. Chosen (0): 1 unless a slice is estimated to
    /// cost more than ``RenderThreadEstimate/threshold`` and its independent branches can share
    /// it — the total estimated cost over the costliest path, at most the machine's cores.
    ///
    /// Render callbacks (``setNodeInputCallback(_:inputElement:callback:)``, custom units) of
    /// units on independent branches may then run at the same time on different threads.
    ///
    /// - Throws: ``AudioUnitError/invalidPropertyValue`` outside 0…64, and what ``update()``
    ///   throws when the graph is initialized (the plan is rebuilt; on a throw nothing changed).
    /// - Thread: control thread; allocates (starts the workers).
    public func setRenderThreads(_ count: Int) throws(AudioUnitError) {
        try checkControlThread()
        guard (0...64).contains(count) else { throw .invalidPropertyValue }
        let previous = renderThreads
        renderThreads = count
        do { try republish() } catch {
            renderThreads = previous
            throw error
        }
    }

    /// Threads the running plan renders with (1 when it has none or renders on one); see
    /// ``setRenderThreads(_:)``. Thread: control thread.
    public var renderThreadsInUse: Int { currentResources?.plan?.pointee.parallel?.pointee.threads ?? 1 }

    /// Render workers running at ``renderWorkerPriority`` with SCHED_FIFO granted (0 when the
    /// system refused it, or none run). Thread: control thread.
    public var realTimeRenderWorkerCount: Int { workerPool?.realTimeWorkerCount ?? 0 }

    /// Slices that started while a render worker slept, so it had to be woken (`sem_post`):
    /// the wake-ups whose latency a slice pays. Thread: any.
    public var renderWorkerWakeUps: UInt64 { workerPool?.wakeUps.load(ordering: .relaxed) ?? 0 }

    /// The workers for a plan that renders with `count` of them: the graph's, or new ones when it
    /// has fewer or they run at another priority (the old ones stop when the last plan that uses
    /// them is freed). Control thread; allocates.
    func renderWorkers(_ count: Int) -> RenderWorkers {
        if let pool = workerPool, pool.workerCount >= count, pool.priority == renderWorkerPriority { return pool }
        let pool = RenderWorkers(workers: count, priority: renderWorkerPriority)
        workerPool = pool
        return pool
    }
}

/// The estimate behind the automatic choice of ``AudioGraph/renderThreads``: a unit's render
/// cost in nanoseconds per frame, from its kernel kind and channel counts, with figures rounded
/// from graphbench on the project's machine (a biquad ≈ 1.5 ns per frame and channel). Only the
/// ratios between units and the order of magnitude matter.
public enum RenderThreadEstimate {
    /// Estimated slice cost (nanoseconds) from which several threads are worth it: waking a
    /// worker and sharing the counters cost 2.0–2.5 µs a slice on the project's machine
    /// (graphbench --parallel measures it), a few percent of this.
    public static let threshold = 50_000.0

    static func nanosecondsPerFrame(_ unit: AudioUnit, formats: ResolvedFormats) -> Double {
        let channels = Double(formats.outputs.reduce(0) { $0 + Int($1.channelsPerFrame) })
        let inputs = Double(formats.inputs.compactMap { $0 }.count)
        let perChannel: Double
        switch unit.kernelKind {
        case .passthrough, .muteGate, .routing, .constantSource: perChannel = 0.2
        case .mixer: perChannel = 0.3 * max(1, inputs)
        case .biquadFilter: perChannel = 1.5
        case .nBandEQ: perChannel = 6
        case .delay, .sampleDelay, .oscillator, .noise, .filePlayer: perChannel = 2
        case .dynamics, .peakLimiter: perChannel = 4
        case .custom: perChannel = 3
        case .convolution: perChannel = 20
        case .varispeed: perChannel = 20
        case .timePitch: perChannel = 60
        }
        return perChannel * max(1, channels)
    }
}

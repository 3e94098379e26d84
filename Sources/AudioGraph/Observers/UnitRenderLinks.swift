// Observers: the observer list each unit publishes to the render thread (taps, meters).
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// Observers (taps and level meters) see a unit's output after it renders. They hang off the
// unit, not the plan: a plan step points at its unit's `UnitRenderLinks` (a stable address for
// the unit's life), whose atomic list pointer the control thread replaces whole when an
// observer is added or removed. Plans can be rebuilt any number of times in between; the
// observers stay.

/// What an observer entry points at.
enum ObserverKind: UInt8 {
    /// An unretained ``TapCore``: the slice is copied into its ring.
    case tap
    /// An unretained ``MeterCore``: the slice updates its readings.
    case meter
    /// An unretained ``AnalyserCore``: the slice is copied into its ring (mono).
    case analyser
}

/// One observer of one output element. Trivial; `target` is kept alive by the control side
/// until the render thread has left every list that holds it.
struct ObserverEntry {
    var kind: ObserverKind
    var element: AudioUnitElement
    var target: UnsafeMutableRawPointer
}

/// An immutable array of observers, published through ``UnitRenderLinks/observers``.
struct ObserverList {
    var count: Int
    var entries: UnsafeMutablePointer<ObserverEntry>
}

/// What the render thread reaches of a unit besides its parameters and kernel state: the
/// observers of its output elements and, for units that stream from elsewhere (the file
/// player), a render context. One per unit, at a stable address for the unit's life.
/// SAFETY (`@unchecked Sendable`): the observer list is published through an atomic pointer, replaced on the control thread and freed only after the render thread has passed.
final class UnitRenderLinks: @unchecked Sendable {
    /// The current observer list, nil when there is none. Replaced (never edited) by the control thread.
    let observers = Atomic<UnsafeMutablePointer<ObserverList>?>(nil)
    /// An unretained object the unit's kernel reads (kept alive by the unit), or nil.
    let context = Atomic<UnsafeMutableRawPointer?>(nil)

    // Control side (one control thread at a time): the entries and the objects they point to.
    var entries: [(entry: ObserverEntry, owner: AnyObject)] = []
    var published: UnsafeMutablePointer<ObserverList>?
    /// Owners of observers whose removal timed out waiting for the render thread: kept alive for good.
    var leaked: [AnyObject] = []

    deinit {
        // Nothing renders a unit that is being freed (plans retain their units).
        if let published { Self.free(published) }
    }

    /// A fresh immutable list holding `entries`, or nil for none. Control thread; allocates.
    static func makeList(_ entries: [ObserverEntry]) -> UnsafeMutablePointer<ObserverList>? {
        guard !entries.isEmpty else { return nil }
        let storage = UnsafeMutablePointer<ObserverEntry>.allocate(capacity: entries.count)
        storage.initialize(from: entries, count: entries.count)
        let list = UnsafeMutablePointer<ObserverList>.allocate(capacity: 1)
        list.initialize(to: ObserverList(count: entries.count, entries: storage))
        return list
    }

    static func free(_ list: UnsafeMutablePointer<ObserverList>) {
        list.pointee.entries.deallocate()
        list.deallocate()
    }
}

enum Observers {
    /// Hands one rendered output element to its observers. Render thread, once per slice per element.
    /// - Parameters:
    ///   - channels: `[channel]` pointers to `frames` samples, or nil for silence.
    ///   - channelCount: channels in the element's format (also when `channels` is nil).
    ///   - sampleTime: the graph sample time of the slice's first frame.
    @_noLocks @inline(__always)
    static func run(_ links: Unmanaged<UnitRenderLinks>, element: AudioUnitElement,
                    channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, channelCount: Int,
                    frames: Int, sampleRate: Double, sampleTime: Double) {
        // Sequentially consistent: pairs with the control thread's store-then-check of the hazard
        // pointer (see AudioGraph.replaceObservers), so a removed observer is never used after
        // its removal returns.
        guard let list = links._withUnsafeGuaranteedRef({ $0.observers.load(ordering: .sequentiallyConsistent) }) else { return }
        runList(list, element: element, channels: channels, channelCount: channelCount,
                frames: frames, sampleRate: sampleRate, sampleTime: sampleTime)
    }

    @_noLocks
    static func runList(_ list: UnsafeMutablePointer<ObserverList>, element: AudioUnitElement,
                        channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, channelCount: Int,
                        frames: Int, sampleRate: Double, sampleTime: Double) {
        let count = list.pointee.count
        let entries = list.pointee.entries
        for i in 0..<count {
            let entry = entries[i]
            guard entry.element == element else { continue }
            switch entry.kind {
            case .tap:
                Unmanaged<TapCore>.fromOpaque(entry.target)._withUnsafeGuaranteedRef {
                    $0.write(channels: channels, channelCount: channelCount, frames: frames,
                             sampleRate: sampleRate, sampleTime: sampleTime)
                }
            case .meter:
                Unmanaged<MeterCore>.fromOpaque(entry.target)._withUnsafeGuaranteedRef {
                    $0.process(channels: channels, channelCount: channelCount, frames: frames, sampleRate: sampleRate)
                }
            case .analyser:
                Unmanaged<AnalyserCore>.fromOpaque(entry.target)._withUnsafeGuaranteedRef {
                    $0.write(channels: channels, channelCount: channelCount, frames: frames, sampleRate: sampleRate)
                }
            }
        }
    }
}

extension AudioUnit {
    /// Adds an observer to this unit's list. Control thread; allocates.
    func addObserver(_ entry: ObserverEntry, owner: AnyObject) {
        renderLinks.entries.append((entry, owner))
        _ = replaceObservers()
    }

    /// Removes the observer whose target is `target`; returns whether it was there. When this
    /// returns, the render thread no longer uses the target. Control thread.
    @discardableResult
    func removeObserver(target: UnsafeMutableRawPointer) -> Bool {
        let links = renderLinks
        guard let index = links.entries.firstIndex(where: { $0.entry.target == target }) else { return false }
        let owner = links.entries.remove(at: index).owner
        if !replaceObservers() { links.leaked.append(owner) }
        return true
    }

    /// Publishes a new list, waits until the render thread cannot be using the old one, and
    /// frees it. Returns false when the render thread was stuck mid-cycle for about a second:
    /// the old list is then leaked (a few bytes) rather than freed under it.
    private func replaceObservers() -> Bool {
        let links = renderLinks
        let list = UnitRenderLinks.makeList(links.entries.map(\.entry))
        let old = links.observers.exchange(list, ordering: .sequentiallyConsistent)
        links.published = list
        // A unit outside any graph is rendered by no one (a graph's update() returns only after
        // the render thread has left the plan that held a removed unit).
        guard graph?.waitForRenderThreadToPass() ?? true else { return false }
        if let old { UnitRenderLinks.free(old) }
        return true
    }
}

extension AudioGraph {
    /// Whether `element` of `unit`'s output scope can be observed: the IO unit's elements 0
    /// (what goes to the device) and 1 (what comes from it); element 0 of any other unit.
    func checkObservable(_ node: AUNode, _ element: AudioUnitElement) throws(AudioUnitError) -> AudioUnit {
        try checkControlThread()
        let unit = try nodeInfo(node)
        try unit.checkElement(.output, element)
        return unit
    }

    /// Waits until a render cycle that might have read state replaced before this call has
    /// finished. Returns false if one is still running after about a second.
    ///
    /// Dekker-style: the caller stored the new state (sequentially consistent) before; the render
    /// thread stores its hazard pointer (sequentially consistent) before it reads that state. If
    /// the hazard reads nil here, any cycle starting later sees the new state; if not, the cycle
    /// in progress ends by bumping the cycle counter.
    func waitForRenderThreadToPass() -> Bool {
        guard shared.hazard.load(ordering: .sequentiallyConsistent) != nil else { return true }
        let cycles = shared.cycles.load(ordering: .acquiring)
        for _ in 0..<10_000 {
            if shared.hazard.load(ordering: .sequentiallyConsistent) == nil
                || shared.cycles.load(ordering: .acquiring) != cycles { return true }
            usleep(100)
        }
        return false
    }
}

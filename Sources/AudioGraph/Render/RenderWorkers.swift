// Render: worker threads that render independent branches of one slice beside the render thread.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A plan's schedule for rendering its steps on several threads (``AudioGraph/renderThreads``):
/// the dependency graph of its steps and the per-slice counters the threads share. Built on a
/// control thread with the plan, in memory its resources own; trivial.
///
/// The algorithm is the one Ardour's and Tracktion's graphs use, on tasks (a unit, or a chain of
/// units each feeding only the next): every task counts the tasks it reads that have not
/// finished this slice (`pending`, reset to `producerCounts`); a task with none left goes into a
/// ready queue; every thread (the render thread included) takes tasks from the queue, renders
/// their steps exactly as the serial loop does, and counts down each consumer, queueing those it
/// brings to zero. Each step renders the same arithmetic on the same inputs whatever thread
/// takes it, and a mixer sums its inputs in element order, so the output is bit for bit the
/// serial render's.
struct ParallelSchedule {
    /// The worker threads (the graph owns them; the plan's resources keep them alive).
    var workers: Unmanaged<RenderWorkers>
    /// Threads that take part, the render thread included: 2…workers + 1.
    var threads: Int
    /// What a thread takes from the queue: a task, one step or a chain of them (each step
    /// after the first reads only the one before it, which nothing else reads), rendered in
    /// order. Task `t` is the steps `taskSteps[taskStarts[t]..<taskStarts[t + 1]]`.
    var taskCount: Int
    var taskSteps: UnsafeMutablePointer<Int32>
    var taskStarts: UnsafeMutablePointer<Int32>
    /// `[task]`: how many distinct tasks each task's first step reads (connections and a pulling
    /// callback's declared sources; the IO unit's element 1 is ready before any step).
    var producerCounts: UnsafeMutablePointer<Int32>
    /// `[task]`: producers not finished this slice; a thread that counts one to zero queues the
    /// task and sets it back to its producer count for the next slice.
    var pending: UnsafeMutablePointer<Atomic<Int32>>
    /// The tasks that read each task: `consumers[consumerStarts[t]..<consumerStarts[t + 1]]`.
    var consumers: UnsafeMutablePointer<Int32>
    var consumerStarts: UnsafeMutablePointer<Int32>
    /// Tasks that read no other task, queued by the render thread at the start of a slice.
    var roots: UnsafeMutablePointer<Int32>
    var rootCount: Int
    /// The ready queue, `[task]` slots in the order tasks became ready: 0 = not yet filled,
    /// otherwise task index + 1. The thread that takes a slot empties it again.
    var ready: UnsafeMutablePointer<Atomic<Int32>>
    /// Next slot to take, next slot to fill, and tasks finished; each in a cache line of its own.
    var head: UnsafeMutablePointer<Atomic<Int>>
    var tail: UnsafeMutablePointer<Atomic<Int>>
    var done: UnsafeMutablePointer<Atomic<Int>>
    /// `[thread × 8]`: each thread's render errors (`[t * 8]`) and replaced non-finite samples
    /// (`[t * 8 + 1]`) this slice, a cache line per thread; the render thread adds them up.
    var tallies: UnsafeMutablePointer<UInt64>
}

/// The threads that render plan steps beside the render thread (``AudioGraph/renderThreads``).
/// They live as long as their graph; each sleeps on a semaphore of its own between slices.
///
/// How a worker waits: when a slice ends it spins, re-reading the slice counter, for up to
/// ``spinNanoseconds`` (a slice that starts meanwhile costs no wake-up); then it marks itself
/// asleep and waits on its POSIX semaphore (`sem_wait`: a futex). The render thread starts a
/// slice by publishing the plan and a new slice number, then posts the semaphore of each worker
/// marked asleep (`sem_post`: a futex wake, no lock). A worker that wakes after the slice's tasks
/// were all taken goes back to waiting without touching it. Measured (graphbench --parallel):
/// 2.0–2.5 µs more per 64-frame slice when every slice wakes the worker.
///
/// Thread: created and stopped on a control thread; ``run(_:_:nonFinite:)`` on the render thread.
final class RenderWorkers: @unchecked Sendable {
    // SAFETY (`@unchecked Sendable`): the fields the threads share are atomics or are written
    // before the slice number is published (release) and read after it is seen (acquire).

    /// How long a worker spins for the next slice before it sleeps (nanoseconds).
    static let spinNanoseconds: UInt64 = 20_000

    /// Worker threads (the render thread is not one of them).
    let workerCount: Int
    /// The SCHED_FIFO priority asked for (0: ordinary threads).
    let priority: Int32
    /// Workers that got SCHED_FIFO at ``priority``.
    var realTimeWorkerCount: Int { realTime.load(ordering: .relaxed) }

    /// `epoch << 32 | closed << 16 | active`: the slice number, whether its steps are all
    /// taken (no worker may join), and how many workers are in it.
    fileprivate let state = Atomic<UInt64>(0)
    /// The plan of the slice being rendered (an `UnsafeMutablePointer<RenderPlan>`).
    fileprivate let job = Atomic<UInt>(0)
    fileprivate let stopping = Atomic<Bool>(false)
    fileprivate let realTime = Atomic<Int>(0)
    /// Slices a worker slept through the start of and was woken for (`sem_post`).
    let wakeUps = Atomic<UInt64>(0)
    /// `[worker]`: set by a worker about to sleep; whoever clears it owes or consumed a post.
    fileprivate let asleep: UnsafeMutablePointer<Atomic<Bool>>
    fileprivate let semaphores: UnsafeMutablePointer<sem_t>
    /// `[worker]`: each worker's `pthread_self`, so graph edits from one can be refused.
    fileprivate let threadIDs: UnsafeMutablePointer<Atomic<UInt>>
    private var threads: [ConsumerThread] = []

    /// Starts `workers` threads, each asking for SCHED_FIFO at `priority` when it is above 0
    /// (ordinary scheduling when refused). Thread: control thread; allocates.
    init(workers: Int, priority: Int32) {
        workerCount = workers
        self.priority = priority
        asleep = .allocate(capacity: max(1, workers))
        semaphores = .allocate(capacity: max(1, workers))
        threadIDs = .allocate(capacity: max(1, workers))
        for w in 0..<workers {
            (asleep + w).initialize(to: Atomic(false))
            (threadIDs + w).initialize(to: Atomic(0))
            sem_init(semaphores + w, 0, 0)
        }
        for w in 0..<workers {
            threads.append(ConsumerThread { [unowned(unsafe) self] in self.workerLoop(w) })
        }
    }

    /// Stops and joins the threads. Thread: control thread, once nothing renders with them.
    func stop() {
        guard !threads.isEmpty else { return }
        stopping.store(true, ordering: .releasing)
        for w in 0..<workerCount { sem_post(semaphores + w) }
        for thread in threads { thread.join() }
        threads = []
    }

    deinit {
        stop()
        for w in 0..<workerCount { sem_destroy(semaphores + w) }
        asleep.deinitialize(count: workerCount)
        asleep.deallocate()
        semaphores.deallocate()
        threadIDs.deinitialize(count: workerCount)
        threadIDs.deallocate()
    }

    /// Whether the calling thread is one of the workers. Thread: any.
    func isWorker(_ thread: UInt) -> Bool {
        (0..<workerCount).contains { threadIDs[$0].load(ordering: .relaxed) == thread }
    }

    private func workerLoop(_ index: Int) {
        var parameters = sched_param(sched_priority: priority)
        if priority > 0, pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0 {
            realTime.add(1, ordering: .relaxed)
        }
        threadIDs[index].store(UInt(pthread_self()), ordering: .relaxed)
        var seen = state.load(ordering: .acquiring) >> 32
        while !stopping.load(ordering: .acquiring) {
            guard let epoch = awaitSlice(index, after: seen) else { continue }
            seen = epoch
            join(epoch, thread: index + 1)
        }
    }

    /// Spins, then sleeps, until a slice after `seen` starts; returns its number (nil when woken
    /// to stop, or spuriously).
    private func awaitSlice(_ index: Int, after seen: UInt64) -> UInt64? {
        let spinUntil = RealTime.monotonicNanoseconds() &+ RenderWorkers.spinNanoseconds
        var spins = 0
        while true {
            let epoch = state.load(ordering: .acquiring) >> 32
            if epoch != seen { return epoch }
            if stopping.load(ordering: .relaxed) { return nil }
            spins += 1
            if spins & 63 == 0, RealTime.monotonicNanoseconds() > spinUntil { break }
        }
        asleep[index].store(true, ordering: .sequentiallyConsistent)
        if state.load(ordering: .sequentiallyConsistent) >> 32 != seen || stopping.load(ordering: .sequentiallyConsistent) {
            // Started meanwhile: unless the render thread already cleared the mark (and posts), go.
            if asleep[index].exchange(false, ordering: .sequentiallyConsistent) { return nil }
        }
        while sem_wait(semaphores + index) != 0 && errno == EINTR {}
        return nil
    }

    /// Takes part in slice `epoch` if its steps are not all taken yet.
    private func join(_ epoch: UInt64, thread: Int) {
        var current = state.load(ordering: .acquiring)
        while true {
            guard current >> 32 == epoch, current & (1 << 16) == 0 else { return }
            let (exchanged, original) = state.compareExchange(expected: current, desired: current + 1,
                                                              successOrdering: .acquiring, failureOrdering: .acquiring)
            if exchanged { break }
            current = original
        }
        let plan = UnsafeMutablePointer<RenderPlan>(bitPattern: job.load(ordering: .relaxed))!
        RenderLoop.takeSteps(plan, thread: thread)
        state.subtract(1, ordering: .releasing)
    }

    /// Renders `plan`'s steps with the workers: starts a slice, takes steps until none is left
    /// to take, waits for the others to finish theirs, and closes the slice. The plan's domains
    /// hold the slice's frames. Returns the render errors and adds the replaced non-finite
    /// samples of every thread. Render thread.
    @_noLocks
    func run(_ plan: UnsafeMutablePointer<RenderPlan>, _ schedule: UnsafeMutablePointer<ParallelSchedule>,
             nonFinite: inout UInt64) -> UInt64 {
        let s = schedule.pointee
        for t in 0..<s.threads { s.tallies[t &* 8] = 0; s.tallies[t &* 8 &+ 1] = 0 }
        s.head.pointee.store(0, ordering: .relaxed)
        s.done.pointee.store(0, ordering: .relaxed)
        for r in 0..<s.rootCount { s.ready[r].store(s.roots[r] &+ 1, ordering: .relaxed) }
        s.tail.pointee.store(s.rootCount, ordering: .relaxed)
        job.store(UInt(bitPattern: plan), ordering: .relaxed)
        let epoch = (state.load(ordering: .relaxed) >> 32) &+ 1
        state.store(epoch << 32, ordering: .sequentiallyConsistent)  // publishes everything above
        for w in 0..<min(workerCount, s.threads &- 1) where asleep[w].load(ordering: .sequentiallyConsistent) {
            if asleep[w].exchange(false, ordering: .sequentiallyConsistent) {
                wakeUps.add(1, ordering: .relaxed)
                RealTime.semaphorePost(semaphores + w)
            }
        }
        RenderLoop.takeSteps(plan, thread: 0)
        while s.done.pointee.load(ordering: .acquiring) < s.taskCount {}
        // Close the slice to late wakers, then wait for those in it to leave.
        var current = state.load(ordering: .acquiring)
        while true {
            let (exchanged, original) = state.compareExchange(expected: current, desired: current | (1 << 16),
                                                              successOrdering: .acquiringAndReleasing, failureOrdering: .acquiring)
            if exchanged { break }
            current = original
        }
        while state.load(ordering: .acquiring) & 0xFFFF != 0 {}
        var errors: UInt64 = 0
        for t in 0..<s.threads {
            errors &+= s.tallies[t &* 8]
            nonFinite &+= s.tallies[t &* 8 &+ 1]
        }
        return errors
    }
}

// Components, ControlLock: a value behind a glibc mutex, for control-side state more than one thread may contend for (plugin libraries, lilv's world, URIDs, the component registry, taps, the recorder's file).
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a `pthread_mutex_t`, for control-side state more than one thread may
/// contend for: state held across slow calls (`dlopen`, loading lilv's world, scanning
/// providers) and short sections alike (the URID table, a tap's stream, the recorder's file).
///
/// Why not `Synchronization.Mutex`: on Linux a contended `Mutex` waits in the kernel
/// (`FUTEX_LOCK_PI`), a hand-over ThreadSanitizer cannot see, so any critical section another
/// thread had to wait for is reported as a "Swift access race" on the value — ten lines with
/// four threads and one `Mutex<[String: Int]>` reproduce it every run (Swift 6 on Linux), and
/// CI's TSan stage hit it on `LV2.map` when two plugin tests instantiated at once. glibc's
/// mutex is intercepted by ThreadSanitizer, so the same code is checked for real races instead.
///
/// Thread: any control thread; never the render thread (it blocks, and the real-time tests
/// count `pthread_mutex_lock` there).
package final class ControlLock<Value: ~Copyable>: @unchecked Sendable {
    // SAFETY: `value` is read and written only inside `withLock`, while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock guarding `value`.
    package init(_ value: consuming Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock; what `body` throws is rethrown after the
    /// lock is released. Not reentrant: `body` must not call `withLock` on the same lock.
    package func withLock<T: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

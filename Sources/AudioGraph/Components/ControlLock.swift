// Components, ControlLock: a value behind a glibc mutex, for control-side state whose critical sections are slow (plugin libraries, lilv's world, the component registry).
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a `pthread_mutex_t`, for control-side state held across slow calls
/// (`dlopen`, loading lilv's world, scanning providers).
///
/// Why not `Synchronization.Mutex`: on Linux a contended `Mutex` waits in the kernel
/// (`FUTEX_LOCK_PI`), a hand-over ThreadSanitizer cannot see, so a long critical section that
/// another thread waits for is reported as a data race on the value. glibc's mutex is
/// intercepted by ThreadSanitizer, so the same code is checked for real races instead.
///
/// Thread: any control thread; never the render thread (it blocks, and the real-time tests
/// count `pthread_mutex_lock` there).
package final class ControlLock<Value>: @unchecked Sendable {
    // SAFETY: `value` is read and written only inside `withLock`, while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock guarding `value`.
    package init(_ value: Value) {
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
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

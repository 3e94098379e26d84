// Observers: the plain thread that runs a tap's consumer or the file player's disk reader.
#if canImport(Glibc)
import Glibc
#endif

/// A plain pthread running a closure once (the core does not use Foundation).
final class ConsumerThread {
    private final class Body { let run: () -> Void; init(_ run: @escaping () -> Void) { self.run = run } }
    private var thread = pthread_t()

    init(_ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let status = pthread_create(&thread, nil, { arg in
            let body = Unmanaged<Body>.fromOpaque(arg!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    func join() { pthread_join(thread, nil) }
}

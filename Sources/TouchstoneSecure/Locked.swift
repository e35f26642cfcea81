#if canImport(Glibc)
import Glibc
#endif
import TouchstonePOSIX

/// A value behind a pthread mutex, for state that threads contend for.
/// `Synchronization.Mutex` serves everywhere else; where contention is the
/// normal case this one is used instead, because ThreadSanitizer does not
/// see `Mutex`'s contended path (a futex in the standard library) and
/// reports the accesses it orders as races, while it sees pthread's. The
/// one `@unchecked Sendable` it takes stands for all its users.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `mutex`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        // pthread returns its error number rather than setting errno.
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(Errno(rawValue: rc)) (errno \(rc))")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

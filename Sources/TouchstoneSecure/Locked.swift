import Foundation

/// A value behind a pthread mutex (NSLock), for state that threads contend
/// for. `Synchronization.Mutex` serves everywhere else; where contention is
/// the normal case this one is used instead, because ThreadSanitizer does
/// not see `Mutex`'s contended path (a futex in the standard library) and
/// reports the accesses it orders as races. The one `@unchecked Sendable`
/// it takes stands for all its users.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

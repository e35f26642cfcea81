import Foundation
import TouchstoneSecure

/// Runs `body`, which blocks (it waits for processes, polls files), on a
/// thread of its own and awaits it: a test that waits a minute for a touch
/// or a child must not hold one of the cooperative pool's threads (two on a
/// 2-core machine), which the tests that answer D-Bus calls from tasks
/// need meanwhile.
package func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
        startDetachedThread(name: "test-blocking") { continuation.resume(returning: Result { try body() }) }
    }
    return try result.get()
}

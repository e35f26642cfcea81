import Dispatch
import Synchronization

/// Runs `body` to its end on the Swift concurrency pool and waits for it
/// on the calling thread: ssh-sk-helper calls the provider synchronously,
/// from its one C thread, never from a Swift task.
func blocking<R: Sendable>(_ body: @escaping @Sendable () async -> R) -> R {
    let result = Mutex<R?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0.take()! }
}

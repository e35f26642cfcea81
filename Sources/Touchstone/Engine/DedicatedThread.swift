import Foundation
import Synchronization

/// A thread of its own, as a serial executor: the in-process engine runs
/// on one, so that TPM commands and SQLite calls, which block, never hold
/// a thread of Swift's cooperative pool (two threads on a 2-core machine;
/// a blocked one stalls every other task). libfprint has its own thread
/// too (FprintThread).
///
/// Work runs in the order it was enqueued. `stop()` ends the thread once
/// the work already queued has run.
final class DedicatedThread: SerialExecutor, Sendable {
    private struct Queue: ~Copyable {
        var work: [@Sendable () -> Void] = []
        var stopping = false
    }

    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)

    /// The thread, once it runs.
    private let thread = Mutex<pthread_t?>(nil)

    /// `name`: the thread's name as `ps -T` and debuggers show it (at most
    /// 15 bytes, the kernel's limit).
    init(name: String) {
        precondition(name.utf8.count <= 15, "thread names hold at most 15 bytes")
        let started = DispatchSemaphore(value: 0)
        Thread { [self] in
            Thread.current.name = name
            thread.withLock { $0 = pthread_self() }
            started.signal()
            loop()
        }.start()
        started.wait()
    }

    /// Whether the caller runs on this thread.
    var isCurrent: Bool {
        thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        submit { [self] in job.runSynchronously(on: asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Runs `body` on the thread and returns its result to the caller, for
    /// blocking work outside an actor on this executor (opening the vault).
    func run<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result(catching: body)) }
        }
    }

    /// Ends the thread after the work already queued.
    func stop() {
        queue.withLock { $0.stopping = true }
        available.signal()
    }

    private func submit(_ work: @escaping @Sendable () -> Void) {
        queue.withLock { $0.work.append(work) }
        available.signal()
    }

    private func loop() {
        while true {
            available.wait()
            let (next, stopping) = queue.withLock { queue in
                (queue.work.isEmpty ? nil : queue.work.removeFirst(), queue.stopping)
            }
            if let next {
                next()
            } else if stopping {
                return
            }
        }
    }
}

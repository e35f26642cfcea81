import Foundation
import Synchronization
import TouchstoneSecure

/// A thread of its own, as a serial executor: the in-process engine runs
/// on one, so that TPM commands and SQLite calls, which block, never hold
/// a thread of Swift's cooperative pool (two threads on a 2-core machine;
/// a blocked one stalls every other task). libfprint has its own thread
/// too (FprintThread).
///
/// It is a task executor as well: the public API runs its own nonisolated
/// steps between engine calls here too (`withTaskExecutorPreference`), so
/// an operation does not wake a pool thread and this one in turn at every
/// engine call (about 30 µs each way here).
///
/// Work runs in the order it was enqueued. `stop()` ends the thread once
/// the work already queued has run.
final class DedicatedThread: SerialExecutor, TaskExecutor, Sendable {
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
        submit { [self] in job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }

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

    /// Runs the work as it comes. Whenever the queue runs dry after some
    /// work, and before the thread ends, it zeroes the stack that work used
    /// (`scrubStack`): vault and TPM calls leave key bytes there, in
    /// locals and in registers saved by lazy symbol binding, which would
    /// otherwise stay until overwritten (MemoryScanTests).
    private func loop() {
        var dirty = false
        while true {
            available.wait()
            let (next, more, stopping) = queue.withLock { queue in
                (queue.work.isEmpty ? nil : queue.work.removeFirst(), !queue.work.isEmpty, queue.stopping)
            }
            if let next {
                next()
                dirty = true
            }
            if dirty && !more {
                scrubStack()
                dirty = false
            }
            if next == nil && stopping { return }
        }
    }
}

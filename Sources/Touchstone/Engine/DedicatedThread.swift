import Foundation
import TouchstoneSecure

/// A thread of its own, as a serial executor: the in-process engine runs
/// on one, so that TPM commands and SQLite calls, which block, never hold
/// a thread of Swift's cooperative pool (two threads on a 2-core machine;
/// a blocked one stalls every other task). libfprint has its own thread
/// too (`GLibLoopThread.libfprint`).
///
/// It is a task executor as well: the public API runs its own nonisolated
/// steps between engine calls here too (`withTaskExecutorPreference`), so
/// an operation does not wake a pool thread and this one in turn at every
/// engine call (about 30 µs each way here).
///
/// Work runs in the order it was enqueued. A thread an engine no longer
/// needs (`recycle()`) waits, idle, for the next engine (`make()`): the
/// threads never end, so none is still tearing down its thread-locals
/// (OpenSSL's among them) while the process exits.
///
/// Or the thread is another loop's (`hosted(on:)`): the engine's work then
/// runs between that loop's own events, on its thread. The Secret Service
/// provider runs its engine on its D-Bus connection's thread, so a call
/// that reads the vault is answered where GDBus delivered it, with no
/// thread woken in between.
package final class DedicatedThread: SerialExecutor, TaskExecutor, Sendable {
    /// The name `ps -T` and debuggers show (at most 15 bytes, the kernel's limit).
    static let name = "ts-engine"

    /// Threads no engine uses now, ready for the next. (`Locked`, not
    /// `Mutex`: engines come and go on many threads at once, and
    /// ThreadSanitizer must see the lock.)
    private static let idle = Locked<[DedicatedThread]>([])

    /// An idle thread, or a new one.
    static func make() -> DedicatedThread {
        idle.withLock { $0.popLast() } ?? DedicatedThread()
    }

    /// Work not yet run, oldest first (`Locked`: every thread that awaits
    /// the engine enqueues here).
    private let work = Locked<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)
    /// The thread, once it runs.
    private let thread = Locked<pthread_t?>(nil)
    /// The loop whose thread this is (`hosted(on:)`), and how many of the
    /// work it was given has not run yet; nil: a thread of its own.
    private let host: (loop: any EngineLoop, queued: Locked<Int>)?

    /// The engine's work on `loop`'s thread, between that loop's own events.
    package static func hosted(on loop: any EngineLoop) -> DedicatedThread { DedicatedThread(host: loop) }

    private init(host loop: any EngineLoop) {
        host = (loop, Locked(0))
    }

    private init() {
        host = nil
        let started = DispatchSemaphore(value: 0)
        Thread { [self] in
            Thread.current.name = Self.name
            thread.withLock { $0 = pthread_self() }
            started.signal()
            loop()
        }.start()
        started.wait()
    }

    /// Whether the caller runs on this thread.
    var isCurrent: Bool {
        if let host { return host.loop.isCurrent }
        return thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        submit { [self] in job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor()) }
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    package func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }

    /// Runs `body` on the thread and returns its result to the caller, for
    /// blocking work outside an actor on this executor (opening the vault).
    func run<R: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> R) async throws(E) -> R {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, E>, Never>) in
            submit { continuation.resume(returning: Result { () throws(E) -> R in try body() }) }
        }
        return try result.get()
    }

    /// Gives the thread back for the next engine, once the work already
    /// queued has run (its engine is gone, so none comes after).
    /// (A hosted one stays with its loop.)
    func recycle() {
        guard host == nil else { return }
        submit { [self] in Self.idle.withLock { $0.append(self) } }
    }

    private func submit(_ body: @escaping @Sendable () -> Void) {
        if let host {
            // The stack scrubbed whenever the work given has all run, as
            // the loop below does.
            host.queued.withLock { $0 += 1 }
            return host.loop.submit {
                body()
                if host.queued.withLock({ queued in
                    queued -= 1
                    return queued == 0
                }) { scrubStack() }
            }
        }
        work.withLock { $0.append(body) }
        available.signal()
    }

    /// Runs the work as it comes. Whenever the queue runs dry after some
    /// work, it zeroes the stack that work used (`scrubStack`): vault and
    /// TPM calls leave key bytes there, in locals and in registers saved by
    /// lazy symbol binding, which would otherwise stay until overwritten
    /// (MemoryScanTests).
    private func loop() {
        while true {
            available.wait()
            let (next, more) = work.withLock { work -> ((@Sendable () -> Void)?, Bool) in
                guard !work.isEmpty else { return (nil, false) }
                let next = work.removeFirst()
                return (next, !work.isEmpty)
            }
            guard let next else { continue }
            next()
            if !more { scrubStack() }
        }
    }
}

import Foundation
import TouchstoneSecure

/// Runs `body`, which blocks (it waits for processes, polls files, sleeps),
/// on a thread of its own and awaits it: a test that waits a minute for a
/// touch or a child must not hold one of the cooperative pool's threads
/// (two on a 2-core machine), which the other tests' tasks need meanwhile
/// (the Secret Service tests answer D-Bus calls from tasks). The pool held
/// by blocking CLI tests kept the pseudo-terminal tests from seeing the
/// touch prompt for minutes, past its 30 s.
///
/// The body stays in the calling task (a task executor preference, not a
/// detached thread): its `#expect`s and `#require`s belong to the running
/// test, as they would on the pool.
package func offPool<T>(_ body: () throws -> T) async throws -> T {
    let executor = ThreadOfItsOwn(name: "test-blocking")
    defer { executor.finish() }
    return try await withTaskExecutorPreference(executor) { try body() }
}

/// A task executor with one thread of its own, for one `offPool` call: it
/// runs the jobs the task enqueues while it prefers this executor, and its
/// thread ends after `finish()` once nothing is left to run. A job
/// enqueued after that (none is expected) goes to the global executor.
private final class ThreadOfItsOwn: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `jobs` and `finished` only under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init(name: String) {
        // A test body's stack: a thread's default (8 MiB), not 256 KiB.
        startDetachedThread(name: name, stackSize: 8 << 20) { [self] in run() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        if finished {
            condition.unlock()
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// No more jobs are expected: the thread ends when it has run the last.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// A test's whole blocking body (processes run and waited for, files
/// polled): off the pool as `offPool` runs it, and at most `blockingTestWidth`
/// such bodies at once. A body waits for its turn on its own thread, before
/// it starts anything, so no program's clock runs meanwhile. Unbounded, the
/// hundred CLI tests would start at once, each with its simulator (load 40
/// on two cores), and every wait of every test would stretch with them.
package func blockingTest<T>(_ body: () throws -> T) async throws -> T {
    try await offPool {
        if holdsBlockingTurn { return try body() }
        blockingTestTurns.wait()
        defer { blockingTestTurns.signal() }
        return try body()
    }
}

/// A whole test, async, as `blockingTest` runs a body: its jobs on a thread
/// of its own, within the same bound (the `.offPool` suite trait). A
/// `blockingTest` inside it takes no second turn.
package func blockingTestScope(_ body: () async throws -> Void) async throws {
    let executor = ThreadOfItsOwn(name: "test-scope")
    defer { executor.finish() }
    try await withTaskExecutorPreference(executor) {
        if holdsBlockingTurn { return try await body() }
        blockingTestTurns.wait()
        defer { blockingTestTurns.signal() }
        try await $holdsBlockingTurn.withValue(true) { try await body() }
    }
}

/// Whether the running test already holds a turn (`blockingTestScope`).
@TaskLocal private var holdsBlockingTurn = false

/// How many `blockingTest` bodies run at once: twice the processors, at
/// least four (the pool alone ran two blocking tests at a time on two
/// cores, and starved the rest).
package let blockingTestWidth = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)

private let blockingTestTurns = DispatchSemaphore(value: blockingTestWidth)

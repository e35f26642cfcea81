internal import CGLib
import Dispatch
import TouchstoneSecure
#if canImport(Glibc)
import Glibc
#endif

/// A thread that iterates one GLib main context, and takes work for it.
///
/// GLib delivers a source's callback on the thread that iterates the main
/// context the source is attached to: libfprint's drivers and GTasks, and
/// GDBus's method calls, name callbacks and signals, all arrive on the
/// thread that runs their context, never on a Swift executor or the
/// MainActor (whose closures would trap there). This thread acquires its
/// context for good (so `g_main_context_invoke` from elsewhere can never
/// run work on the caller's thread), pushes it as its thread-default
/// context, and iterates it.
///
/// Work arrives as jobs, run in submission order: each submit attaches an
/// idle source that wakes the loop and runs the jobs waiting. `run` hands a
/// job's result (or its typed error) back to an awaiting task.
package final class GLibLoopThread: @unchecked Sendable {
    // @unchecked Sendable: `context` is set once in init and GLib's source
    // attach is thread-safe; the jobs and the loop's thread are under locks.

    /// Which main context the thread runs.
    package enum Context: Sendable {
        /// GLib's global default context, which libfprint's drivers attach
        /// their timeouts and idles to. Nothing else in the process may
        /// iterate it; the thread runs as long as the process.
        case globalDefault
        /// A context of its own, which ends with `stop()`.
        case own
    }

    /// Where a job stands among the context's other ready sources.
    package enum JobPriority: Sendable {
        /// G_PRIORITY_DEFAULT: with I/O and timeouts, before idle sources
        /// (libfprint's drivers queue their own work as idles).
        case `default`
        /// G_PRIORITY_DEFAULT_IDLE: after the I/O and timeouts that are ready.
        case idle

        var value: Int32 {
            switch self {
            case .default: 0
            case .idle: 200
            }
        }
    }

    /// The GMainContext.
    private let context: OpaquePointer
    private let priority: Int32
    private let pending = Locked<(jobs: [@Sendable () -> Void], stopping: Bool)>(([], false))
    /// The thread iterating the context, once it runs.
    private let loopThread = Locked<pthread_t?>(nil)

    /// Starts a thread named `name` running `context`; `stackSize`: its
    /// stack, in bytes (libfprint's image drivers want more than a small one).
    package init(name: String, context kind: Context, jobPriority: JobPriority = .idle, stackSize: Int = 256 << 10) {
        // A reference for this object, and one for the loop while it runs.
        let context = switch kind {
        case .globalDefault: g_main_context_ref(g_main_context_default())!
        case .own: g_main_context_new()!
        }
        self.context = context
        priority = jobPriority.value
        let started = DispatchSemaphore(value: 0)
        let box = ContextBox(g_main_context_ref(context)!)
        startDetachedThread(name: name, stackSize: stackSize) { [pending, loopThread] in
            let context = box.context
            _ = g_main_context_acquire(context)
            g_main_context_push_thread_default(context)
            loopThread.withLock { $0 = pthread_self() }
            started.signal()
            while !pending.withLock({ $0.stopping && $0.jobs.isEmpty }) {
                _ = g_main_context_iteration(context, 1)
            }
            // Stopped (an own context only): the wakes still attached run
            // now, on no job, and let go of this object.
            while g_main_context_iteration(context, 0) != 0 {}
            g_main_context_pop_thread_default(context)
            g_main_context_release(context)
            g_main_context_unref(context)
        }
        started.wait()
    }

    deinit {
        g_main_context_unref(context)
    }

    /// Whether the caller runs on this thread.
    package var isCurrent: Bool {
        guard let thread = loopThread.withLock({ $0 }) else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Runs `job` on the thread, soon, in submission order.
    ///
    /// The job itself goes through `pending`, under a pthread mutex
    /// (`Locked`), and the idle source only says that one is there: GLib's
    /// own locks are futexes, which ThreadSanitizer does not see, so a job
    /// handed over inside the source would look unsynchronised to it.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        pending.withLock { $0.jobs.append(job) }
        wake()
    }

    /// Runs `body` on the thread and returns what it returned or threw.
    package func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            submit { continuation.resume(returning: Result { () throws(E) in try body() }) }
        }
        return try result.get()
    }

    /// Ends the loop once the jobs already submitted have run (a context
    /// of its own; GLib's default context runs as long as the process).
    package func stop() {
        pending.withLock { $0.stopping = true }
        wake()
    }

    /// Calls `body` on the thread after `milliseconds`, once, unless the
    /// timeout is cancelled first. Call on the thread itself.
    package func addTimeout(milliseconds: UInt32, _ body: @escaping @Sendable () -> Void) -> GLibTimeout {
        let job = Unmanaged.passRetained(Job(body))
        let source = g_timeout_source_new(milliseconds)!
        g_source_set_callback(source, { data in
            Unmanaged<Job>.fromOpaque(data!).takeUnretainedValue().body()
            return 0  // G_SOURCE_REMOVE
        }, job.toOpaque(), { data in
            Unmanaged<Job>.fromOpaque(data!).release()
        })
        g_source_attach(source, context)
        return GLibTimeout(source)
    }

    private func wake() {
        let source = g_idle_source_new()!
        g_source_set_priority(source, priority)
        g_source_set_callback(source, { data in
            Unmanaged<GLibLoopThread>.fromOpaque(data!).takeUnretainedValue().runPending()
            return 0  // G_SOURCE_REMOVE
        }, Unmanaged.passRetained(self).toOpaque(), { data in
            Unmanaged<GLibLoopThread>.fromOpaque(data!).release()
        })
        g_source_attach(source, context)
        g_source_unref(source)
    }

    private func runPending() {
        while let job = pending.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) {
            job()
        }
    }

    /// A callback boxed so it can travel as a `gpointer`.
    private final class Job: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private struct ContextBox: @unchecked Sendable {
        // @unchecked Sendable: handed once to the new thread, which alone
        // iterates it.
        let context: OpaquePointer
        init(_ context: OpaquePointer) { self.context = context }
    }
}

/// A timeout attached by `GLibLoopThread.addTimeout`: cancelled, or let go
/// of, on the loop's thread.
package final class GLibTimeout {
    /// The GSource, referenced until this object goes.
    private let source: UnsafeMutablePointer<GSource>

    init(_ source: UnsafeMutablePointer<GSource>) { self.source = source }

    deinit { g_source_unref(source) }

    /// Stops the timeout from firing (nothing happens if it has fired).
    package func cancel() {
        g_source_destroy(source)
    }
}

internal import CFPrint
import Foundation
import TouchstoneSecure

/// The one thread in the process that runs libfprint.
///
/// libfprint delivers every callback on the thread that iterates the GLib
/// main context its sources are attached to, and its drivers attach timeouts
/// and idle sources to GLib's *global default* context. So this thread
/// acquires the global default context for good, pushes it as its
/// thread-default context (GTask callbacks and the virtual readers' sockets
/// attach there too) and iterates it forever. Nothing else in the process may
/// iterate the GLib default main context.
///
/// Work arrives as jobs: each is wrapped in an idle GSource attached to that
/// context, which wakes the loop. All libfprint calls happen inside jobs or
/// inside callbacks, so they all run here, never on a Swift executor or on
/// the MainActor.
final class FprintThread: @unchecked Sendable {
    // @unchecked Sendable: `context` is written once in init; GLib's source
    // attach is thread-safe; everything else runs on the thread itself.

    /// The process-wide instance, started on first use.
    static let shared = FprintThread()

    private let context: OpaquePointer
    private let thread: Thread
    /// Jobs submitted and not yet run, oldest first.
    private let pending = Locked<[@Sendable () -> Void]>([])

    private init() {
        let ctx = g_main_context_default()!
        context = ctx
        let started = DispatchSemaphore(value: 0)
        let box = UncheckedPointer(ctx)
        thread = Thread {
            let ctx = box.pointer
            // Own the context so g_main_context_invoke from elsewhere can
            // never run a job on the caller's thread.
            _ = g_main_context_acquire(ctx)
            g_main_context_push_thread_default(ctx)
            started.signal()
            while true {
                _ = g_main_context_iteration(ctx, 1)
            }
        }
        thread.name = "touchstone-libfprint"
        thread.start()
        started.wait()
    }

    /// Whether the caller is running on the libfprint thread.
    var isCurrent: Bool { Thread.current == thread }

    /// Runs `job` on the libfprint thread, soon, in submission order.
    ///
    /// The job itself goes through `pending`, under a pthread mutex
    /// (`Locked`), and the idle source only says that one is there: GLib's
    /// own locks are futexes, which ThreadSanitizer does not see, so a job
    /// handed over inside the source would look unsynchronised to it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        pending.withLock { $0.append(job) }
        let source = g_idle_source_new()!
        g_source_set_priority(source, 0)  // G_PRIORITY_DEFAULT: before driver idles
        g_source_set_callback(source, { data in
            // `shared` lives for the whole process: an unretained pointer.
            Unmanaged<FprintThread>.fromOpaque(data!).takeUnretainedValue().runNext()
            return 0  // G_SOURCE_REMOVE
        }, Unmanaged.passUnretained(self).toOpaque(), nil)
        g_source_attach(source, context)
        g_source_unref(source)
    }

    /// The oldest pending job, run (one per idle source submit attached).
    private func runNext() {
        let job = pending.withLock { $0.removeFirst() }
        job()
    }

    /// Calls `body` after `milliseconds` on the libfprint thread; returns the
    /// source so it can be destroyed first. Call only on the libfprint thread.
    func addTimeout(milliseconds: UInt32, _ body: @escaping @Sendable () -> Void) -> UnsafeMutablePointer<GSource> {
        let unmanaged = Unmanaged.passRetained(FprintJob(body))
        let source = g_timeout_source_new(milliseconds)!
        g_source_set_callback(source, { data in
            Unmanaged<FprintJob>.fromOpaque(data!).takeUnretainedValue().body()
            return 0
        }, unmanaged.toOpaque(), { data in
            Unmanaged<FprintJob>.fromOpaque(data!).release()
        })
        g_source_attach(source, context)
        return source  // the caller holds this reference and unrefs it
    }
}

/// A job for the libfprint thread, boxed so it can travel as a `gpointer`.
final class FprintJob: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Carries a C pointer across a `@Sendable` boundary where the code on the
/// other side is the only user (documented at each use).
struct UncheckedPointer<P>: @unchecked Sendable {
    let pointer: P
    init(_ pointer: P) { self.pointer = pointer }
}

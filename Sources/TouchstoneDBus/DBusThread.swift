internal import CGio
import Foundation
import TouchstoneSecure

/// The thread that runs one GLib main context of its own, for GDBus.
///
/// GDBus delivers a registered object's method calls, a name's acquired
/// and lost callbacks and a subscription's signals on the main context
/// that was the thread-default one when they were set up. Everything of a
/// `DBusBus` is set up here, so all of it arrives on this thread, never on
/// a Swift executor or the MainActor (whose closures would trap there).
/// It is not GLib's global default context, which libfprint's thread owns
/// (`FprintThread`).
///
/// Work arrives as jobs (an idle source each, which wakes the loop), run
/// in submission order; a job hands its result back through a
/// continuation, so `run` can be awaited from anywhere.
package final class DBusThread: @unchecked Sendable {
    // @unchecked Sendable: `context` is set once in init; GLib's source
    // attach is thread-safe; the rest is under `pending`'s lock.
    let context: OpaquePointer
    private let pending = Locked<(jobs: [@Sendable () -> Void], stopping: Bool)>(([], false))

    package init(name: String = "touchstone-dbus") {
        let context = g_main_context_new()!
        self.context = context
        let started = DispatchSemaphore(value: 0)
        let box = ContextBox(context)
        startDetachedThread(name: name) { [pending] in
            let context = box.context
            _ = g_main_context_acquire(context)
            g_main_context_push_thread_default(context)
            started.signal()
            while !pending.withLock({ $0.stopping && $0.jobs.isEmpty }) {
                _ = g_main_context_iteration(context, 1)
            }
            g_main_context_pop_thread_default(context)
            g_main_context_release(context)
            g_main_context_unref(context)
        }
        started.wait()
    }

    /// Runs `job` on the thread, soon, in submission order.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        pending.withLock { $0.jobs.append(job) }
        wake()
    }

    /// Runs `body` on the thread and returns what it returned or threw.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Ends the loop once the jobs already submitted have run.
    package func stop() {
        pending.withLock { $0.stopping = true }
        wake()
    }

    private func wake() {
        let source = g_idle_source_new()!
        g_source_set_callback(source, { data in
            Unmanaged<DBusThread>.fromOpaque(data!).takeUnretainedValue().runPending()
            return 0  // G_SOURCE_REMOVE
        }, Unmanaged.passRetained(self).toOpaque(), { data in
            Unmanaged<DBusThread>.fromOpaque(data!).release()
        })
        g_source_attach(source, context)
        g_source_unref(source)
    }

    private func runPending() {
        while let job = pending.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) {
            job()
        }
    }

    private struct ContextBox: @unchecked Sendable {
        // @unchecked Sendable: handed once to the new thread, which alone uses it.
        let context: OpaquePointer
        init(_ context: OpaquePointer) { self.context = context }
    }
}

internal import CFPrint
import TouchstoneGLib

/// One libfprint operation in flight: its GCancellable, its timeout and the
/// continuation of the Swift task waiting for it.
///
/// Created on any thread; every method except `init` runs on the libfprint
/// thread, which serialises access (hence `@unchecked Sendable`).
final class FprintOperation: @unchecked Sendable {
    /// What an operation produces.
    enum Outcome: Sendable {
        case done
        case match(Bool)
        case enrolled(EnrolledPrint)
        case identified(Int?)
        case listed([DevicePrint])
    }

    /// Cancelled by a Swift task cancel or by the timeout.
    let cancellable: UnsafeMutablePointer<GCancellable>
    private let timeoutMilliseconds: UInt32
    private let events: ScanEventHandler
    private var continuation: CheckedContinuation<Result<Outcome, FingerprintError>, Never>?
    private var timeout: GLibTimeout?
    /// The bound on the whole operation (an enrolment's every touch), if any.
    private let longestMilliseconds: UInt32?
    private var longestTimeout: GLibTimeout?
    private var timedOut = false
    private var finished = false

    /// `timeout` bounds the wait for each touch; `longest`, if given, the
    /// whole operation.
    init(timeout: Duration, longest: Duration? = nil, events: @escaping ScanEventHandler) {
        cancellable = g_cancellable_new()!
        timeoutMilliseconds = UInt32(clamping: max(timeout.wholeMilliseconds, 1))
        longestMilliseconds = longest.map { UInt32(clamping: max($0.wholeMilliseconds, 1)) }
        self.events = events
    }

    deinit {
        g_object_unref(UnsafeMutableRawPointer(cancellable))
    }

    /// Whether the operation was cancelled (by the task or by the timeout).
    var isCancelled: Bool { g_cancellable_is_cancelled(cancellable) != 0 }

    /// Attaches the waiting task and starts the timeout clock.
    func begin(_ continuation: CheckedContinuation<Result<Outcome, FingerprintError>, Never>) {
        assert(GLibLoopThread.libfprint.isCurrent, "libfprint operations run on the libfprint thread")
        self.continuation = continuation
        armTimeout()
        if let longestMilliseconds {
            longestTimeout = GLibLoopThread.libfprint.addTimeout(milliseconds: longestMilliseconds) { [self] in
                timedOut = true
                g_cancellable_cancel(cancellable)
            }
        }
    }

    /// Restarts the timeout clock: the timeout bounds the wait for each touch.
    private func armTimeout() {
        disarmTimeout()
        guard !finished else { return }
        timeout = GLibLoopThread.libfprint.addTimeout(milliseconds: timeoutMilliseconds) { [self] in
            timedOut = true
            g_cancellable_cancel(cancellable)
        }
    }

    private func disarmTimeout() {
        timeout?.cancel()
        timeout = nil
    }

    /// Reports a stage or retry to the caller and restarts the timeout.
    func emit(_ event: ScanEvent) {
        guard !finished else { return }
        events(event)
        armTimeout()
    }

    /// The Swift task was cancelled.
    func cancelFromTask() {
        g_cancellable_cancel(cancellable)
    }

    /// Ends the operation with `outcome`.
    func succeed(_ outcome: Outcome) {
        complete(.success(outcome))
    }

    /// Ends the operation with `error`.
    func fail(_ error: FingerprintError) {
        complete(.failure(error))
    }

    /// Ends the operation with libfprint's error: a cancellation we caused
    /// becomes `.timedOut` or `.cancelled`, anything else is mapped.
    func fail(_ error: GLibError) {
        if error.isCancelled || isCancelled {
            fail(timedOut ? .timedOut : .cancelled)
        } else {
            fail(error.fingerprintError)
        }
    }

    /// Like `fail(_:)`, but a reader that was unplugged meanwhile reports
    /// `.disconnected` whatever error its driver produced on the way out.
    func fail(_ error: GLibError, device: UnsafeMutablePointer<FpDevice>) {
        if !error.isCancelled && FprintSession.isRemoved(device) {
            fail(.disconnected)
        } else {
            fail(error)
        }
    }

    /// Ends the operation if it was cancelled before it reached libfprint;
    /// returns whether it did.
    func finishIfCancelled() -> Bool {
        guard isCancelled else { return false }
        fail(timedOut ? .timedOut : .cancelled)
        return true
    }

    private func complete(_ result: Result<Outcome, FingerprintError>) {
        assert(GLibLoopThread.libfprint.isCurrent, "libfprint operations end on the libfprint thread")
        guard !finished else { return }
        finished = true
        disarmTimeout()
        longestTimeout?.cancel()
        longestTimeout = nil
        continuation?.resume(returning: result)
        continuation = nil
    }
}

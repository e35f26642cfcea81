internal import CFPrint
import TouchstoneGLib

/// The `FingerprintReader` over libfprint: real USB/SPI readers and, when
/// configured, libfprint's virtual readers.
///
/// All libfprint work runs on `GLibLoopThread.libfprint` (one thread per process); this
/// type only packages requests for it and waits. Each instance has its own
/// libfprint context, created and enumerated on first use. Readers are opened
/// on first use and stay open (claimed) until `close()` or until the instance
/// is released, so fprintd cannot use them meanwhile.
package final class LibfprintReader: FingerprintReader {
    /// Which of libfprint's virtual readers to create, with the socket each
    /// one listens on while it is open (libfprint's own test protocol).
    package struct VirtualReaders: Sendable, Hashable {
        /// `virtual_device`: host-side matching, verify only
        /// (FP_VIRTUAL_DEVICE).
        package var device: String?
        /// `virtual_device_storage`: match-on-chip style with identify, list
        /// and delete (FP_VIRTUAL_DEVICE_STORAGE).
        package var storage: String?
        /// `virtual_image`: an image sensor's pipeline (NBIS minutiae,
        /// bozorth3 matching) fed greyscale images (FP_VIRTUAL_IMAGE).
        package var image: String?

        package init(device: String? = nil, storage: String? = nil, image: String? = nil) {
            self.device = device
            self.storage = storage
            self.image = image
        }

        var environment: [String: String] {
            var env: [String: String] = [:]
            if let device { env["FP_VIRTUAL_DEVICE"] = device }
            if let storage { env["FP_VIRTUAL_DEVICE_STORAGE"] = storage }
            if let image { env["FP_VIRTUAL_IMAGE"] = image }
            return env
        }
    }

    private let session: FprintSession
    private let thread = GLibLoopThread.libfprint

    /// A backend for the readers attached to this machine, plus the virtual
    /// readers in `virtualReaders`, if any.
    package init(virtualReaders: VirtualReaders = VirtualReaders()) {
        session = FprintSession(environment: virtualReaders.environment)
    }

    deinit {
        // Not awaited: a process that exits right after could run its exit
        // handlers while libfprint's thread frees the context; `tearDown()`
        // is the awaited form, and this one then has nothing left to do.
        let session = session
        thread.submit { session.tearDown() }
    }

    /// Releases every reader this instance opened and drops its libfprint
    /// context, awaited: nothing of it is left for libfprint's thread to
    /// do after this returns. The instance is not to be used afterwards.
    package func tearDown() async {
        let session = session
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            thread.submit { session.tearDown { continuation.resume() } }
        }
    }

    /// Releases every reader this instance opened (fprintd can then use
    /// them). Later calls open them again.
    package func close() async {
        let session = session
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            thread.submit { session.closeAll { continuation.resume() } }
        }
    }

    /// Opens (claims) `reader` now instead of at its first operation, so a
    /// busy reader is reported early; virtual readers start listening on
    /// their socket when opened.
    package func open(_ reader: ReaderIdentity, timeout: Duration = FingerprintTimeout.storage) async throws(FingerprintError) {
        _ = try await run(on: reader, timeout: timeout, events: { _ in }) { operation, _ in
            operation.succeed(.done)
        }
    }

    package func readers() async throws(FingerprintError) -> [ReaderInfo] {
        let session = session
        return await withCheckedContinuation { continuation in
            thread.submit { continuation.resume(returning: session.devices().map(FprintSession.info(of:))) }
        }
    }

    package func enroll(_ finger: Finger, username: String, on reader: ReaderIdentity, timeout: Duration,
                        longest: Duration?, events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint {
        let outcome = try await run(on: reader, timeout: timeout, longest: longest, events: events) { operation, device in
            FprintRequests.enroll(finger, username: username, on: device, operation: operation)
        }
        guard case .enrolled(let print) = outcome else { preconditionFailure("enroll produced \(outcome)") }
        return print
    }

    package func verify(_ print: EnrolledPrint, timeout: Duration,
                       events: @escaping ScanEventHandler) async throws(FingerprintError) -> Bool {
        let outcome = try await run(on: print.reader, timeout: timeout, events: events) { operation, device in
            FprintRequests.verify(print, on: device, operation: operation)
        }
        guard case .match(let matched) = outcome else { preconditionFailure("verify produced \(outcome)") }
        return matched
    }

    /// For readers that cannot identify: verifies the touch against the
    /// first print, and compares the print libfprint scanned with the other
    /// prints for exact equality. libfprint's virtual reader scans a
    /// finger id, so any enrolled finger matches; a real reader's scan never
    /// equals a stored print byte for byte, so there only the first print
    /// can match, as with fprintd on such readers.
    package func verifyAny(among prints: [EnrolledPrint], timeout: Duration,
                          events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint? {
        guard let first = prints.first else { return nil }
        if let stranger = prints.first(where: { $0.reader != first.reader }) {
            throw FingerprintError.wrongReader(expected: first.reader, actual: stranger.reader)
        }
        let outcome = try await run(on: first.reader, timeout: timeout, events: events) { operation, device in
            FprintRequests.verify(first, alsoComparing: Array(prints.dropFirst()), on: device, operation: operation)
        }
        guard case .identified(let index) = outcome else { preconditionFailure("verify produced \(outcome)") }
        return index.map { prints[$0] }
    }

    package func identify(among prints: [EnrolledPrint], on reader: ReaderIdentity, timeout: Duration,
                         events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint? {
        if let stranger = prints.first(where: { $0.reader != reader }) {
            throw FingerprintError.wrongReader(expected: reader, actual: stranger.reader)
        }
        let outcome = try await run(on: reader, timeout: timeout, events: events) { operation, device in
            FprintRequests.identify(prints, on: device, operation: operation)
        }
        guard case .identified(let index) = outcome else { preconditionFailure("identify produced \(outcome)") }
        return index.map { prints[$0] }
    }

    package func devicePrints(on reader: ReaderIdentity, timeout: Duration) async throws(FingerprintError) -> [DevicePrint] {
        let outcome = try await run(on: reader, timeout: timeout, events: { _ in }) { operation, device in
            FprintRequests.list(on: device, operation: operation)
        }
        guard case .listed(let prints) = outcome else { preconditionFailure("list produced \(outcome)") }
        return prints
    }

    package func deleteDevicePrint(_ print: DevicePrint, timeout: Duration) async throws(FingerprintError) {
        _ = try await run(on: print.reader, timeout: timeout, events: { _ in }) { operation, device in
            FprintRequests.delete(print, on: device, operation: operation)
        }
    }

    /// Runs one operation on the libfprint thread: finds and opens the
    /// device, then hands it to `start`, which must end `operation`. Task
    /// cancellation cancels the operation's GCancellable (on that thread).
    private func run(on reader: ReaderIdentity, timeout: Duration, longest: Duration? = nil, events: @escaping ScanEventHandler,
                     start: @escaping @Sendable (FprintOperation, UnsafeMutablePointer<FpDevice>) -> Void)
        async throws(FingerprintError) -> FprintOperation.Outcome
    {
        let operation = FprintOperation(timeout: timeout, longest: longest, events: events)
        let session = session
        let thread = thread
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<FprintOperation.Outcome, FingerprintError>, Never>) in
                thread.submit {
                    operation.begin(continuation)
                    if operation.finishIfCancelled() { return }
                    do throws(FingerprintError) {
                        let device = try session.device(for: reader)
                        session.open(device, for: operation) { device in start(operation, device) }
                    } catch {
                        operation.fail(error)
                    }
                }
            }
        } onCancel: {
            thread.submit { operation.cancelFromTask() }
        }
        return try result.get()
    }
}

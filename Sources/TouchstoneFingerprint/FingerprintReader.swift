/// The fingerprint seam: what Touchstone needs from a fingerprint backend.
///
/// No C type crosses it. The libfprint implementation is `LibfprintReader`;
/// tests of higher layers can supply their own.
///
/// Every operation that waits for a finger takes a `timeout`: the longest
/// wait for the next usable touch (each accepted or rejected touch restarts
/// it). Cancelling the calling task cancels the operation on the reader;
/// it then throws `FingerprintError.cancelled` and the reader stays usable.
/// Retry prompts arrive as `ScanEvent.retry` through `events` while the
/// operation goes on. All errors thrown are `FingerprintError`.
package protocol FingerprintReader: Sendable {
    /// The readers present now.
    func readers() async throws(FingerprintError) -> [ReaderInfo]

    /// Enrols `finger` on `reader`, reporting each stage and retry through
    /// `events`; returns the new print (already kept on the reader itself for
    /// match-on-chip readers). `timeout` bounds the wait for each touch,
    /// `longest` (if any) the whole enrolment.
    func enroll(_ finger: Finger, username: String, on reader: ReaderIdentity, timeout: Duration,
                longest: Duration?, events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint

    /// Waits for a touch and checks it against `print`: `true` on a match,
    /// `false` on a different finger.
    func verify(_ print: EnrolledPrint, timeout: Duration,
                events: @escaping ScanEventHandler) async throws(FingerprintError) -> Bool

    /// On a reader that cannot identify: waits for a touch and returns the
    /// print among `prints` it matches, or nil. The default checks the
    /// first print only, as fprintd does on such readers.
    func verifyAny(among prints: [EnrolledPrint], timeout: Duration,
                   events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint?

    /// Waits for a touch and finds it among `prints` (all from `reader`):
    /// the matching print, or `nil` when none matches. Needs a reader that
    /// can identify (`ReaderInfo.canIdentify`).
    func identify(among prints: [EnrolledPrint], on reader: ReaderIdentity, timeout: Duration,
                  events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint?

    /// The prints kept on a match-on-chip reader.
    func devicePrints(on reader: ReaderIdentity, timeout: Duration) async throws(FingerprintError) -> [DevicePrint]

    /// Deletes a print from a match-on-chip reader's storage; throws(FingerprintError)
    /// `FingerprintError.dataNotFound` when it is not there.
    func deleteDevicePrint(_ print: DevicePrint, timeout: Duration) async throws(FingerprintError)
}

/// Default timeouts.
package enum FingerprintTimeout {
    /// How long to wait for a touch during verify or identify.
    package static let touch: Duration = .seconds(30)
    /// How long to wait for each touch during enrolment.
    package static let enrollTouch: Duration = .seconds(60)
    /// How long a storage command (list, delete) may take.
    package static let storage: Duration = .seconds(10)
}

extension FingerprintReader {
    /// `enroll` with no bound on the whole enrolment.
    package func enroll(_ finger: Finger, username: String, on reader: ReaderIdentity, timeout: Duration,
                        events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint {
        try await enroll(finger, username: username, on: reader, timeout: timeout, longest: nil, events: events)
    }

    /// `enroll` with the default per-touch timeout and no event handler.
    package func enroll(_ finger: Finger, username: String, on reader: ReaderIdentity,
                       events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> EnrolledPrint {
        try await enroll(finger, username: username, on: reader,
                         timeout: FingerprintTimeout.enrollTouch, longest: nil, events: events)
    }

    /// `verify` with the default timeout.
    package func verify(_ print: EnrolledPrint,
                       events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> Bool {
        try await verify(print, timeout: FingerprintTimeout.touch, events: events)
    }

    /// `identify` with the default timeout.
    package func identify(among prints: [EnrolledPrint], on reader: ReaderIdentity,
                         events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> EnrolledPrint? {
        try await identify(among: prints, on: reader, timeout: FingerprintTimeout.touch, events: events)
    }

    /// `devicePrints` with the default timeout.
    package func devicePrints(on reader: ReaderIdentity) async throws(FingerprintError) -> [DevicePrint] {
        try await devicePrints(on: reader, timeout: FingerprintTimeout.storage)
    }

    /// `deleteDevicePrint` with the default timeout.
    package func deleteDevicePrint(_ print: DevicePrint) async throws(FingerprintError) {
        try await deleteDevicePrint(print, timeout: FingerprintTimeout.storage)
    }
}

extension FingerprintReader {
    package func verifyAny(among prints: [EnrolledPrint], timeout: Duration,
                          events: @escaping ScanEventHandler) async throws(FingerprintError) -> EnrolledPrint? {
        guard let first = prints.first else { return nil }
        return try await verify(first, timeout: timeout, events: events) ? first : nil
    }
}

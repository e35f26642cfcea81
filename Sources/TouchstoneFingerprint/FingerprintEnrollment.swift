import TouchstoneSecure

/// One user's use of one open reader, the prints given by the caller:
/// capturing a finger's print, matching a touch among prints, deleting a
/// print from a match-on-chip reader. Where the prints are kept, and which
/// set is live, is the caller's (the vault's `fingers` records).
package struct ReaderSession: Sendable {
    package let backend: any FingerprintReader
    package let user: String
    package let reader: ReaderInfo

    package init(backend: any FingerprintReader, user: String, reader: ReaderInfo) {
        self.backend = backend
        self.user = user
        self.reader = reader
    }

    /// Enrols `finger` on the reader and returns its print (stored nowhere
    /// yet). `replacing`: the finger's print enrolled now, if any; a
    /// match-on-chip reader would refuse the same finger as a duplicate, so
    /// it is deleted from the reader first (a failure then leaves the
    /// reader without it; the caller's set still names it until changed).
    /// `timeout` bounds the wait for each touch, `longest` (if any) the
    /// whole enrolment.
    package func capture(_ finger: Finger, replacing existing: EnrolledPrint? = nil,
                         timeout: Duration = FingerprintTimeout.enrollTouch, longest: Duration? = nil,
                         events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> EnrolledPrint {
        if reader.storesPrintsOnDevice, let existing { try await deleteFromDevice(existing) }
        return try await backend.enroll(finger, username: user, on: reader.identity, timeout: timeout,
                                        longest: longest, events: events)
    }

    /// Waits for a touch and returns which of `prints` it matched, or nil.
    /// Readers that identify check all prints at once; others verify
    /// against the first and compare the scan with the rest (see
    /// `LibfprintReader.verifyAny`).
    package func match(among prints: [EnrolledPrint], timeout: Duration = FingerprintTimeout.touch,
                       events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> Finger? {
        guard !prints.isEmpty else { throw FingerprintError.nothingEnrolled }
        if reader.canIdentify {
            return try await backend.identify(among: prints, on: reader.identity, timeout: timeout, events: events)?.finger
        }
        return try await backend.verifyAny(among: prints, timeout: timeout, events: events)?.finger
    }

    /// Deletes `print` from a match-on-chip reader (nothing to do when it
    /// is gone already).
    package func deleteFromDevice(_ print: EnrolledPrint) async throws(FingerprintError) {
        do {
            try await backend.deleteDevicePrint(DevicePrint(print, username: user))
        } catch FingerprintError.dataNotFound {
            // Already gone from the reader: nothing to undo.
        }
    }
}

/// One user's fingers on one reader: enrolment, removal and matching through
/// a `ReaderSession`, with the prints kept in an `EnrollmentStore`, and
/// the domain state that changes with the enrolled set. Touchstone's
/// engine keeps the prints in the vault instead and uses the session
/// directly; this is the fingerprint layer on its own (its tests, the
/// walkthrough) and the first release's file store.
///
/// Checking the passcode before an enrolment change is the caller's job
/// (biometry requires a passcode, as on iOS).
package final class FingerprintEnrollment: Sendable {
    package let backend: any FingerprintReader
    package let store: any EnrollmentStore
    package let user: String
    package let reader: ReaderInfo

    package var session: ReaderSession { ReaderSession(backend: backend, user: user, reader: reader) }

    package init(backend: any FingerprintReader, store: any EnrollmentStore, user: String, reader: ReaderInfo) {
        self.backend = backend
        self.store = store
        self.user = user
        self.reader = reader
    }

    /// The enrolled fingers, sorted by fprintd name.
    package func enrolledFingers() throws(FingerprintError) -> [Finger] {
        try store.fingers(user: user, reader: reader.identity)
    }

    /// Enrols `finger` and stores its print. A failed or cancelled
    /// enrolment stores nothing and leaves the domain state as it was.
    /// Enrolling a finger that is already enrolled replaces it; on a
    /// match-on-chip reader the old print is removed first (the reader would
    /// refuse the same finger as a duplicate), so a failure then leaves the
    /// finger not enrolled.
    @discardableResult
    package func enroll(_ finger: Finger, timeout: Duration = FingerprintTimeout.enrollTouch,
                       events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> EnrolledPrint {
        if reader.storesPrintsOnDevice, try enrolledFingers().contains(finger) {
            try await remove(finger)
        }
        let print = try await session.capture(finger, timeout: timeout, events: events)
        // New epoch first: a crash between the two writes can only change
        // the domain state once more, never leave an old value standing.
        try newEpoch()
        try store.save(print, user: user)
        return print
    }

    /// Removes `finger` (from the reader too, on match-on-chip readers).
    package func remove(_ finger: Finger) async throws(FingerprintError) {
        guard try enrolledFingers().contains(finger) else { throw FingerprintError.notEnrolled(finger) }
        if reader.storesPrintsOnDevice, let print = try? store.load(finger, user: user, reader: reader.identity) {
            try await session.deleteFromDevice(print)
        }
        try newEpoch()
        try store.remove(finger, user: user, reader: reader.identity)
    }

    /// Waits for a touch of `finger`: `true` on a match. A corrupt record
    /// throws `corruptRecord` naming the finger.
    package func verify(_ finger: Finger, timeout: Duration = FingerprintTimeout.touch,
                       events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> Bool {
        let print = try store.load(finger, user: user, reader: reader.identity)
        return try await backend.verify(print, timeout: timeout, events: events)
    }

    /// Waits for a touch of any enrolled finger and returns which one matched,
    /// or `nil`. Readers that identify check all fingers at once; others
    /// verify against the first readable finger and compare the scan with
    /// the rest (see `LibfprintReader.verifyAny`). Unreadable records
    /// are skipped while at least one finger is readable.
    package func verifyAny(timeout: Duration = FingerprintTimeout.touch,
                          events: @escaping ScanEventHandler = { _ in }) async throws(FingerprintError) -> Finger? {
        var prints: [EnrolledPrint] = []
        var firstFailure: FingerprintError?
        for finger in try enrolledFingers() {
            do throws(FingerprintError) { prints.append(try store.load(finger, user: user, reader: reader.identity)) }
            catch { firstFailure = firstFailure ?? error }
        }
        guard !prints.isEmpty else {
            throw firstFailure ?? FingerprintError.nothingEnrolled
        }
        return try await session.match(among: prints, timeout: timeout, events: events)
    }

    /// The current domain state, or `nil` if the enrolled set never changed.
    /// Reading never changes it. A corrupt record makes it unavailable
    /// (throws `corruptRecord`): better no value than one for a set that
    /// cannot be checked.
    package func domainState() throws(FingerprintError) -> SecureBytes? {
        guard let epoch = try store.epoch(user: user, reader: reader.identity) else { return nil }
        let prints = try enrolledFingers().map { finger throws(FingerprintError) in try store.load(finger, user: user, reader: reader.identity) }
        return DomainState.compute(reader: reader.identity, prints: prints, epoch: epoch)
    }

    private func newEpoch() throws(FingerprintError) {
        try store.setEpoch(.random(count: 32), user: user, reader: reader.identity)
    }

}

import TouchstoneSecure

/// Where enrolled prints and the enrolment epoch are kept, per user and per
/// reader. `FileEnrollmentStore` keeps them in files; the SQLite vault can
/// take over by conforming to this protocol.
///
/// Errors thrown are `FingerprintError`: `.notEnrolled`, `.corruptRecord`
/// (naming the finger) or `.storage`.
package protocol EnrollmentStore: Sendable {
    /// Fingers with a record for `user` on `reader`, sorted, readable or
    /// not (a corrupt record still occupies its finger).
    func fingers(user: String, reader: ReaderIdentity) throws(FingerprintError) -> [Finger]

    /// The print stored for `finger`.
    func load(_ finger: Finger, user: String, reader: ReaderIdentity) throws(FingerprintError) -> EnrolledPrint

    /// Stores `print` (replacing any print for the same finger).
    func save(_ print: EnrolledPrint, user: String) throws(FingerprintError)

    /// Removes the print for `finger`; `.notEnrolled` when there is none.
    func remove(_ finger: Finger, user: String, reader: ReaderIdentity) throws(FingerprintError)

    /// The epoch drawn at the last enrolment change, `nil` if there was none.
    func epoch(user: String, reader: ReaderIdentity) throws(FingerprintError) -> SecureBytes?

    /// Replaces the epoch.
    func setEpoch(_ epoch: SecureBytes, user: String, reader: ReaderIdentity) throws(FingerprintError)
}

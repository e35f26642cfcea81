/// LAError's cases, for Linux, and what else can stop an authentication.
/// Cancels and the fallback are outcomes, not failures: they carry no
/// message.
public enum AuthenticationError: Error, Sendable, Hashable, Codable {
    /// `invalidate()` was called while this authentication was in flight.
    case appCancel
    /// The finger did not match, or the passcode was wrong.
    case authenticationFailed
    /// Too many failed matches (5 in a row); the passcode clears it.
    case biometryLockout
    /// No usable reader: none, busy, or not to be used now, and why.
    case biometryNotAvailable(ReaderFailure)
    /// No finger is enrolled.
    case biometryNotEnrolled
    /// The reader went away during the authentication.
    case biometryDisconnected
    /// The context was invalidated before this call, or it belongs to
    /// another device.
    case invalidContext
    /// Interaction would be needed but is not allowed, or there is no
    /// interaction to ask through.
    case notInteractive
    /// No passcode is set (biometry needs one, as on iOS).
    case passcodeNotSet
    /// The system cancelled: no touch before the timeout.
    case systemCancel
    /// The user cancelled.
    case userCancel
    /// The user chose the passcode instead of a finger, and the policy does
    /// not allow it.
    case userFallback
    /// The TPM refuses passcode attempts for now (its dictionary-attack
    /// lockout); `retryAfterSeconds` when known.
    case passcodeLockout(retryAfterSeconds: UInt32?)
    /// The reader failed the operation (it refused the data, its storage is
    /// full, a stored print is unusable).
    case readerFailed(ReaderFailure)
    /// The interaction could not get the passcode (a descriptor with no
    /// more lines, a read error), and why.
    case interactionFailed(String)
    /// The TPM could not be reached or failed (a wrong passcode and the
    /// lockout have cases of their own).
    case tpm(TPMFailure)
    /// The state folder or the vault could not be used.
    case storage(StorageFailure)
    /// Stored data that the authentication needs is damaged or was
    /// tampered with, and which.
    case corrupted(String)
    /// Too many wrong passcodes in a row: the daemon refuses every attempt
    /// (the right one too) for this long.
    case passcodeThrottled(retryAfterSeconds: UInt32)
    /// The daemon engine's `touchstoned` could not answer.
    case daemon(DaemonFailure)

    /// What to tell the user, or nil for a cancel or the fallback (a
    /// decision, not a failure).
    public var message: String? {
        switch self {
        case .appCancel, .systemCancel, .userCancel, .userFallback: nil
        case .authenticationFailed: "Couldn't verify it's you. Try again."
        case .biometryLockout: "Fingerprint is locked after too many failed attempts. Enter your passcode to re-enable it."
        case .biometryNotAvailable(let failure): "The fingerprint reader can't be used: \(failure)."
        case .biometryNotEnrolled: "No finger is enrolled. Enrol one to unlock this way."
        case .biometryDisconnected: "The fingerprint reader was disconnected."
        case .invalidContext: "This authentication context was invalidated."
        case .notInteractive: "Authentication is needed, but no interaction is possible."
        case .passcodeNotSet: "No passcode is set. Set one first: fingerprint unlock needs a passcode."
        case .passcodeLockout(let seconds?):
            "Too many wrong passcodes: the TPM refuses attempts for now (one more every \(seconds) s)."
        case .passcodeLockout(nil): "Too many wrong passcodes: the TPM refuses attempts for now."
        case .readerFailed(let failure): "The fingerprint reader failed: \(failure)."
        case .interactionFailed(let why): "The passcode could not be read: \(why)."
        case .tpm(let failure): "The TPM could not be used: \(failure)."
        case .storage(let failure): "Touchstone's state could not be used: \(failure.message)."
        case .corrupted(let what): "Stored data is corrupted or was tampered with: \(what)."
        case .passcodeThrottled(let seconds):
            "Too many wrong passcodes: touchstoned refuses passcode attempts for \(seconds) s more."
        case .daemon(let failure): "\(failure)."
        }
    }
}

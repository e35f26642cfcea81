import TouchstoneFingerprint
import TouchstoneTPM
import TouchstoneVault

/// LAError's cases, for Linux. Cancels and the fallback are outcomes, not
/// failures: they carry no message.
public enum AuthenticationError: Error, Equatable, Sendable {
    /// `invalidate()` was called while this authentication was in flight.
    case appCancel
    /// The finger did not match, or the passcode was wrong.
    case authenticationFailed
    /// Too many failed matches (5 in a row); the passcode clears it.
    case biometryLockout
    /// No usable reader (none, busy, not permitted), with why.
    case biometryNotAvailable(reason: String)
    /// No finger is enrolled.
    case biometryNotEnrolled
    /// The reader went away during the authentication.
    case biometryDisconnected
    /// The context was invalidated before this call.
    case invalidContext
    /// Interaction would be needed but is not allowed.
    case notInteractive
    /// No passcode is set (biometry needs one, as on iOS).
    case passcodeNotSet
    /// The system cancelled: a signal, or no touch before the timeout.
    case systemCancel
    /// The user cancelled.
    case userCancel
    /// The user chose the passcode instead of a finger, and the policy does
    /// not allow it.
    case userFallback
    /// The TPM refuses passcode attempts for now (its dictionary-attack
    /// lockout); `retryAfterSeconds` when known.
    case passcodeLockout(retryAfterSeconds: UInt32?)
    /// The TPM could not be reached or failed while checking the passcode
    /// (a wrong passcode and the lockout have cases of their own).
    case tpm(TPMError)
    /// The store failed, or anything else; the text says how.
    case failure(String)

    /// What to tell the user, or nil for a cancel or the fallback (a
    /// decision, not a failure).
    public var message: String? {
        switch self {
        case .appCancel, .systemCancel, .userCancel, .userFallback: return nil
        case .authenticationFailed: return "Couldn't verify it's you. Try again."
        case .biometryLockout:
            return "Fingerprint is locked after too many failed attempts. Enter your passcode to re-enable it."
        case .biometryNotAvailable(let reason): return "The fingerprint reader can't be used: \(reason)."
        case .biometryNotEnrolled: return "No finger is enrolled. Enrol one to unlock this way."
        case .biometryDisconnected: return "The fingerprint reader was disconnected."
        case .invalidContext: return "This authentication context was invalidated."
        case .notInteractive: return "Authentication is needed, but no interaction is possible."
        case .passcodeNotSet: return "No passcode is set. Set one first: fingerprint unlock needs a passcode."
        case .passcodeLockout(let seconds):
            if let seconds { return "Too many wrong passcodes: the TPM refuses attempts for now (one more every \(seconds) s)." }
            return "Too many wrong passcodes: the TPM refuses attempts for now."
        case .tpm(let error): return "The TPM could not be used: \(error)."
        case .failure(let text): return text
        }
    }
}

extension AuthenticationError {
    /// The LocalAuthentication view of a reader error.
    init(_ error: FingerprintError) {
        switch error {
        case .cancelled: self = .userCancel
        case .timedOut: self = .systemCancel
        case .disconnected: self = .biometryDisconnected
        case .nothingEnrolled: self = .biometryNotEnrolled
        case .busy, .notAvailable, .readerNotFound, .notSupported, .tooHot, .protocolError, .wrongReader:
            self = .biometryNotAvailable(reason: error.description)
        default: self = .failure(error.description)
        }
    }

    init(_ error: VaultError) {
        switch error {
        case .passcodeNotSet: self = .passcodeNotSet
        case .tpm(.wrongPasscode): self = .authenticationFailed
        case .tpm(.lockout(let seconds)): self = .passcodeLockout(retryAfterSeconds: seconds)
        case .tpm(let tpmError): self = .tpm(tpmError)
        default: self = .failure(error.description)
        }
    }
}

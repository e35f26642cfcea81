import TouchstoneFingerprint
import TouchstoneTPM
import TouchstoneVault

/// SecItem's errors, for Linux.
public enum KeychainError: Error, Equatable, Sendable {
    case duplicateItem
    case itemNotFound
    /// The finger did not match or the passcode was wrong (errSecAuthFailed).
    case authFailed
    /// The person (or the system) cancelled (errSecUserCanceled).
    case userCanceled
    /// Authentication is needed and interaction is not allowed.
    case interactionNotAllowed
    /// The enrolled fingers changed and the item allows no other way in.
    case itemInvalidated
    /// The stored data is damaged or was tampered with (errSecDecode).
    case corrupted(String)
    /// An authentication error other than the above (lockout, no reader,
    /// no passcode, ...).
    case authentication(AuthenticationError)
    /// The TPM failed or is unreachable.
    case tpm(TPMError)
    /// The vault was made with another TPM.
    case otherTPM
    /// Anything else, with what happened.
    case failure(String)

    init(_ error: any Error) {
        switch error {
        case let e as KeychainError: self = e
        case let e as VaultError:
            switch e {
            case .itemNotFound: self = .itemNotFound
            case .duplicateItem: self = .duplicateItem
            case .itemInvalidated: self = .itemInvalidated
            case .corrupted(let what): self = .corrupted(what)
            case .authenticationRequired: self = .interactionNotAllowed
            case .passcodeNotSet: self = .authentication(.passcodeNotSet)
            case .otherTPM: self = .otherTPM
            case .tpm(.wrongPasscode): self = .authFailed
            case .tpm(.lockout(let s)): self = .authentication(.passcodeLockout(retryAfterSeconds: s))
            case .tpm(let t): self = .tpm(t)
            default: self = .failure(e.description)
            }
        case let e as AuthenticationError:
            switch e {
            case .authenticationFailed: self = .authFailed
            case .userCancel, .systemCancel, .appCancel, .userFallback: self = .userCanceled
            case .notInteractive: self = .interactionNotAllowed
            case .tpm(let t): self = .tpm(t)
            default: self = .authentication(e)
            }
        case let e as FingerprintError: self = KeychainError(AuthenticationError(e))
        case is CancellationError: self = .userCanceled
        default: self = .failure("\(error)")
        }
    }

    /// What to tell the user, or nil for a cancel.
    public var message: String? {
        switch self {
        case .duplicateItem: return "An item with this service and account already exists."
        case .itemNotFound: return "No such item."
        case .authFailed: return "Couldn't verify it's you."
        case .userCanceled: return nil
        case .interactionNotAllowed: return "Authentication is needed, but no interaction is possible."
        case .itemInvalidated: return "This item was invalidated: the enrolled fingers changed and it allows no other way in."
        case .corrupted(let what): return "Stored data is corrupted or was tampered with: \(what)."
        case .authentication(let e): return e.message
        case .tpm(let e): return e.description
        case .otherTPM: return VaultError.otherTPM.description
        case .failure(let text): return text
        }
    }
}

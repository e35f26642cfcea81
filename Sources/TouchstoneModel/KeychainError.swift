/// SecItem's errors, for Linux.
public enum KeychainError: Error, Sendable, Hashable, Codable {
    /// An item with this service and account exists (errSecDuplicateItem).
    case duplicateItem
    /// No such item (errSecItemNotFound).
    case itemNotFound
    /// The finger did not match or the passcode was wrong (errSecAuthFailed).
    case authFailed
    /// The person cancelled (errSecUserCanceled).
    case userCanceled
    /// Authentication is needed and interaction is not allowed
    /// (errSecInteractionNotAllowed).
    case interactionNotAllowed
    /// The enrolled fingers changed and the item allows no other way in.
    case itemInvalidated
    /// The stored data is damaged or was tampered with, and which (errSecDecode).
    case corrupted(String)
    /// The item cannot be stored as given: an empty service or account, a
    /// field or secret over its limit, and which.
    case invalidItem(String)
    /// An authentication error other than the above (lockout, no reader,
    /// no passcode, ...).
    case authentication(AuthenticationError)
    /// The TPM failed or is unreachable.
    case tpm(TPMFailure)
    /// The state folder or the vault could not be used.
    case storage(StorageFailure)
    /// The daemon engine's `touchstoned` could not answer.
    case daemon(DaemonFailure)

    /// What to tell the user, or nil for a cancel.
    public var message: String? {
        switch self {
        case .duplicateItem: "An item with this service and account already exists."
        case .itemNotFound: "No such item."
        case .authFailed: "Couldn't verify it's you."
        case .userCanceled: nil
        case .interactionNotAllowed: "Authentication is needed, but no interaction is possible."
        case .itemInvalidated: "This item was invalidated: the enrolled fingers changed and it allows no other way in."
        case .corrupted(let what): "Stored data is corrupted or was tampered with: \(what)."
        case .invalidItem(let why): "The item cannot be stored: \(why)."
        case .authentication(let error): error.message
        case .tpm(let failure): "The TPM could not be used: \(failure)."
        case .storage(let failure): "Touchstone's state could not be used: \(failure.message)."
        case .daemon(let failure): "\(failure)."
        }
    }
}

extension KeychainError {
    /// The keychain view of an authentication error.
    package init(_ error: AuthenticationError) {
        switch error {
        case .authenticationFailed: self = .authFailed
        case .userCancel, .systemCancel, .appCancel, .userFallback: self = .userCanceled
        case .notInteractive: self = .interactionNotAllowed
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .corrupted(let what): self = .corrupted(what)
        default: self = .authentication(error)
        }
    }
}

extension KeychainError {
    /// The keychain view of a device error, for a keychain record's change
    /// that asks for the passcode as device changes do (`fido delete`).
    package init(device error: DeviceError) {
        switch error {
        case .authentication(let failure): self = KeychainError(failure)
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .corrupted(let what): self = .corrupted(what)
        case .daemon(let failure): self = .daemon(failure)
        case .simulator(let failure): self = .tpm(TPMFailure(.unreachable, failure.description))
        case .passcodeAlreadySet, .invalidPasscode, .fingerNotEnrolled, .enrolledOnAnotherReader:
            self = .corrupted(error.message ?? "\(error)")
        }
    }
}

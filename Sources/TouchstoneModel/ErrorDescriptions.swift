// One line each, lower case, for logs and reports (`Status`' reasons); the
// `message` properties are the sentences to show a person.

extension AuthenticationError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .appCancel, .userCancel, .systemCancel, .userFallback: "cancelled"
        case .authenticationFailed: "authentication failed: the finger did not match, or the passcode was wrong"
        case .biometryLockout: "fingerprint is locked after 5 failed matches; the passcode clears it"
        case .biometryNotAvailable(let failure): "fingerprint unavailable: \(failure)"
        case .biometryNotEnrolled: "no finger is enrolled"
        case .biometryDisconnected: "the fingerprint reader was disconnected"
        case .invalidContext: "the authentication context was invalidated"
        case .notInteractive: "authentication needs an interaction, and none is possible"
        case .passcodeNotSet: "no passcode is set"
        case .passcodeLockout(let seconds?):
            "the TPM is in dictionary-attack lockout; one attempt is restored every \(seconds) s"
        case .passcodeLockout(nil): "the TPM is in dictionary-attack lockout"
        case .readerFailed(let failure): failure.description
        case .interactionFailed(let why): why
        case .tpm(let failure): failure.description
        case .storage(let failure): failure.description
        case .corrupted(let what): "stored data corrupted or tampered with: \(what)"
        case .passcodeThrottled(let seconds): "too many wrong passcodes: touchstoned refuses passcode attempts for \(seconds) s more"
        case .daemon(let failure): failure.description
        }
    }
}

extension KeychainError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .duplicateItem: "an item with this service and account already exists"
        case .itemNotFound: "no such item"
        case .authFailed: AuthenticationError.authenticationFailed.description
        case .userCanceled: "cancelled"
        case .interactionNotAllowed: AuthenticationError.notInteractive.description
        case .itemInvalidated: "the item was invalidated: the enrolled fingers changed and it allows no other way in"
        case .corrupted(let what): AuthenticationError.corrupted(what).description
        case .invalidItem(let why): "invalid item: \(why)"
        case .authentication(let error): error.description
        case .tpm(let failure): failure.description
        case .storage(let failure): failure.description
        case .daemon(let failure): failure.description
        }
    }
}

extension DeviceError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .authentication(let error): error.description
        case .passcodeAlreadySet: "a passcode is already set"
        case .invalidPasscode(let why): "invalid passcode: \(why)"
        case .fingerNotEnrolled(let finger): "\(finger.fprintdName) is not enrolled"
        case .enrolledOnAnotherReader(let reader): "fingers are enrolled on another reader (\(reader)); unenroll them first"
        case .tpm(let failure): failure.description
        case .storage(let failure): failure.description
        case .corrupted(let what): AuthenticationError.corrupted(what).description
        case .simulator(let error): error.description
        case .daemon(let failure): failure.description
        }
    }
}

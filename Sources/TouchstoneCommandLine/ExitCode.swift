/// The exit status of the `touchstone` command, as cli-contract.md lists
/// them. Each case notes the LocalAuthentication or Keychain error it stands
/// for, where there is one.
public enum ExitCode: Int32, CaseIterable, Sendable, Hashable {
    /// The command did what it was asked.
    case success = 0
    /// Any failure without a code of its own; the message says what.
    case failure = 1
    /// The finger did not match, or the passcode was wrong
    /// (LAError.authenticationFailed, errSecAuthFailed).
    case authFailed = 2
    /// Ctrl-C, SIGTERM, or no touch before the timeout
    /// (LAError.userCancel, LAError.systemCancel).
    case cancelled = 3
    /// No usable reader: none, busy or unplugged
    /// (LAError.biometryNotAvailable, LAError.biometryDisconnected).
    case noReader = 4
    /// No finger enrolled (LAError.biometryNotEnrolled).
    case notEnrolled = 5
    /// Biometry locked out after 5 failed matches; the passcode clears it
    /// (LAError.biometryLockout).
    case biometryLockout = 6
    /// No passcode set (LAError.passcodeNotSet).
    case passcodeNotSet = 7
    /// The item does not exist (errSecItemNotFound).
    case itemNotFound = 8
    /// The item already exists (errSecDuplicateItem).
    case duplicateItem = 9
    /// The enrolled fingers changed and the item allows no other way in
    /// (an item protected with biometry-current-set).
    case itemInvalidated = 10
    /// The TPM is unreachable or failed.
    case tpmFailed = 11
    /// The TPM is in dictionary-attack lockout.
    case tpmLockout = 12
    /// Stored data is corrupted or was tampered with (errSecDecode).
    case corrupted = 13
    /// Interaction is needed but impossible: no terminal and no
    /// `--passcode-fd` (LAError.notInteractive, errSecInteractionNotAllowed).
    case notInteractive = 14
    /// The command line was wrong (EX_USAGE from sysexits.h).
    case usage = 64

    /// One line for the exit-code table in the top-level help.
    public var meaning: String {
        switch self {
        case .success: "success"
        case .failure: "other failure (the message says what)"
        case .authFailed: "authentication failed: finger did not match, or wrong passcode"
        case .cancelled: "cancelled: Ctrl-C, SIGTERM, or no touch before the timeout"
        case .noReader: "no usable reader (none, busy, unplugged)"
        case .notEnrolled: "no finger enrolled"
        case .biometryLockout: "biometry locked out after 5 failed matches; the passcode clears it"
        case .passcodeNotSet: "no passcode set"
        case .itemNotFound: "item not found"
        case .duplicateItem: "item already exists"
        case .itemInvalidated: "item invalidated: the enrolled fingers changed and the item allows no other way in"
        case .tpmFailed: "TPM unreachable or failed"
        case .tpmLockout: "TPM dictionary-attack lockout (the message says when to retry, when known)"
        case .corrupted: "stored data corrupted or tampered with"
        case .notInteractive: "interaction needed but impossible (no terminal, no --passcode-fd)"
        case .usage: "usage error"
        }
    }
}

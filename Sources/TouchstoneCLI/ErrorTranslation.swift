import Touchstone
import TouchstoneCommandLine
import TouchstoneFingerprint
import TouchstoneTPM

/// Turns the library's errors into the contract's exit codes, one clear
/// message each, and a hint where one helps. Nothing is dropped: an error
/// without a code of its own keeps its full text under exit 1.
struct ErrorTranslation {
    /// Whether the reader is the simulator's (changes the busy message).
    var simulatedReader: Bool
    /// Whether the TPM is the simulator's (changes the unreachable hint).
    var simulatedTPM: Bool

    func failure(for error: any Error) -> CLIFailure {
        switch error {
        case let failure as CLIFailure: return failure
        case let error as KeychainError: return keychain(error)
        case let error as AuthenticationError: return authentication(error)
        case let error as VaultError: return vault(error)
        case let error as TPMError: return tpm(error)
        case let error as FingerprintError: return fingerprint(error)
        case let error as Swtpm.Failure: return swtpm(error)
        case is CancellationError: return .cancelled
        default: return CLIFailure(.failure, "\(error)")
        }
    }

    func keychain(_ error: KeychainError) -> CLIFailure {
        switch error {
        case .duplicateItem:
            return CLIFailure(.duplicateItem, "an item with this service and account already exists",
                              hint: "replace its secret with 'touchstone update', or delete it first")
        case .itemNotFound: return CLIFailure(.itemNotFound, "no such item", hint: "'touchstone list' shows the items")
        case .authFailed: return authentication(.authenticationFailed)
        case .userCanceled: return .cancelled
        case .interactionNotAllowed: return authentication(.notInteractive)
        case .itemInvalidated:
            return CLIFailure(.itemInvalidated, "the item was invalidated: the enrolled fingers changed and it allows no other way in",
                              hint: "store the secret again with 'touchstone delete' then 'touchstone add'")
        case .corrupted(let what): return CLIFailure(.corrupted, "stored data corrupted or tampered with: \(what)")
        case .authentication(let error): return authentication(error)
        case .tpm(let error): return tpm(error)
        case .otherTPM: return vault(.otherTPM)
        case .failure(let text): return CLIFailure(.failure, text)
        }
    }

    func authentication(_ error: AuthenticationError) -> CLIFailure {
        switch error {
        case .appCancel, .userCancel, .systemCancel, .userFallback: return .cancelled
        case .authenticationFailed:
            return CLIFailure(.authFailed, "authentication failed: the finger did not match, or the passcode was wrong")
        case .biometryLockout:
            return CLIFailure(.biometryLockout, "fingerprint is locked after 5 failed matches; the passcode clears it",
                              hint: "touchstone verify --allow-passcode")
        case .biometryNotAvailable(let reason):
            if reason == FingerprintError.busy.description { return fingerprint(.busy) }
            if reason == AuthenticationContext.readOnlyVaultReason {
                return CLIFailure(.noReader, "fingerprints are not used: \(reason)",
                                  hint: "mount it read-write; items that allow the passcode open with it")
            }
            return CLIFailure(.noReader, "fingerprint unavailable: \(reason)", hint: readerHint)
        case .biometryNotEnrolled:
            return CLIFailure(.notEnrolled, "no finger is enrolled", hint: "touchstone enroll")
        case .biometryDisconnected: return fingerprint(.disconnected)
        case .invalidContext: return CLIFailure(.failure, "the authentication context was invalidated")
        case .notInteractive:
            return CLIFailure(.notInteractive, "the passcode is needed, but there is no terminal to ask it on",
                              hint: "run it in a terminal, or give the passcode on a descriptor: --passcode-fd N")
        case .passcodeNotSet:
            return CLIFailure(.passcodeNotSet, "no passcode is set", hint: "touchstone passcode set")
        case .passcodeLockout(let seconds):
            return CLIFailure(.tpmLockout, TPMError.lockout(retryAfterSeconds: seconds).description,
                              hint: seconds.map { "try again in \($0) s" })
        case .tpm(let error): return tpm(error)
        case .failure(let text): return CLIFailure(.failure, text)
        }
    }

    func vault(_ error: VaultError) -> CLIFailure {
        switch error {
        case .itemNotFound: return keychain(.itemNotFound)
        case .duplicateItem: return keychain(.duplicateItem)
        case .corrupted(let what): return keychain(.corrupted(what))
        case .itemInvalidated: return keychain(.itemInvalidated)
        case .authenticationRequired: return authentication(.notInteractive)
        case .passcodeNotSet: return authentication(.passcodeNotSet)
        case .passcodeAlreadySet:
            return CLIFailure(.failure, "a passcode is already set", hint: "touchstone passcode change")
        case .otherTPM:
            return CLIFailure(.tpmFailed, error.description,
                              hint: simulatedTPM ? "this state was made with a real TPM: use another --home for the simulator" : nil)
        case .tpm(let error): return tpm(error)
        case .storage(let what):
            // "…; run: COMMAND" ends a message that a command fixes.
            if let run = what.range(of: "; run: ", options: .backwards) {
                return CLIFailure(.failure, VaultError.storage(String(what[..<run.lowerBound])).description,
                                  hint: String(what[run.upperBound...]))
            }
            return CLIFailure(.failure, error.description)
        case .futureSchema, .invalidInput: return CLIFailure(.failure, error.description)
        }
    }

    func tpm(_ error: TPMError) -> CLIFailure {
        switch error {
        case .wrongPasscode: return CLIFailure(.authFailed, "wrong passcode")
        case .lockout(let seconds): return authentication(.passcodeLockout(retryAfterSeconds: seconds))
        case .enrolmentChanged: return keychain(.itemInvalidated)
        case .corruptedBlob, .foreignBlob: return CLIFailure(.corrupted, error.description)
        case .permissionDenied:
            return CLIFailure(.tpmFailed, error.description, hint: "see udev/README.md, or try the simulator: touchstone sim start")
        case .unreachable:
            return CLIFailure(.tpmFailed, error.description,
                              hint: simulatedTPM ? "touchstone sim start" : "no TPM here? try the simulator: touchstone sim start, then add --sim")
        default: return CLIFailure(.tpmFailed, error.description)
        }
    }

    func fingerprint(_ error: FingerprintError) -> CLIFailure {
        switch error {
        case .busy:
            if simulatedReader {
                return CLIFailure(.noReader, "the simulated reader is busy: another touchstone process has it open (or 'sim error busy' was injected)",
                                  hint: "wait for that command to finish, or cancel it")
            }
            return CLIFailure(.noReader, "the fingerprint reader is busy: fprintd may be holding it",
                              hint: "finish or cancel the login or lock-screen prompt that uses it, then try again")
        case .disconnected:
            return CLIFailure(.noReader, "the fingerprint reader was disconnected", hint: readerHint)
        case .readerNotFound, .notAvailable, .tooHot, .notSupported, .protocolError, .wrongReader:
            return CLIFailure(.noReader, error.description, hint: readerHint)
        case .nothingEnrolled: return authentication(.biometryNotEnrolled)
        case .timedOut, .cancelled: return .cancelled
        default: return CLIFailure(.failure, error.description)
        }
    }

    func swtpm(_ error: Swtpm.Failure) -> CLIFailure {
        switch error {
        case .notInstalled: return CLIFailure(.failure, error.description, hint: ". scripts/install-deps")
        default: return CLIFailure(.tpmFailed, "the simulator's " + error.description)
        }
    }

    /// With --sim the simulator is known to be running (checked before any
    /// command), so a reader error there was injected: no hint.
    private var readerHint: String? {
        simulatedReader ? nil : "'touchstone status' shows the readers; no reader here? try the simulator: --sim"
    }
}

import TouchstoneClient
import TouchstoneCommandLine

/// Turns the library's errors into the contract's exit codes, one clear
/// message each, and a hint where one helps. Nothing is dropped: an error
/// without a code of its own keeps its full text under exit 1.
package struct ErrorTranslation {
    /// Whether the reader is the simulator's (changes the busy message).
    package var simulatedReader: Bool
    /// Whether the TPM is the simulator's (changes the unreachable hint).
    package var simulatedTPM: Bool

    package init(simulatedReader: Bool, simulatedTPM: Bool) {
        self.simulatedReader = simulatedReader
        self.simulatedTPM = simulatedTPM
    }

    package func failure(for error: any Error) -> CLIFailure {
        switch error {
        case let failure as CLIFailure: failure
        case let error as KeychainError: keychain(error)
        case let error as AuthenticationError: authentication(error)
        case let error as DeviceError: device(error)
        case let error as SimulatorError: simulator(error)
        case let failure as StorageFailure: storage(failure)
        case is CancellationError: .cancelled
        default: CLIFailure(.failure, "\(error)")
        }
    }

    package func keychain(_ error: KeychainError) -> CLIFailure {
        switch error {
        case .duplicateItem:
            CLIFailure(.duplicateItem, error.description, hint: "replace its secret with 'touchstone update', or delete it first")
        case .itemNotFound: CLIFailure(.itemNotFound, error.description, hint: "'touchstone list' shows the items")
        case .authFailed: authentication(.authenticationFailed)
        case .userCanceled: .cancelled
        case .interactionNotAllowed: authentication(.notInteractive)
        case .itemInvalidated:
            CLIFailure(.itemInvalidated, error.description, hint: "store the secret again with 'touchstone delete' then 'touchstone add'")
        case .corrupted: CLIFailure(.corrupted, error.description)
        case .invalidItem(let why): CLIFailure(.failure, "invalid input: \(why)")
        case .authentication(let error): authentication(error)
        case .tpm(let failure): tpm(failure)
        case .storage(let failure): storage(failure)
        case .daemon(let failure): daemon(failure)
        }
    }

    package func authentication(_ error: AuthenticationError) -> CLIFailure {
        switch error {
        case .appCancel, .userCancel, .systemCancel, .userFallback: .cancelled
        case .authenticationFailed: CLIFailure(.authFailed, error.description)
        case .biometryLockout: CLIFailure(.biometryLockout, error.description, hint: "touchstone verify --allow-passcode")
        case .biometryNotAvailable(let failure): reader(failure)
        case .biometryNotEnrolled: CLIFailure(.notEnrolled, error.description, hint: "touchstone enroll")
        case .biometryDisconnected: CLIFailure(.noReader, error.description, hint: readerHint)
        case .invalidContext: CLIFailure(.failure, error.description)
        case .notInteractive:
            CLIFailure(.notInteractive, "the passcode is needed, but there is no terminal to ask it on",
                       hint: "run it in a terminal, or give the passcode on a descriptor: --passcode-fd N")
        case .passcodeNotSet: CLIFailure(.passcodeNotSet, error.description, hint: "touchstone passcode set")
        case .passcodeLockout(let seconds):
            CLIFailure(.tpmLockout, error.description, hint: seconds.map { "try again in \($0) s" })
        case .passcodeThrottled(let seconds):
            CLIFailure(.tpmLockout, error.description, hint: "try again in \(seconds) s")
        case .readerFailed(let failure): CLIFailure(.failure, failure.description)
        case .interactionFailed(let why): CLIFailure(.failure, why)
        case .tpm(let failure): tpm(failure)
        case .storage(let failure): storage(failure)
        case .corrupted: CLIFailure(.corrupted, error.description)
        case .daemon(let failure): daemon(failure)
        }
    }

    package func device(_ error: DeviceError) -> CLIFailure {
        switch error {
        // A device operation checks the passcode only.
        case .authentication(.authenticationFailed): CLIFailure(.authFailed, "wrong passcode")
        case .authentication(let error): authentication(error)
        case .passcodeAlreadySet: CLIFailure(.failure, error.description, hint: "touchstone passcode change")
        case .invalidPasscode(let why): CLIFailure(.failure, "invalid input: \(why)")
        case .fingerNotEnrolled, .enrolledOnAnotherReader: CLIFailure(.failure, error.description)
        case .tpm(let failure): tpm(failure)
        case .storage(let failure): storage(failure)
        case .corrupted: CLIFailure(.corrupted, error.description)
        case .simulator(let error): simulator(error)
        case .daemon(let failure): daemon(failure)
        }
    }

    /// Exit 11 when the daemon cannot be reached or went away; the hint
    /// names its socket.
    package func daemon(_ failure: DaemonFailure) -> CLIFailure {
        switch failure.kind {
        case .unreachable:
            CLIFailure(.tpmFailed, failure.description,
                       hint: simulatedTPM ? "start it with 'touchstone sim start --daemon', or use --embedded"
                                          : "is touchstoned running and listening on \(failure.socket)? Or use --embedded")
        case .lost:
            CLIFailure(.tpmFailed, failure.description,
                       hint: "touchstoned (\(failure.socket)) stopped mid-request; run the command again once it is back")
        case .refused: CLIFailure(.failure, failure.description)
        }
    }

    package func tpm(_ failure: TPMFailure) -> CLIFailure {
        switch failure.kind {
        case .permissionDenied:
            CLIFailure(.tpmFailed, failure.description, hint: "see udev/README.md, or try the simulator: touchstone sim start")
        case .unreachable:
            CLIFailure(.tpmFailed, failure.description,
                       hint: simulatedTPM ? "touchstone sim start" : "no TPM here? try the simulator: touchstone sim start, then add --sim")
        case .otherTPM:
            CLIFailure(.tpmFailed, failure.description,
                       hint: simulatedTPM ? "this state was made with a real TPM: use another --home for the simulator" : nil)
        case .outOfMemory, .failed: CLIFailure(.tpmFailed, failure.description)
        }
    }

    package func reader(_ failure: ReaderFailure) -> CLIFailure {
        switch failure.kind {
        case .busy where simulatedReader:
            CLIFailure(.noReader, "the simulated reader is busy: another touchstone process has it open (or 'sim error busy' was injected)",
                       hint: "wait for that command to finish, or cancel it")
        case .busy:
            CLIFailure(.noReader, "the fingerprint reader is busy: fprintd may be holding it",
                       hint: "finish or cancel the login or lock-screen prompt that uses it, then try again")
        case .readOnlyVault:
            CLIFailure(.noReader, "fingerprints are not used: \(failure)",
                       hint: "mount it read-write; items that allow the passcode open with it")
        case .notFound, .unusable, .refused:
            CLIFailure(.noReader, AuthenticationError.biometryNotAvailable(failure).description, hint: readerHint)
        }
    }

    package func storage(_ failure: StorageFailure) -> CLIFailure {
        CLIFailure(.failure, failure.description, hint: failure.fix)
    }

    package func simulator(_ error: SimulatorError) -> CLIFailure {
        switch error {
        case .notInstalled: CLIFailure(.failure, error.description, hint: ". scripts/install-deps")
        case .stateFolderTooDeep(_, _, let longestHome):
            CLIFailure(.failure, error.description, hint: "use a shorter --home or TOUCHSTONE_HOME (at most \(longestHome) bytes)")
        case .cannotCreate, .walkthroughFailed: CLIFailure(.failure, error.description)
        case .didNotStart, .didNotStop: CLIFailure(.tpmFailed, "the simulator's " + error.description)
        case .tpm(let failure): tpm(failure)
        case .readerNotOpen:
            CLIFailure(.noReader, error.description,
                       hint: "run a command that waits for a touch with --sim first, e.g. touchstone --sim verify")
        case .cancelled: .cancelled
        case .wrongReaderKind, .badImage: CLIFailure(.failure, error.description)
        }
    }

    /// With --sim the simulator is known to be running (checked before any
    /// command), so a reader error there was injected: no hint.
    private var readerHint: String? {
        simulatedReader ? nil : "'touchstone status' shows the readers; no reader here? try the simulator: --sim"
    }
}

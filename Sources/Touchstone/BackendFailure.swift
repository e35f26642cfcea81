import TouchstoneFingerprint
import TouchstoneTPM
import TouchstoneVault

/// The one reading of what the backends throw. Every backend error is
/// classified here, once; the public errors (`AuthenticationError`,
/// `KeychainError`, `DeviceError`) are each built from this classification,
/// so a backend error means the same whichever call it surfaced through.
package enum BackendFailure: Error {
    case wrongPasscode
    case passcodeLockout(retryAfterSeconds: UInt32?)
    case passcodeNotSet
    case passcodeAlreadySet
    case itemNotFound
    case duplicateItem
    case itemInvalidated
    /// The vault was asked for what needs an authentication not given.
    case authenticationRequired
    case corrupted(String)
    case invalidInput(String)
    case tpm(TPMFailure)
    case storage(StorageFailure)
    case readerUnavailable(ReaderFailure)
    case readerRefused(ReaderFailure)
    case readerDisconnected
    case nothingEnrolled
    case fingerNotEnrolled(Finger)
    case enrolledOnAnotherReader(String)
    /// No touch before the timeout.
    case timedOut
    case cancelled
    /// The simulator the configuration names cannot be used.
    case simulator(SimulatorError)
    /// An error that is public already.
    case authentication(AuthenticationError)

    package init(vault error: VaultError) {
        switch error {
        case .itemNotFound: self = .itemNotFound
        case .duplicateItem: self = .duplicateItem
        case .corrupted(let what): self = .corrupted(what)
        case .itemInvalidated: self = .itemInvalidated
        case .authenticationRequired: self = .authenticationRequired
        case .passcodeNotSet: self = .passcodeNotSet
        case .passcodeAlreadySet: self = .passcodeAlreadySet
        case .otherTPM: self = .tpm(TPMFailure(.otherTPM, error.description))
        case .futureSchema: self = .storage(StorageFailure(.newerFormat, error.description))
        case .storage(let failure): self = .storage(failure)
        case .invalidInput(let what): self = .invalidInput(what)
        case .tpm(let error): self.init(tpm: error)
        case .fingersTampered: self = .corrupted(error.description)
        case .concurrentChange: self = .storage(StorageFailure(.database, error.description))
        }
    }

    package init(tpm error: TPMError) {
        switch error {
        case .wrongPasscode: self = .wrongPasscode
        case .lockout(let seconds): self = .passcodeLockout(retryAfterSeconds: seconds)
        case .enrollmentChanged: self = .itemInvalidated
        case .corruptedBlob, .nvIndexReplaced, .passcodeChanged: self = .corrupted(error.description)
        case .unreachable, .permissionDenied, .bootStateChanged, .foreignBlob, .branchNotAvailable,
             .storageKeyMismatch, .enrollmentIndexMissing, .nvIndexInUse, .outOfMemory, .invalidArgument, .other:
            self = .tpm(error.failure)
        }
    }

    package init(reader error: FingerprintError) {
        switch error {
        case .cancelled: self = .cancelled
        case .timedOut: self = .timedOut
        case .disconnected: self = .readerDisconnected
        case .nothingEnrolled: self = .nothingEnrolled
        case .notEnrolled(let finger): self = .fingerNotEnrolled(finger)
        case .busy: self = .readerUnavailable(ReaderFailure(.busy, error.description))
        case .readerNotFound: self = .readerUnavailable(ReaderFailure(.notFound, error.description))
        case .notAvailable, .notSupported, .tooHot, .protocolError, .wrongReader:
            self = .readerUnavailable(ReaderFailure(.unusable, error.description))
        case .dataInvalid, .dataNotFound, .dataFull, .dataDuplicate, .invalidPrint, .corruptRecord, .storage:
            self = .readerRefused(ReaderFailure(.refused, error.description))
        }
    }
}

extension AuthenticationError {
    /// The authentication view. Item and enrolment outcomes do not arise
    /// while authenticating; should one, it is reported as the stored data
    /// not matching what the authentication found.
    package init(_ failure: BackendFailure) {
        switch failure {
        case .wrongPasscode: self = .authenticationFailed
        case .passcodeLockout(let seconds): self = .passcodeLockout(retryAfterSeconds: seconds)
        case .passcodeNotSet: self = .passcodeNotSet
        case .authenticationRequired: self = .notInteractive
        case .corrupted(let what): self = .corrupted(what)
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .readerUnavailable(let failure): self = .biometryNotAvailable(failure)
        case .readerRefused(let failure): self = .readerFailed(failure)
        case .readerDisconnected: self = .biometryDisconnected
        case .nothingEnrolled, .fingerNotEnrolled: self = .biometryNotEnrolled
        case .timedOut: self = .systemCancel
        case .cancelled: self = .userCancel
        case .authentication(let error): self = error
        case .simulator(let error): self = .tpm(TPMFailure(.unreachable, error.description))
        case .passcodeAlreadySet, .itemNotFound, .duplicateItem, .itemInvalidated, .invalidInput, .enrolledOnAnotherReader:
            self = .corrupted("the vault's state does not match the authentication (\(failure))")
        }
    }
}

extension KeychainError {
    package init(_ failure: BackendFailure) {
        switch failure {
        case .wrongPasscode: self = .authFailed
        case .itemNotFound: self = .itemNotFound
        case .duplicateItem: self = .duplicateItem
        case .itemInvalidated: self = .itemInvalidated
        case .authenticationRequired: self = .interactionNotAllowed
        case .corrupted(let what): self = .corrupted(what)
        case .invalidInput(let what): self = .invalidItem(what)
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .timedOut, .cancelled: self = .userCanceled
        case .authentication(let error): self = KeychainError(error)
        case .passcodeLockout, .passcodeNotSet, .readerUnavailable, .readerRefused, .readerDisconnected,
             .nothingEnrolled, .fingerNotEnrolled, .simulator:
            self = KeychainError(AuthenticationError(failure))
        case .passcodeAlreadySet, .enrolledOnAnotherReader:
            self = .corrupted("the vault's state does not match the item (\(failure))")
        }
    }

}

extension DeviceError {
    package init(_ failure: BackendFailure) {
        switch failure {
        case .passcodeAlreadySet: self = .passcodeAlreadySet
        case .invalidInput(let what): self = .invalidPasscode(what)
        case .fingerNotEnrolled(let finger): self = .fingerNotEnrolled(finger)
        case .enrolledOnAnotherReader(let reader): self = .enrolledOnAnotherReader(reader)
        case .corrupted(let what): self = .corrupted(what)
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .simulator(let error): self = .simulator(error)
        case .authentication(let error): self = DeviceError(error)
        case .itemNotFound, .duplicateItem, .itemInvalidated:
            self = .corrupted("the vault's items do not match its keys (\(failure))")
        case .wrongPasscode, .passcodeLockout, .passcodeNotSet, .authenticationRequired, .readerUnavailable,
             .readerRefused, .readerDisconnected, .nothingEnrolled, .timedOut, .cancelled:
            self = .authentication(AuthenticationError(failure))
        }
    }

}

/// Runs `body` (on the caller's isolation), its failure made public.
/// A body reads each backend call's error as a `BackendFailure` where it
/// arises (`try vaultCall(vault.add(...))`, `tpmCall`, `readerCall`,
/// `simulatorCall`, `authenticationCall` below); the engine's own checks
/// throw a `BackendFailure` directly.
func keychain<R>(isolation: isolated (any Actor)? = #isolation,
                 _ body: () async throws(BackendFailure) -> R) async throws(KeychainError) -> R {
    do throws(BackendFailure) { return try await body() } catch { throw KeychainError(error) }
}

func device<R>(isolation: isolated (any Actor)? = #isolation,
               _ body: () async throws(BackendFailure) -> R) async throws(DeviceError) -> R {
    do throws(BackendFailure) { return try await body() } catch { throw DeviceError(error) }
}

func authentication<R>(isolation: isolated (any Actor)? = #isolation,
                       _ body: () async throws(BackendFailure) -> R) async throws(AuthenticationError) -> R {
    do throws(BackendFailure) { return try await body() } catch { throw AuthenticationError(error) }
}

// MARK: - One backend call, its error read

/// A vault call, its error read as a `BackendFailure`.
@discardableResult
package func vaultCall<R>(_ body: @autoclosure () throws(VaultError) -> R) throws(BackendFailure) -> R {
    do throws(VaultError) { return try body() } catch { throw BackendFailure(vault: error) }
}

/// A TPM call, its error read as a `BackendFailure`.
@discardableResult
package func tpmCall<R>(_ body: @autoclosure () throws(TPMError) -> R) throws(BackendFailure) -> R {
    do throws(TPMError) { return try body() } catch { throw BackendFailure(tpm: error) }
}

/// A reader call (on the caller's isolation), its error read as a `BackendFailure`.
@discardableResult
package func readerCall<R>(isolation: isolated (any Actor)? = #isolation,
                           _ body: @autoclosure () async throws(FingerprintError) -> R) async throws(BackendFailure) -> R {
    do throws(FingerprintError) { return try await body() } catch { throw BackendFailure(reader: error) }
}

/// A use of the simulator the configuration names, its error kept.
@discardableResult
package func simulatorCall<R>(_ body: @autoclosure () throws(SimulatorError) -> R) throws(BackendFailure) -> R {
    do throws(SimulatorError) { return try body() } catch { throw .simulator(error) }
}

/// A call that fails with a public authentication error already (the
/// daemon's throttle, the person at the prompt), its error kept.
@discardableResult
package func authenticationCall<R>(isolation: isolated (any Actor)? = #isolation,
                                   _ body: @autoclosure () async throws(AuthenticationError) -> R) async throws(BackendFailure) -> R {
    do throws(AuthenticationError) { return try await body() } catch { throw .authentication(error) }
}

import Testing
import TestScopes
import Touchstone
import TouchstoneFingerprint
import TouchstoneTPM
import TouchstoneVault

/// One backend error and the public error each of the three public types
/// makes of it (through `BackendFailure`, the one translation both engines
/// use).
struct BackendFailureRow: Sendable, CustomTestStringConvertible {
    enum Backend: Sendable {
        case tpm(TPMError)
        case vault(VaultError)
        case reader(FingerprintError)
        /// The simulator the configuration names, unusable.
        case simulator(SimulatorError)
        /// A public error already (the daemon's throttle, the prompt, the
        /// engine's own checks).
        case authentication(AuthenticationError)
    }

    let backend: Backend
    let authentication: AuthenticationError
    let keychain: KeychainError
    let device: DeviceError

    var testDescription: String {
        switch backend {
        case .tpm(let error): "TPMError \(error)"
        case .vault(let error): "VaultError \(error)"
        case .reader(let error): "FingerprintError \(error)"
        case .simulator(let error): "SimulatorError \(error)"
        case .authentication(let error): "AuthenticationError \(error)"
        }
    }

    var failure: BackendFailure {
        switch backend {
        case .tpm(let error): BackendFailure(tpm: error)
        case .vault(let error): BackendFailure(vault: error)
        case .reader(let error): BackendFailure(reader: error)
        case .simulator(let error): .simulator(error)
        case .authentication(let error): .authentication(error)
        }
    }

    /// The same error read by the call helper an engine body wraps a
    /// backend call in (`try vaultCall(vault.add(...))`); nil if it did not throw.
    func failureThroughCall() async -> BackendFailure? {
        func fail<E: Error>(_ error: E) throws(E) { throw error }
        func failing<E: Error>(_ error: E) async throws(E) { throw error }
        do throws(BackendFailure) {
            switch backend {
            case .tpm(let error): try tpmCall(fail(error))
            case .vault(let error): try vaultCall(fail(error))
            case .reader(let error): try await readerCall(await failing(error))
            case .simulator(let error): try simulatorCall(fail(error))
            case .authentication(let error): try await authenticationCall(await failing(error))
            }
            return nil
        } catch {
            return error
        }
    }
}

// MARK: - The table

private func row(_ backend: BackendFailureRow.Backend, _ authentication: AuthenticationError,
                 _ keychain: KeychainError, _ device: DeviceError) -> BackendFailureRow {
    BackendFailureRow(backend: backend, authentication: authentication, keychain: keychain, device: device)
}

/// A TPM failure: the same in all three.
private func tpmFailure(_ backend: BackendFailureRow.Backend, _ failure: TPMFailure) -> BackendFailureRow {
    row(backend, .tpm(failure), .tpm(failure), .tpm(failure))
}

/// Damage: the same in all three.
private func damage(_ backend: BackendFailureRow.Backend, _ what: String) -> BackendFailureRow {
    row(backend, .corrupted(what), .corrupted(what), .corrupted(what))
}

/// A storage failure: the same in all three.
private func storage(_ backend: BackendFailureRow.Backend, _ failure: StorageFailure) -> BackendFailureRow {
    row(backend, .storage(failure), .storage(failure), .storage(failure))
}

/// An outcome of authenticating: the authentication's error, the keychain
/// and the device calls carry it.
private func authenticating(_ backend: BackendFailureRow.Backend, _ error: AuthenticationError,
                            keychain: KeychainError? = nil) -> BackendFailureRow {
    row(backend, error, keychain ?? .authentication(error), .authentication(error))
}

/// An outcome that does not arise while authenticating: damage there.
private func notAuthenticating(_ name: String) -> AuthenticationError {
    .corrupted("the vault's state does not match the authentication (\(name))")
}

private let reader = ReaderIdentity(driver: "virtual_device", deviceID: "0")
private let otherReader = ReaderIdentity(driver: "goodixmoc", deviceID: "1-2")
private let diskFull = StorageFailure(.database, "disk I/O error")

private let tpmRows: [BackendFailureRow] = {
    func described(_ error: TPMError) -> String { error.description }
    let invalidated = TPMError.enrollmentChanged
    return [
        tpmFailure(.tpm(.unreachable(detail: "no swtpm")), TPMFailure(.unreachable, "TPM unreachable: no swtpm")),
        tpmFailure(.tpm(.permissionDenied(path: "/dev/tpmrm0")),
                   TPMFailure(.permissionDenied, described(.permissionDenied(path: "/dev/tpmrm0")))),
        row(.tpm(invalidated), notAuthenticating("itemInvalidated"), .itemInvalidated,
            .corrupted("the vault's items do not match its keys (itemInvalidated)")),
        tpmFailure(.tpm(.bootStateChanged), TPMFailure(.failed, described(.bootStateChanged))),
        damage(.tpm(.passcodeChanged), described(.passcodeChanged)),
        damage(.tpm(.nvIndexReplaced(handle: 0x0150_0020)), described(.nvIndexReplaced(handle: 0x0150_0020))),
        row(.tpm(.wrongPasscode), .authenticationFailed, .authFailed, .authentication(.authenticationFailed)),
        authenticating(.tpm(.lockout(retryAfterSeconds: 600)), .passcodeLockout(retryAfterSeconds: 600)),
        authenticating(.tpm(.lockout(retryAfterSeconds: nil)), .passcodeLockout(retryAfterSeconds: nil)),
        tpmFailure(.tpm(.foreignBlob), TPMFailure(.otherTPM, described(.foreignBlob))),
        damage(.tpm(.corruptedBlob(detail: "checksum mismatch")), described(.corruptedBlob(detail: "checksum mismatch"))),
        tpmFailure(.tpm(.branchNotAvailable("no passcode branch")),
                   TPMFailure(.failed, described(.branchNotAvailable("no passcode branch")))),
        tpmFailure(.tpm(.storageKeyMismatch(detail: "another TPM")),
                   TPMFailure(.otherTPM, described(.storageKeyMismatch(detail: "another TPM")))),
        tpmFailure(.tpm(.enrollmentIndexMissing(handle: 0x0150_0020)),
                   TPMFailure(.failed, described(.enrollmentIndexMissing(handle: 0x0150_0020)))),
        tpmFailure(.tpm(.nvIndexInUse(handle: 0x0150_0020)), TPMFailure(.failed, described(.nvIndexInUse(handle: 0x0150_0020)))),
        tpmFailure(.tpm(.outOfMemory(detail: "no slot")), TPMFailure(.outOfMemory, described(.outOfMemory(detail: "no slot")))),
        tpmFailure(.tpm(.invalidArgument("too long")), TPMFailure(.failed, described(.invalidArgument("too long")))),
        tpmFailure(.tpm(.other(code: 0x922, text: "tpm:error(2.0): ...")),
                   TPMFailure(.failed, described(.other(code: 0x922, text: "tpm:error(2.0): ...")), code: 0x922)),
    ]
}()

private let vaultRows: [BackendFailureRow] = {
    func described(_ error: VaultError) -> String { error.description }
    return [
        row(.vault(.itemNotFound), notAuthenticating("itemNotFound"), .itemNotFound,
            .corrupted("the vault's items do not match its keys (itemNotFound)")),
        row(.vault(.duplicateItem), notAuthenticating("duplicateItem"), .duplicateItem,
            .corrupted("the vault's items do not match its keys (duplicateItem)")),
        damage(.vault(.corrupted("an item's attributes do not parse")), "an item's attributes do not parse"),
        row(.vault(.itemInvalidated), notAuthenticating("itemInvalidated"), .itemInvalidated,
            .corrupted("the vault's items do not match its keys (itemInvalidated)")),
        row(.vault(.authenticationRequired), .notInteractive, .interactionNotAllowed, .authentication(.notInteractive)),
        authenticating(.vault(.passcodeNotSet), .passcodeNotSet),
        row(.vault(.passcodeAlreadySet), notAuthenticating("passcodeAlreadySet"),
            .corrupted("the vault's state does not match the item (passcodeAlreadySet)"), .passcodeAlreadySet),
        tpmFailure(.vault(.otherTPM), TPMFailure(.otherTPM, described(.otherTPM))),
        storage(.vault(.futureSchema(9)), StorageFailure(.newerFormat, described(.futureSchema(9)))),
        storage(.vault(.storage(diskFull)), diskFull),
        row(.vault(.invalidInput("the account is empty")), notAuthenticating("invalidInput(\"the account is empty\")"),
            .invalidItem("the account is empty"), .invalidPasscode("the account is empty")),
        // The TPM's errors read as the TPM's, wrapped or not.
        row(.vault(.tpm(.wrongPasscode)), .authenticationFailed, .authFailed, .authentication(.authenticationFailed)),
        tpmFailure(.vault(.tpm(.unreachable(detail: "no swtpm"))), TPMFailure(.unreachable, "TPM unreachable: no swtpm")),
        damage(.vault(.fingersTampered("a record replaced")), described(.fingersTampered("a record replaced"))),
        storage(.vault(.concurrentChange), StorageFailure(.database, described(.concurrentChange))),
    ]
}()

private let readerRows: [BackendFailureRow] = {
    func unavailable(_ error: FingerprintError, _ kind: ReaderFailure.Kind) -> BackendFailureRow {
        authenticating(.reader(error), .biometryNotAvailable(ReaderFailure(kind, error.description)))
    }
    func refused(_ error: FingerprintError) -> BackendFailureRow {
        authenticating(.reader(error), .readerFailed(ReaderFailure(.refused, error.description)))
    }
    return [
        authenticating(.reader(.cancelled), .userCancel, keychain: .userCanceled),
        authenticating(.reader(.timedOut), .systemCancel, keychain: .userCanceled),
        authenticating(.reader(.disconnected), .biometryDisconnected),
        authenticating(.reader(.nothingEnrolled), .biometryNotEnrolled),
        row(.reader(.notEnrolled(.leftThumb)), .biometryNotEnrolled, .authentication(.biometryNotEnrolled),
            .fingerNotEnrolled(.leftThumb)),
        unavailable(.busy, .busy),
        unavailable(.readerNotFound(reader), .notFound),
        unavailable(.notAvailable(reason: "the device needs to be opened first"), .unusable),
        unavailable(.notSupported(operation: "identify"), .unusable),
        unavailable(.tooHot, .unusable),
        unavailable(.protocolError, .unusable),
        unavailable(.wrongReader(expected: reader, actual: otherReader), .unusable),
        refused(.dataInvalid),
        refused(.dataNotFound),
        refused(.dataFull),
        refused(.dataDuplicate),
        refused(.invalidPrint(finger: .rightIndex, reason: "truncated")),
        refused(.corruptRecord(finger: .rightIndex, reason: "checksum mismatch")),
        refused(.storage(reason: "cannot read the record")),
    ]
}()

private let simulatorRows: [BackendFailureRow] = {
    func unreachable(_ error: SimulatorError) -> BackendFailureRow {
        let failure = TPMFailure(.unreachable, error.description)
        return row(.simulator(error), .tpm(failure), .tpm(failure), .simulator(error))
    }
    return [
        unreachable(.notInstalled("swtpm")),
        unreachable(.stateFolderTooDeep(path: "/home/a/.touchstone/sim/reader.sock", limit: 107, longestHome: 80)),
        unreachable(.didNotStart("swtpm exited")),
    ]
}()

/// The engine's own public errors pass through unchanged.
private let engineRows: [BackendFailureRow] = [
    authenticating(.authentication(.passcodeNotSet), .passcodeNotSet),
    authenticating(.authentication(.notInteractive), .notInteractive, keychain: .interactionNotAllowed),
    authenticating(.authentication(.biometryLockout), .biometryLockout),
    authenticating(.authentication(.biometryNotEnrolled), .biometryNotEnrolled),
    authenticating(.authentication(.authenticationFailed), .authenticationFailed, keychain: .authFailed),
    authenticating(.authentication(.userFallback), .userFallback, keychain: .userCanceled),
    authenticating(.authentication(.passcodeLockout(retryAfterSeconds: 30)), .passcodeLockout(retryAfterSeconds: 30)),
]

@Suite("BackendFailure: every backend error, read once, as the three public errors", .offPool)
struct BackendFailureTests {
    @Test("a TPM error", arguments: tpmRows)
    func tpm(_ row: BackendFailureRow) async {
        await check(row)
    }

    @Test("a vault error", arguments: vaultRows)
    func vault(_ row: BackendFailureRow) async {
        await check(row)
    }

    @Test("a fingerprint reader error", arguments: readerRows)
    func reader(_ row: BackendFailureRow) async {
        await check(row)
    }

    @Test("a simulator error", arguments: simulatorRows)
    func simulator(_ row: BackendFailureRow) async {
        await check(row)
    }

    @Test("an authentication error of the engine's own", arguments: engineRows)
    func engine(_ row: BackendFailureRow) async {
        await check(row)
    }

    /// The row's error read by its initialiser and by its call helper, and
    /// (the daemon's own uses) as a device error directly.
    private func check(_ row: BackendFailureRow) async {
        let throughCall = await row.failureThroughCall()
        #expect(throughCall != nil)
        for failure in [row.failure] + (throughCall.map { [$0] } ?? []) {
            #expect(AuthenticationError(failure) == row.authentication)
            #expect(KeychainError(failure) == row.keychain)
            #expect(DeviceError(failure) == row.device)
        }
        switch row.backend {
        case .tpm(let error): #expect(DeviceError(tpm: error) == row.device)
        case .vault(let error): #expect(DeviceError(vault: error) == row.device)
        case .reader, .simulator, .authentication: break
        }
    }

    /// Every case of the backends' errors has a row (counted by a switch
    /// with no default: a new case fails to compile here until it has one).
    @Test("the table covers every case of TPMError, VaultError and FingerprintError")
    func everyCase() {
        func tpmCase(_ error: TPMError) -> String {
            switch error {
            case .unreachable: "unreachable"
            case .permissionDenied: "permissionDenied"
            case .enrollmentChanged: "enrollmentChanged"
            case .bootStateChanged: "bootStateChanged"
            case .passcodeChanged: "passcodeChanged"
            case .nvIndexReplaced: "nvIndexReplaced"
            case .wrongPasscode: "wrongPasscode"
            case .lockout: "lockout"
            case .foreignBlob: "foreignBlob"
            case .corruptedBlob: "corruptedBlob"
            case .branchNotAvailable: "branchNotAvailable"
            case .storageKeyMismatch: "storageKeyMismatch"
            case .enrollmentIndexMissing: "enrollmentIndexMissing"
            case .nvIndexInUse: "nvIndexInUse"
            case .outOfMemory: "outOfMemory"
            case .invalidArgument: "invalidArgument"
            case .other: "other"
            }
        }
        func vaultCase(_ error: VaultError) -> String {
            switch error {
            case .itemNotFound: "itemNotFound"
            case .duplicateItem: "duplicateItem"
            case .corrupted: "corrupted"
            case .itemInvalidated: "itemInvalidated"
            case .authenticationRequired: "authenticationRequired"
            case .passcodeNotSet: "passcodeNotSet"
            case .passcodeAlreadySet: "passcodeAlreadySet"
            case .otherTPM: "otherTPM"
            case .futureSchema: "futureSchema"
            case .storage: "storage"
            case .invalidInput: "invalidInput"
            case .tpm: "tpm"
            case .fingersTampered: "fingersTampered"
            case .concurrentChange: "concurrentChange"
            }
        }
        func readerCase(_ error: FingerprintError) -> String {
            switch error {
            case .readerNotFound: "readerNotFound"
            case .notAvailable: "notAvailable"
            case .notSupported: "notSupported"
            case .busy: "busy"
            case .disconnected: "disconnected"
            case .tooHot: "tooHot"
            case .protocolError: "protocolError"
            case .dataInvalid: "dataInvalid"
            case .dataNotFound: "dataNotFound"
            case .dataFull: "dataFull"
            case .dataDuplicate: "dataDuplicate"
            case .timedOut: "timedOut"
            case .cancelled: "cancelled"
            case .invalidPrint: "invalidPrint"
            case .wrongReader: "wrongReader"
            case .corruptRecord: "corruptRecord"
            case .notEnrolled: "notEnrolled"
            case .nothingEnrolled: "nothingEnrolled"
            case .storage: "storage"
            }
        }
        var tpm = Set<String>(), vault = Set<String>(), reader = Set<String>()
        for row in tpmRows + vaultRows + readerRows {
            switch row.backend {
            case .tpm(let error): tpm.insert(tpmCase(error))
            case .vault(let error): vault.insert(vaultCase(error))
            case .reader(let error): reader.insert(readerCase(error))
            case .simulator, .authentication: break
            }
        }
        #expect(tpm.count == 17)
        #expect(vault.count == 14)
        #expect(reader.count == 19)
    }
}

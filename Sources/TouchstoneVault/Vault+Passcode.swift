import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// The passcode and the enrolment state, as the vault sees them.
///
/// Setting the passcode defines the TPM's enrolment-state index and makes
/// the three class keys; changing it re-seals them (ObjectChangeAuth) in one
/// database commit; removing it destroys them, so every item that needs the
/// passcode or biometry becomes unusable, and items kept "when passcode set"
/// are deleted.
///
/// The index's authValue is derived from the passcode class key's secret
/// half, which only the TPM releases, and only for the passcode: writing
/// the index needs the passcode as before, but a passcode change leaves
/// the index alone, so it cannot stop half-way between the TPM and the
/// database (moving the index's authValue with NV_ChangeAuth could: the TPM
/// took the new passcode, the database still had the old one).
extension Vault {
    /// meta `index_auth`: how the index's authValue is made. Absent in
    /// vaults made before: there it is the passcode's own authValue, moved
    /// to the derived one at the next enrolment change or passcode change.
    static let indexAuthScheme = Array("passcode-class-key/v1".utf8)

    /// The index's authValue for a passcode class key's secret half.
    static func indexAuth(passcodeKeySecret: SecureBytes) -> PasscodeAuth {
        PasscodeAuth(passcode: Crypto.subkey(passcodeKeySecret, "enrolment-index-auth"))
    }

    /// Checks the passcode with the TPM and returns the authValue that
    /// writes the enrolment index, with the proof (which holds the opened
    /// passcode class key).
    ///
    /// A vault from before the derived authValue (no `index_auth`) is moved
    /// to it here, once: NV_ChangeAuth from the passcode, then `index_auth`
    /// recorded. Stopped in between, the next call finds the index refusing
    /// the passcode and taking the derived value (one failed try on the
    /// TPM's dictionary-attack count, once). `interruptedNew`: the new
    /// passcode of a change, which such a vault's index may have taken
    /// already if an earlier change of the old kind was cut short.
    func indexAuth(_ passcode: PasscodeAuth, interruptedNew: PasscodeAuth? = nil) throws -> (PasscodeAuth, VaultProof) {
        guard let index = try enrollmentIndex() else { throw VaultError.passcodeNotSet }
        let key = try passcodeClassKey()
        let proof = try verifyPasscode(passcode)
        guard let secret = proof.openedClassKeys[key.id] else { throw VaultError.corrupted("the passcode class key") }
        let derived = Self.indexAuth(passcodeKeySecret: secret)
        if try meta("index_auth") != Self.indexAuthScheme {
            do {
                try tpm.changeEnrollmentIndexPasscode(index, from: passcode, to: derived)
            } catch TPMError.wrongPasscode {
                let state = try withTPM { try tpm.readEnrollmentState(index) }
                do {
                    try tpm.writeEnrollmentState(index, state: state, passcode: derived)
                } catch TPMError.wrongPasscode where interruptedNew != nil {
                    try withTPM { try tpm.changeEnrollmentIndexPasscode(index, from: interruptedNew!, to: derived) }
                } catch let error as TPMError {
                    throw VaultError.tpm(error)
                }
            } catch let error as TPMError {
                throw VaultError.tpm(error)
            }
            try setMeta("index_auth", Self.indexAuthScheme)
        }
        return (derived, proof)
    }

    package var isPasscodeSet: Bool { (try? enrollmentIndex()) != nil }

    /// The enrolment-state NV index, when a passcode is set.
    package func enrollmentIndex() throws -> UInt32? {
        try metaInt("nv_index").map { UInt32(truncatingIfNeeded: $0) }
    }

    /// The domain state on the TPM now (nil without a passcode).
    package func currentDomainState() throws -> [UInt8]? {
        guard let index = try enrollmentIndex() else { return nil }
        return try withTPM { try tpm.readEnrollmentState(index) }
    }

    /// Sets the first passcode. `domainState` is the enrolment set's state
    /// now (with no finger: any fresh random value).
    package func setPasscode(_ passcode: PasscodeAuth, domainState: [UInt8]) throws {
        try requireWritable()
        guard try enrollmentIndex() == nil else { throw VaultError.passcodeAlreadySet }
        let (passPK, passSK) = Crypto.keyPair()
        let index = try withTPM { try tpm.freeEnrollmentIndex() }
        try withTPM {
            try tpm.defineEnrollmentIndex(index, passcode: Self.indexAuth(passcodeKeySecret: passSK), initialState: domainState)
        }
        do {
            let condition = BiometricCondition(nvIndex: index, domainState: domainState)
            let (anyPK, anySK) = Crypto.keyPair()
            let passBlob = try withTPM { try tpm.seal(passSK, policy: .passcodeOnly, passcode: passcode) }
            let anyBlob = try withTPM { try tpm.seal(anySK, policy: .biometricOrPasscode(condition), passcode: passcode) }
            try db.transaction {
                let now = Date().timeIntervalSince1970
                try db.query("INSERT INTO class_keys(kind, public, sealed, created) VALUES('passcode', ?, ?, ?)",
                             [.blob(passPK), .blob(passBlob.serialized()), .real(now)])
                try db.query("INSERT INTO class_keys(kind, public, sealed, created) VALUES('biometry-any', ?, ?, ?)",
                             [.blob(anyPK), .blob(anyBlob.serialized()), .real(now)])
                try insertCurrentSetKey(index: index, state: domainState)
                try setMetaInt("nv_index", Int(index))
                try setMeta("index_auth", Self.indexAuthScheme)
                try setMetaInt("biometric_failures", 0)
            }
        } catch {
            try? tpm.undefineEnrollmentIndex(index)
            throw error
        }
    }

    /// Checks the passcode with the TPM (by unsealing the passcode class key;
    /// a wrong one counts against the TPM's dictionary-attack limit). The
    /// proof it returns carries the opened class key, so reading a passcode
    /// item with it needs no second unseal.
    @discardableResult
    package func verifyPasscode(_ passcode: PasscodeAuth) throws -> VaultProof {
        let key = try passcodeClassKey()
        var proof = VaultProof(passcode: passcode)
        proof.openedClassKeys[key.id] = try openClassKey(key, proof: proof)
        return proof
    }

    func passcodeClassKey() throws -> ClassKey {
        guard try enrollmentIndex() != nil,
              let key = try classKeys().values.filter({ $0.kind == .passcode }).max(by: { $0.id < $1.id }) else {
            throw VaultError.passcodeNotSet
        }
        return key
    }

    /// Replaces the passcode. Nothing changes if `old` is wrong. The TPM
    /// re-seals the class keys (which changes nothing on the TPM: the old
    /// blobs stay valid until the database stops naming them), then one
    /// database commit switches to them: a crash anywhere leaves the old
    /// passcode or the new one in full. The enrolment index is not touched
    /// (its authValue comes from the passcode class key, which keeps its
    /// secret half), except once for a vault from before that.
    package func changePasscode(from old: PasscodeAuth, to new: PasscodeAuth) throws {
        try requireWritable()
        _ = try indexAuth(old, interruptedNew: new)  // checks `old`
        let keys = try classKeys().values.filter { $0.kind == .passcode || $0.kind == .biometryAny }
        var resealed: [(Int64, [UInt8])] = []
        for key in keys {
            let blob: SealedBlob
            do { blob = try SealedBlob(serialized: key.sealed) } catch { throw VaultError.corrupted("a class key record") }
            resealed.append((key.id, try withTPM { try tpm.resealForNewPasscode(blob, from: old, to: new) }.serialized()))
        }
        try db.transaction {
            for (id, blob) in resealed {
                try db.query("UPDATE class_keys SET sealed = ?, previous = NULL WHERE id = ?", [.blob(blob), .integer(id)])
            }
            try setMetaInt("biometric_failures", 0)
        }
    }

    /// Removes the passcode (after checking it): every finger's class keys
    /// go, the index goes, items kept "when passcode set" are deleted.
    /// Returns how many items were deleted.
    @discardableResult
    package func removePasscode(_ passcode: PasscodeAuth) throws -> Int {
        try requireWritable()
        guard let index = try enrollmentIndex() else { throw VaultError.passcodeNotSet }
        try verifyPasscode(passcode)
        let doomed = try list().compactMap { item -> [UInt8]? in
            guard let a = item.attributes, a.accessibility == .whenPasscodeSetThisDeviceOnly else { return nil }
            return lookupHash(service: a.service, account: a.account)
        }
        try db.transaction {
            try db.execute("DELETE FROM class_keys")
            for lookup in doomed { try db.query("DELETE FROM items WHERE lookup = ?", [.blob(lookup)]) }
            try setMeta("nv_index", nil)
            try setMeta("index_auth", nil)
            try setMetaInt("biometric_failures", 0)
        }
        // After the commit: a leftover index (if this fails) opens nothing,
        // since no class key names it any more.
        try? tpm.undefineEnrollmentIndex(index)
        return doomed.count
    }

    /// Records an enrolment change: writes the new domain state to the TPM
    /// (the passcode proves the right to: the index's authValue comes from
    /// the passcode class key), re-seals the biometry-any class key to it,
    /// and makes a biometry-current-set class key for it. Keys sealed to
    /// earlier states stay closed for good.
    package func enrollmentChanged(to state: [UInt8], passcode: PasscodeAuth) throws {
        try requireWritable()
        guard let index = try enrollmentIndex() else { throw VaultError.passcodeNotSet }
        let (indexAuth, _) = try indexAuth(passcode)
        let condition = BiometricCondition(nvIndex: index, domainState: state)
        guard let any = try classKeys().values.filter({ $0.kind == .biometryAny }).max(by: { $0.id < $1.id }) else {
            throw VaultError.passcodeNotSet
        }
        let oldBlob: SealedBlob
        do { oldBlob = try SealedBlob(serialized: any.sealed) } catch { throw VaultError.corrupted("a class key record") }
        let anySK = try withTPM { try tpm.unseal(oldBlob, via: .passcode(passcode)) }
        let newAny = try withTPM { try tpm.seal(anySK, policy: .biometricOrPasscode(condition), passcode: passcode) }
        // New blobs first, the old one kept as `previous`: if the TPM write
        // below does not happen, the old blob still opens.
        try db.transaction {
            try db.query("UPDATE class_keys SET previous = sealed, sealed = ? WHERE id = ?",
                         [.blob(newAny.serialized()), .integer(any.id)])
            try insertCurrentSetKey(index: index, state: state)
        }
        try withTPM { try tpm.writeEnrollmentState(index, state: state, passcode: indexAuth) }
        try db.query("UPDATE class_keys SET previous = NULL WHERE id = ?", [.integer(any.id)])
    }

    // MARK: - Biometric failure count (survives restarts)

    package func biometricFailures() throws -> Int { try metaInt("biometric_failures") ?? 0 }

    /// Counts a failed match; returns the new count.
    @discardableResult
    package func recordBiometricFailure() throws -> Int {
        try requireWritable()
        return try db.transaction {
            let count = (try metaInt("biometric_failures") ?? 0) + 1
            try setMetaInt("biometric_failures", count)
            return count
        }
    }

    /// Clears the count (a read-only vault keeps it: a lockout stays).
    package func resetBiometricFailures() throws {
        guard !isReadOnly else { return }
        try setMetaInt("biometric_failures", 0)
    }
}

import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// The passcode, as the vault sees it (scheme 2; docs/vault.md).
///
/// Setting it defines the two counters and makes the three class keys;
/// changing it seals the passcode blobs anew for the new passcode and the
/// next passcode generation, commits them, then increments the passcode
/// counter, so no copy of the vault from before the change opens anything
/// with the old passcode; removing it destroys the class keys and the
/// counters, so every item that needs the passcode or biometry becomes
/// unusable, and items kept "when passcode set" are deleted.
///
/// The TPM checks the passcode: it is the authValue of the passcode blobs,
/// keyed BLAKE2b of the passcode's own derivation with a random salt of
/// this vault's (`PasscodeAuth.salted`), drawn anew at every change.
extension Vault {
    /// meta: the salt of the passcode's authValue (scheme 2).
    static let saltKey = "passcode_salt"

    package var isPasscodeSet: Bool { ((try? counter(.passcode)) ?? nil) != nil }

    func passcodeSalt() throws(VaultError) -> [UInt8] {
        guard let salt = try meta(Self.saltKey), salt.count == PasscodeAuth.saltSize else {
            throw VaultError.corrupted("the vault's passcode salt")
        }
        return salt
    }

    /// Sets the first passcode.
    package func setPasscode(_ passcode: PasscodeAuth) throws(VaultError) {
        try requireWritable()
        guard !isPasscodeSet else { throw VaultError.passcodeAlreadySet }
        var defined: [Counter] = []
        do throws(VaultError) {
            let (enrollment, generation) = try defineCounter(.enrollment)
            defined.append(enrollment)
            let (passcodeCounter, passcodeGeneration) = try defineCounter(.passcode)
            defined.append(passcodeCounter)
            let salt = SecureBytes.random(count: PasscodeAuth.saltSize).withUnsafeBytes { Array($0) }
            let auth = passcode.salted(with: salt)
            let names = [enrollment.handle: enrollment.name, passcodeCounter.handle: passcodeCounter.name]
            let passcodePolicy = SealPolicy.passcode(counter: CounterCondition(counter: passcodeCounter.handle, atMost: passcodeGeneration))
            let biometricPolicy = SealPolicy.biometricOnly(BiometricCondition(counter: enrollment.handle, atMost: generation))

            let (passPK, passSK) = Crypto.keyPair()
            let passBlob = try withTPM { () throws(TPMError) in try tpm.seal(passSK, policy: passcodePolicy, passcode: auth, expectedNames: names) }
            let (anyPK, anySK) = Crypto.keyPair()
            let anyBlob = try withTPM { () throws(TPMError) in try tpm.seal(anySK, policy: biometricPolicy, expectedNames: names) }
            // Daemon mode: biometry-any has no passcode blob (the daemon
            // opens its biometric blob itself at an enrolment change).
            let anyPasscodeBlob = hasPasscodeBranchForBiometryAny
                ? try withTPM { () throws(TPMError) in try tpm.seal(anySK, policy: passcodePolicy, passcode: auth, expectedNames: names) } : nil
            let (currentPK, currentBlob) = try sealCurrentSetKey(generation: generation, counter: enrollment, names: names)
            let fingers = try sealFingers(EnrolledFingers(reader: nil, prints: [], generation: generation,
                                                          domainState: domainState(reader: nil, prints: [], generation: generation)))
            try db.transaction { () throws(VaultError) in
                let now = Date().timeIntervalSince1970
                try db.query("INSERT INTO class_keys(kind, public, sealed, created) VALUES('passcode', ?, ?, ?)",
                             [.blob(passPK), .blob(passBlob.serialized()), .real(now)])
                try db.query("INSERT INTO class_keys(kind, public, sealed, passcode_sealed, generation, created) VALUES('biometry-any', ?, ?, ?, ?, ?)",
                             [.blob(anyPK), .blob(anyBlob.serialized()), anyPasscodeBlob.map { .blob($0.serialized()) } ?? .null,
                              .integer(Int64(bitPattern: generation)), .real(now)])
                try insertCurrentSetKey(publicKey: currentPK, blob: currentBlob, generation: generation)
                try storeFingers(fingers, generation: generation)
                try recordCounter(enrollment, generation: generation)
                try recordCounter(passcodeCounter, generation: passcodeGeneration)
                try setMeta(Self.saltKey, salt)
                try setMetaInt("biometric_failures", 0)
            }
        } catch {
            for counter in defined { try? tpm.undefineNVIndex(counter.handle) }
            for role in CounterRole.allCases { try? setMeta(role.definingKey, nil) }
            throw error
        }
    }

    /// Checks the passcode with the TPM (by unsealing the passcode class key;
    /// a wrong one counts against the TPM's dictionary-attack limit). The
    /// proof it returns carries the opened class key, so reading a passcode
    /// item with it needs no second unseal.
    ///
    /// A vault upgraded from the first release still has that release's
    /// passcode blobs (unsalted authValue, no counter): the first proof
    /// seals them anew as scheme 2's, once.
    @discardableResult
    package func verifyPasscode(_ passcode: PasscodeAuth) throws(VaultError) -> VaultProof {
        let key = try passcodeClassKey()
        var proof = VaultProof(passcode: passcode)
        let secret = try openClassKey(key, proof: proof)
        proof.openedClassKeys[key.id] = secret
        if !db.isReadOnly, try Self.blob(key.sealed).policy.passcodeCounter == nil {
            try upgradePasscodeBlobs(passcode, passcodeKey: key, secret: secret)
        }
        return proof
    }

    /// The passcode class key's record as the vault holds it now (its id
    /// and its blob, neither secret): a secret the TPM opened from that
    /// record is its secret for as long as the record is the same.
    package func passcodeKeyRecord() throws(VaultError) -> [UInt8] { Self.record(of: try passcodeClassKey()) }

    private static func record(of key: ClassKey) -> [UInt8] {
        withUnsafeBytes(of: key.id.littleEndian) { Array($0) } + key.sealed
    }

    /// The passcode class key's secret in `proof`, when proving opened it.
    package func openedPasscodeKey(in proof: VaultProof) throws(VaultError) -> SecureBytes? {
        proof.openedClassKeys[try passcodeClassKey().id]
    }

    /// A passcode proof made of a secret the TPM opened earlier for this
    /// passcode (`openedPasscodeKey`), while `passcodeKeyRecord()` is still
    /// `record`; nil when the record changed since (the TPM must decide).
    package func passcodeProof(_ passcode: PasscodeAuth, opened secret: SecureBytes, record: [UInt8]) throws(VaultError) -> VaultProof? {
        let key = try passcodeClassKey()
        guard Self.record(of: key) == record else { return nil }
        var proof = VaultProof(passcode: passcode)
        proof.openedClassKeys[key.id] = secret
        return proof
    }

    func passcodeClassKey() throws(VaultError) -> ClassKey {
        guard isPasscodeSet else { throw VaultError.passcodeNotSet }
        return try classKey(.passcode)
    }

    /// Whether biometry-any keys get a passcode blob: not in daemon mode
    /// (the TPM has the daemon's gate), where only the daemon opens them,
    /// and at an enrolment change through their biometric blob.
    var hasPasscodeBranchForBiometryAny: Bool { tpm.installedGate == nil }

    /// Biometry-any's secret for an enrolment or passcode change: from its
    /// passcode blob, or in daemon mode (no passcode blob) from its
    /// biometric blob, which the daemon opens through its gate.
    func biometryAnySecret(_ key: ClassKey, passcode: PasscodeAuth) throws(VaultError) -> SecureBytes {
        guard let bytes = key.passcodeSealed else {
            guard !hasPasscodeBranchForBiometryAny else {
                throw VaultError.corrupted("the biometry-any class key has no passcode blob")
            }
            let blob = try Self.blob(key.sealed)
            do throws(VaultError) {
                return try withTPM { () throws(TPMError) in try tpm.unseal(blob, via: .biometric) }
            } catch VaultError.tpm(.enrollmentChanged) {
                // Its blob closed (a counter moved on outside the daemon):
                // with no passcode blob, its items are lost.
                throw VaultError.corrupted("the biometry-any class key's blob no longer opens (the enrolment counter moved on outside touchstoned)")
            }
        }
        return try unsealWithPasscode(bytes, passcode)
    }

    /// Replaces the passcode. Nothing changes if `old` is wrong. New blobs
    /// for the new passcode, sealed for the next passcode generation, are
    /// committed (with a new salt), then the passcode counter is
    /// incremented: from then on no blob of the old passcode opens, here
    /// or in any copy. The old blobs are zeroed in the database
    /// (secure_delete) and the log truncated. Stopped before the increment,
    /// the new passcode is in force and the next opening increments.
    package func changePasscode(from old: PasscodeAuth, to new: PasscodeAuth) throws(VaultError) {
        try requireWritable()
        let proof = try verifyPasscode(old)
        let passcodeKey = try passcodeClassKey()
        guard let passcodeSecret = proof.openedClassKeys[passcodeKey.id] else { throw VaultError.corrupted("the passcode class key") }
        // Only passcode blobs follow the passcode (daemon mode has none).
        let anyKeys = try classKeys().values.filter { $0.kind == .biometryAny && $0.passcodeSealed != nil }
        let anySecrets = try anyKeys.map { key throws(VaultError) in (key.id, try biometryAnySecret(key, passcode: old)) }
        if try pendingRoles().contains(.passcode) { try completeIncrement(.passcode) }
        let counter = try requireCounter(.passcode)
        let value = try readCounter(counter)
        guard value == (try committedGeneration(.passcode)) else {
            throw VaultError.corrupted("the TPM's passcode counter is at \(value), the vault's keys are for \(try committedGeneration(.passcode))")
        }
        let next = value + 1
        let salt = SecureBytes.random(count: PasscodeAuth.saltSize).withUnsafeBytes { Array($0) }
        let auth = new.salted(with: salt)
        let names = try sealingNames([counter])
        let policy = SealPolicy.passcode(counter: CounterCondition(counter: counter.handle, atMost: next))
        let passBlob = try withTPM { () throws(TPMError) in try tpm.seal(passcodeSecret, policy: policy, passcode: auth, expectedNames: names) }
        let anyBlobs = try anySecrets.map { id, secret throws(VaultError) in
            (id, try withTPM { () throws(TPMError) in try tpm.seal(secret, policy: policy, passcode: auth, expectedNames: names) })
        }
        try step("passcode-sealed")
        try db.transaction { () throws(VaultError) in
            // Another process's change since the reads above.
            guard try committedGeneration(.passcode) == value, try !pendingRoles().contains(.passcode) else {
                throw VaultError.concurrentChange
            }
            try db.query("UPDATE class_keys SET sealed = ?, previous = NULL WHERE id = ?",
                         [.blob(passBlob.serialized()), .integer(passcodeKey.id)])
            for (id, blob) in anyBlobs {
                try db.query("UPDATE class_keys SET passcode_sealed = ? WHERE id = ?", [.blob(blob.serialized()), .integer(id)])
            }
            try setMeta(Self.saltKey, salt)
            try setCommittedGeneration(.passcode, next)
            try markPending(.passcode)
            try setMetaInt("biometric_failures", 0)
        }
        try step("passcode-committed")
        try completeIncrement(.passcode)
        try step("passcode-incremented")
        try removeSuperseded(.passcode)
    }

    /// Removes the passcode (after checking it): the class keys, the
    /// fingers and the counters go, items kept "when passcode set" are
    /// deleted. Returns how many items were deleted.
    @discardableResult
    package func removePasscode(_ passcode: PasscodeAuth) throws(VaultError) -> Int {
        try requireWritable()
        guard isPasscodeSet else { throw VaultError.passcodeNotSet }
        try verifyPasscode(passcode)
        var counters: [Counter] = []
        for role in CounterRole.allCases {
            if let counter = try counter(role) { counters.append(counter) }
        }
        let doomed = try list().compactMap { item -> [UInt8]? in
            guard let a = item.attributes, a.accessibility == .whenPasscodeSetThisDeviceOnly else { return nil }
            return lookupHash(service: a.service, account: a.account)
        }
        try db.transaction { () throws(VaultError) in
            try db.execute("DELETE FROM class_keys")
            try db.execute("DELETE FROM fingers")
            for lookup in doomed { try db.query("DELETE FROM items WHERE lookup = ?", [.blob(lookup)]) }
            for role in CounterRole.allCases { try forgetCounter(role) }
            for key in [Self.saltKey, Self.pendingKey, Self.fingersProblemKey, "setting.reader"] { try setMeta(key, nil) }
            try setMetaInt("biometric_failures", 0)
        }
        db.checkpointTruncating()
        // After the commit: a leftover counter (if this fails) opens
        // nothing, since no class key names it any more.
        for counter in counters { try? tpm.undefineNVIndex(counter.handle) }
        return doomed.count
    }

    // MARK: - Biometric failure count (survives restarts)

    package func biometricFailures() throws(VaultError) -> Int { try metaInt("biometric_failures") ?? 0 }

    /// Counts a failed match; returns the new count.
    @discardableResult
    package func recordBiometricFailure() throws(VaultError) -> Int {
        try requireWritable()
        return try db.transaction { () throws(VaultError) in
            let count = (try metaInt("biometric_failures") ?? 0) + 1
            try setMetaInt("biometric_failures", count)
            return count
        }
    }

    /// Clears the count (a read-only vault keeps it: a lockout stays).
    package func resetBiometricFailures() throws(VaultError) {
        guard !isReadOnly, try biometricFailures() != 0 else { return }
        try setMetaInt("biometric_failures", 0)
    }

    // MARK: - Matching touches

    /// How many matching touches of one finger a biometric authentication
    /// takes (`MatchingTouches`); one until set. A value this build does
    /// not know reads as two: a setting never loosens by being damaged.
    package func matchingTouches() throws(VaultError) -> MatchingTouches {
        guard let stored = try metaInt(Self.touchesKey) else { return .one }
        return MatchingTouches(rawValue: stored) ?? .two
    }

    /// Sets it, with the passcode (checked by the TPM, unless `proof`
    /// opened the passcode's class key already).
    package func setMatchingTouches(_ touches: MatchingTouches, proof: VaultProof) throws(VaultError) {
        try requireWritable()
        guard let passcode = proof.passcode else { throw VaultError.authenticationRequired }
        if proof.openedClassKeys[try passcodeClassKey().id] == nil { try verifyPasscode(passcode) }
        try setMetaInt(Self.touchesKey, touches == .one ? nil : touches.rawValue)
    }

    static let touchesKey = "setting.touches"

    // MARK: - Steps of a change

    /// The steps of a change where a test may stop it (in order, for each
    /// kind of change).
    package static let steps = [
        "fingers-sealed", "fingers-committed", "fingers-incremented",
        "passcode-sealed", "passcode-committed", "passcode-incremented",
    ]

    func step(_ name: String) throws(VaultError) {
        #if TOUCHSTONE_TEST_SUPPORT
        try interruption?(name)
        #endif
    }

    #if TOUCHSTONE_TEST_SUPPORT
    static let killAtStepFromEnvironment: (@Sendable (String) throws(VaultError) -> Void)? = {
        guard let step = ProcessInfo.processInfo.environment["TOUCHSTONE_TEST_KILL_AT"], steps.contains(step) else { return nil }
        return { name in
            if name == step { kill(getpid(), SIGKILL) }
        }
    }()
    #endif
}

import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// The kinds of class key, one per TPM policy (scheme 2; docs/vault.md).
enum ClassKind: String {
    /// Sealed to the passcode and the passcode counter (PolicyAuthValue,
    /// PolicyNV(counter <= its generation)). A passcode change seals it
    /// anew for the next generation, then increments the counter.
    case passcode
    /// Two blobs of one secret: the biometric one sealed to the enrolment
    /// counter (<= the current generation), sealed anew at every enrolment
    /// change (which needs the passcode anyway), so it keeps working across
    /// changes; and a passcode one, as the passcode key's, from which
    /// enrolment changes take the secret. Touchstone opens it only after a
    /// match.
    case biometryAny = "biometry-any"
    /// Sealed biometric-only to the enrolment counter at most the
    /// generation of its time; never sealed again: a change of the finger
    /// set closes it for good.
    case biometryCurrentSet = "biometry-current-set"
}

/// A class key record: an X25519 key pair whose public half wraps item keys
/// (no authentication needed to add an item) and whose secret half is
/// sealed by the TPM under the class's policy.
struct ClassKey {
    /// The device "class": id 0, the symmetric device wrap key (no row).
    static let deviceID: Int64 = 0

    let id: Int64
    let kind: ClassKind?
    /// The first release's current-set keys: the domain state sealed to
    /// (none are left after the upgrade: `generation` took over).
    let epoch: [UInt8]?
    let publicKey: [UInt8]
    /// The blob: the passcode key's; biometry-any's and current-set's
    /// biometric one. Empty for a current-set key whose set is gone.
    let sealed: [UInt8]
    let previous: [UInt8]?
    /// The enrolment generation the biometric blob is sealed for.
    let generation: UInt64?
    /// Biometry-any: its passcode blob (scheme 2's, or until the first
    /// passcode proof after the upgrade, the first release's whole blob).
    let passcodeSealed: [UInt8]?
}

extension Vault {
    func classKeys() throws(VaultError) -> [Int64: ClassKey] {
        var out: [Int64: ClassKey] = [:]
        try db.query("SELECT id, kind, epoch, public, sealed, previous, generation, passcode_sealed FROM class_keys") { row throws(VaultError) in
            let key = ClassKey(id: row.integer(0), kind: ClassKind(rawValue: row.text(1)),
                               epoch: row.isNull(2) ? nil : row.blob(2), publicKey: row.blob(3),
                               sealed: row.blob(4), previous: row.isNull(5) ? nil : row.blob(5),
                               generation: row.isNull(6) ? nil : UInt64(bitPattern: row.integer(6)),
                               passcodeSealed: row.isNull(7) ? nil : row.blob(7))
            out[key.id] = key
        }
        return out
    }

    func classKey(_ kind: ClassKind) throws(VaultError) -> ClassKey {
        guard let key = try classKeys().values.filter({ $0.kind == kind }).max(by: { $0.id < $1.id }) else {
            throw VaultError.passcodeNotSet
        }
        return key
    }

    /// The class key new items with `flag` are wrapped to.
    func activeClassKey(for flag: AccessFlag) throws(VaultError) -> ClassKey {
        switch flag {
        case .devicePasscode: return try classKey(.passcode)
        case .biometryAny: return try classKey(.biometryAny)
        case .biometryCurrentSet:
            let generation = try enrollmentGeneration()
            let keys = try classKeys().values.sorted { $0.id > $1.id }
            if let key = keys.first(where: { $0.kind == .biometryCurrentSet && $0.generation == generation && !$0.sealed.isEmpty }) {
                return key
            }
            // None for this set (a vault upgraded from the first release
            // whose set could not be checked): make one; sealing needs no
            // passcode.
            return try insertCurrentSetKey(generation: generation)
        }
    }

    /// The enrolment counter's value now (its name checked).
    func enrollmentGeneration() throws(VaultError) -> UInt64 {
        try readCounter(try requireCounter(.enrollment))
    }

    /// A new biometry-current-set key for `generation`, sealed and stored.
    @discardableResult
    func insertCurrentSetKey(generation: UInt64) throws(VaultError) -> ClassKey {
        let (pk, blob) = try sealCurrentSetKey(generation: generation)
        try insertCurrentSetKey(publicKey: pk, blob: blob, generation: generation)
        return ClassKey(id: db.lastInsertRowID, kind: .biometryCurrentSet, epoch: nil, publicKey: pk,
                        sealed: blob.serialized(), previous: nil, generation: generation, passcodeSealed: nil)
    }

    /// A fresh current-set key pair, its secret half sealed to the
    /// enrolment counter at most `generation` (the counter's name checked).
    func sealCurrentSetKey(generation: UInt64) throws(VaultError) -> ([UInt8], SealedBlob) {
        let counter = try requireCounter(.enrollment)
        return try sealCurrentSetKey(generation: generation, counter: counter, names: try sealingNames([counter]))
    }

    /// The same with the counter and its checked name given.
    func sealCurrentSetKey(generation: UInt64, counter: Counter, names: [UInt32: [UInt8]]) throws(VaultError) -> ([UInt8], SealedBlob) {
        let (pk, sk) = Crypto.keyPair()
        let blob = try withTPM { () throws(TPMError) in
            try tpm.seal(sk, policy: .biometricOnly(BiometricCondition(counter: counter.handle, atMost: generation)),
                         expectedNames: names)
        }
        return (pk, blob)
    }

    func insertCurrentSetKey(publicKey: [UInt8], blob: SealedBlob, generation: UInt64) throws(VaultError) {
        try db.query("INSERT INTO class_keys(kind, public, sealed, generation, created) VALUES(?, ?, ?, ?, ?)",
                     [.text(ClassKind.biometryCurrentSet.rawValue), .blob(publicKey), .blob(blob.serialized()),
                      .integer(Int64(bitPattern: generation)), .real(Date().timeIntervalSince1970)])
    }

    /// Unseals a class key's secret half with `proof`, or explains why not.
    func openClassKey(_ key: ClassKey, proof: VaultProof) throws(VaultError) -> SecureBytes {
        precondition(key.id != ClassKey.deviceID, "the device wrap is symmetric: no class key to open")
        if let opened = proof.openedClassKeys[key.id] { return opened }
        guard let kind = key.kind else { throw VaultError.corrupted("unknown class key kind") }
        switch kind {
        case .passcode:
            guard let passcode = proof.passcode else { throw VaultError.authenticationRequired }
            return try unsealWithPasscode(key.sealed, passcode)
        case .biometryAny, .biometryCurrentSet:
            guard proof.biometricMatch else { throw VaultError.authenticationRequired }
            guard !key.sealed.isEmpty else {
                // Biometry-any without its biometric blob (an upgrade that
                // could not read the first release's state): the first
                // passcode proof makes it again.
                if kind == .biometryAny { throw VaultError.authenticationRequired }
                throw VaultError.itemInvalidated
            }
            let blob = try Self.blob(key.sealed)
            do throws(VaultError) {
                return try withTPM { () throws(TPMError) in try tpm.unseal(blob, via: .biometric) }
            } catch VaultError.tpm(.enrollmentChanged) {
                throw VaultError.itemInvalidated
            }
        }
    }

    /// Opens a passcode blob: scheme 2's with the salted authValue (the
    /// passcode counter known from its record, so no NV_ReadPublic), the
    /// first release's with the passcode's own.
    func unsealWithPasscode(_ bytes: [UInt8], _ passcode: PasscodeAuth) throws(VaultError) -> SecureBytes {
        let blob = try Self.blob(bytes)
        var auth = passcode
        if blob.policy.passcodeCounter != nil {
            auth = passcode.salted(with: try passcodeSalt())
            try adoptPasscodeCounter()
        }
        do throws(VaultError) {
            return try withTPM { () throws(TPMError) in try tpm.unseal(blob, via: .passcode(auth)) }
        } catch VaultError.tpm(.passcodeChanged) {
            throw VaultError.corrupted("the vault's passcode keys are older than the TPM's passcode counter (a copy from before a passcode change, or the counter was moved on)")
        }
    }

    static func blob(_ bytes: [UInt8]) throws(VaultError) -> SealedBlob {
        do throws(TPMError) { return try SealedBlob(serialized: bytes) } catch { throw VaultError.corrupted("a class key record") }
    }
}

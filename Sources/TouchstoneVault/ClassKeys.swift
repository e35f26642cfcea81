import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// The kinds of class key, one per TPM policy.
enum ClassKind: String {
    /// Sealed passcode-only (PolicyAuthValue).
    case passcode
    /// Sealed PolicyOR(enrolment state, passcode); re-sealed to the new state
    /// at every enrolment change (which needs the passcode anyway), so it
    /// keeps working across changes. Touchstone opens it only after a match.
    case biometryAny = "biometry-any"
    /// Sealed biometric-only to the enrolment state of its time; never
    /// re-sealed: a change of the finger set closes it for good.
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
    let epoch: [UInt8]?
    let publicKey: [UInt8]
    let sealed: [UInt8]
    let previous: [UInt8]?
}

extension Vault {
    func classKeys() throws -> [Int64: ClassKey] {
        var out: [Int64: ClassKey] = [:]
        try db.query("SELECT id, kind, epoch, public, sealed, previous FROM class_keys") { row in
            let key = ClassKey(id: row.integer(0), kind: ClassKind(rawValue: row.text(1)),
                               epoch: row.isNull(2) ? nil : row.blob(2), publicKey: row.blob(3),
                               sealed: row.blob(4), previous: row.isNull(5) ? nil : row.blob(5))
            out[key.id] = key
        }
        return out
    }

    /// The class key new items with `flag` are wrapped to.
    func activeClassKey(for flag: AccessFlag) throws -> ClassKey {
        let keys = try classKeys().values.sorted { $0.id > $1.id }
        switch flag {
        case .devicePasscode:
            guard let key = keys.first(where: { $0.kind == .passcode }) else { throw VaultError.passcodeNotSet }
            return key
        case .biometryAny:
            guard let key = keys.first(where: { $0.kind == .biometryAny }) else { throw VaultError.passcodeNotSet }
            return key
        case .biometryCurrentSet:
            guard let index = try enrollmentIndex() else { throw VaultError.passcodeNotSet }
            let state = try withTPM { try tpm.readEnrollmentState(index) }
            if let key = keys.first(where: { $0.kind == .biometryCurrentSet && $0.epoch == state }) { return key }
            // The state moved without a key for it (a change interrupted
            // after the TPM write): make one; sealing needs no passcode.
            return try insertCurrentSetKey(index: index, state: state)
        }
    }

    @discardableResult
    func insertCurrentSetKey(index: UInt32, state: [UInt8]) throws -> ClassKey {
        let (pk, sk) = Crypto.keyPair()
        let blob = try withTPM {
            try tpm.seal(sk, policy: .biometricOnly(BiometricCondition(nvIndex: index, domainState: state)))
        }
        try db.query("INSERT INTO class_keys(kind, epoch, public, sealed, created) VALUES(?, ?, ?, ?, ?)",
                     [.text(ClassKind.biometryCurrentSet.rawValue), .blob(state), .blob(pk),
                      .blob(blob.serialized()), .real(Date().timeIntervalSince1970)])
        return ClassKey(id: db.lastInsertRowID, kind: .biometryCurrentSet, epoch: state, publicKey: pk,
                        sealed: blob.serialized(), previous: nil)
    }

    /// Unseals a class key's secret half with `proof`, or explains why not.
    func openClassKey(_ key: ClassKey, proof: VaultProof) throws -> SecureBytes {
        precondition(key.id != ClassKey.deviceID, "the device wrap is symmetric: no class key to open")
        if let opened = proof.openedClassKeys[key.id] { return opened }
        guard let kind = key.kind else { throw VaultError.corrupted("unknown class key kind") }
        func unseal(_ bytes: [UInt8], _ branch: UnsealBranch) throws -> SecureBytes {
            let blob: SealedBlob
            do { blob = try SealedBlob(serialized: bytes) } catch { throw VaultError.corrupted("a class key record") }
            return try withTPM { try tpm.unseal(blob, via: branch) }
        }
        switch kind {
        case .passcode:
            guard let passcode = proof.passcode else { throw VaultError.authenticationRequired }
            return try unseal(key.sealed, .passcode(passcode))
        case .biometryAny, .biometryCurrentSet:
            guard proof.biometricMatch else { throw VaultError.authenticationRequired }
            do {
                return try unseal(key.sealed, .biometric)
            } catch VaultError.tpm(.enrollmentChanged) {
                if let previous = key.previous { return try unseal(previous, .biometric) }
                throw VaultError.itemInvalidated
            }
        }
    }
}

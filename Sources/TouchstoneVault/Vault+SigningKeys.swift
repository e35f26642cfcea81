import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// A P-256 signing key the TPM made, as the vault keeps it for ssh keys
/// and FIDO credentials: its blob, and its authValue wrapped to the class
/// keys. The TPM key's authPolicy carries the access control in the
/// vault's scheme:
///
/// - `none`: [PolicySecret(gate)] PolicyCommandCode(Sign): this TPM only;
/// - an alternative that is `biometry-current-set` alone: [PolicySecret(gate)]
///   PolicyNV(enrolment counter <= the generation at creation), as a
///   current-set class key's blob: an enrolment change closes it in the TPM,
///   for good;
/// - every other alternative (biometry-any, passcode, `&`): [PolicySecret(gate)]
///   PolicyAuthValue, the key's authValue a random 32 bytes wrapped, as an
///   item key is, to the class keys of those alternatives. A TPM object's
///   policy cannot be sealed again, but the class keys are (biometry-any at
///   every enrolment change, passcode at every passcode change): so the key
///   keeps exactly an item's semantics, and goes with the class keys when
///   the passcode is removed;
/// - both: PolicyOR of the two branches.
///
/// Nothing returns the private key: the TPM makes it (sensitiveDataOrigin)
/// and keeps it (fixedTPM, fixedParent).
struct StoredSigningKey {
    let id: Int64
    let lookup: [UInt8]
    let tpm: [UInt8]
    let keys: [UInt8]
    let cipher: Int64
    /// What the key is, for messages: ("ssh key", name), ("FIDO credential", id).
    let what: (kind: String, name: String)

    /// As the item code reads wrapped keys (only `keys` and `lookup` are read).
    var asItem: Vault.StoredItem { Vault.StoredItem(id: id, lookup: lookup, metadata: [], secret: [], keys: keys, cipher: cipher) }
}

/// A signing key just made: what its row stores.
struct MadeSigningKey {
    /// The SealedBlob, serialized.
    let tpm: [UInt8]
    /// The authValue's wraps (WrapCodec), empty without that branch.
    let keys: [UInt8]
    /// The uncompressed public point (65 bytes).
    let publicPoint: [UInt8]
}

extension Vault {
    /// The TPM policy for `access`, the access control the key's authValue
    /// is wrapped for (nil: the policy has no PolicyAuthValue branch), and
    /// the names the policy's counters must have.
    private func signingPolicy(for access: AccessControl) throws(VaultError) -> (SealPolicy, AccessControl?, [UInt32: [UInt8]]) {
        if access.flags.isEmpty { return (.deviceBound, nil, [:]) }
        let currentSetAlone = access.combination == .any && access.flags.contains(.biometryCurrentSet)
        let authAccess = Self.authAccess(access)
        var biometric: BiometricCondition?
        var names: [UInt32: [UInt8]] = [:]
        if currentSetAlone {
            let counter = try requireCounter(.enrollment)
            names = try sealingNames([counter])
            biometric = BiometricCondition(counter: counter.handle, atMost: try enrollmentGeneration())
        }
        return (SealPolicy(biometric: biometric, passcode: authAccess != nil), authAccess, names)
    }

    /// The access control of the key's authValue, from the key's.
    static func authAccess(_ access: AccessControl) -> AccessControl? {
        if access.flags.isEmpty { return nil }
        let others = access.combination == .all ? access.flags : access.flags.filter { $0 != .biometryCurrentSet }
        return others.isEmpty ? nil : AccessControl(stored: others, combination: access.combination)
    }

    /// Makes a new signing key in the TPM under `access` (the passcode must
    /// be set for any access but `none`).
    func makeSigningKey(access: AccessControl) throws(VaultError) -> MadeSigningKey {
        if !access.flags.isEmpty { guard isPasscodeSet else { throw VaultError.passcodeNotSet } }
        let (policy, authAccess, names) = try signingPolicy(for: access)
        var wraps: [Wrap] = []
        var authValue: SecureBytes?
        if let authAccess {
            let value = SecureBytes.random(count: Crypto.keySize)
            wraps = try wrap(value, for: authAccess)
            authValue = value
        }
        let key = try withTPM { () throws(TPMError) in
            try tpm.createSigningKey(policy: policy, authValue: authValue.map { PasscodeAuth(authValue: $0) }, expectedNames: names)
        }
        return MadeSigningKey(tpm: key.blob.serialized(), keys: wraps.isEmpty ? [] : WrapCodec.encode(wraps), publicPoint: key.publicPoint)
    }

    /// The key's TPM blob, checked to be the key whose public point the
    /// record names.
    static func signingBlob(_ key: StoredSigningKey, publicPoint: [UInt8]) throws(VaultError) -> SealedBlob {
        let blob: SealedBlob
        do throws(TPMError) { blob = try SealedBlob(serialized: key.tpm) } catch {
            throw VaultError.corrupted("the \(key.what.kind) \(key.what.name)'s TPM blob is damaged")
        }
        guard try throughTPM({ () throws(TPMError) in try TPM.publicPoint(of: blob) }) == publicPoint else {
            throw VaultError.corrupted("the \(key.what.kind) \(key.what.name)'s TPM key is not its own")
        }
        return blob
    }

    /// The enrolment counter's value, read once, when first asked (nil
    /// when it cannot be read): for the states of a listing.
    func enrollmentGenerationOnce() -> () -> UInt64? {
        var generation: UInt64?? = .none
        return { [self] in
            if case .some(let known) = generation { return known }
            let read = try? enrollmentGeneration()
            generation = .some(read)
            return read
        }
    }

    /// ok when a way to sign is open, invalidated when none is; throws
    /// for a damaged record. `generation`: the enrolment counter's value,
    /// read once for a whole listing.
    func signingKeyState(_ key: StoredSigningKey, access: AccessControl, publicPoint: [UInt8], _ classKeys: [Int64: ClassKey],
                         _ generation: () -> UInt64?) throws(VaultError) -> ListedItem.State {
        let blob = try Self.signingBlob(key, publicPoint: publicPoint)
        if access.flags.isEmpty { return .ok }
        if let bio = blob.policy.biometric, let current = generation(), bio.counterAtMost == current { return .ok }
        if let authAccess = Self.authAccess(access) {
            let wraps = try self.wraps(of: key.asItem)
            guard Self.ways(wraps, match: authAccess) else { throw VaultError.corrupted("the \(key.what.kind)'s wrapped keys do not match") }
            let needsGeneration = wraps.contains { $0.classKeyIDs.contains { classKeys[$0]?.kind == .biometryCurrentSet } }
            if wraps.contains(where: { Self.isOpen($0, classKeys, needsGeneration ? generation() : nil) }) { return .ok }
        }
        return .invalidated
    }

    /// The key's ways to sign that are still open, as an access control
    /// (what to ask for); `itemInvalidated` when none is. As for items,
    /// the enrolment generation comes from the database (no TPM command):
    /// the TPM checks the counter itself at the signature.
    func signingKeyOpenAccess(_ key: StoredSigningKey, access: AccessControl, publicPoint: [UInt8]) throws(VaultError) -> AccessControl {
        let blob = try Self.signingBlob(key, publicPoint: publicPoint)
        if access.flags.isEmpty { return .none }
        let classKeys = try classKeys()
        let generation = try? committedGeneration(.enrollment)
        var open: [[AccessFlag]] = []
        if let bio = blob.policy.biometric, bio.counterAtMost == generation { open.append([.biometryCurrentSet]) }
        if let authAccess = Self.authAccess(access) {
            let wraps = try self.wraps(of: key.asItem)
            guard Self.ways(wraps, match: authAccess) else {
                throw VaultError.corrupted("the \(key.what.kind) \(key.what.name)'s wrapped keys do not match its access")
            }
            for (wrap, alternative) in zip(wraps, authAccess.alternatives) where Self.isOpen(wrap, classKeys, generation) {
                open.append(alternative)
            }
        }
        guard !open.isEmpty else { throw VaultError.itemInvalidated }
        if access.combination == .all { return access }
        return AccessControl(stored: open.flatMap { $0 }, combination: .any)
    }

    /// An ECDSA P-256 signature (r, s) of the SHA-256 digest `digest`, made
    /// by the TPM with `key`, through the way `proof` opens: the
    /// current-set branch after a match while the enrolled set is the
    /// key's, otherwise the key's authValue, opened from its wraps as an
    /// item key is (a touch opens biometry-any's class key, the passcode the
    /// passcode class key).
    func sign(digest: [UInt8], with key: StoredSigningKey, access: AccessControl, publicPoint: [UInt8],
              proof: VaultProof) throws(VaultError) -> (r: [UInt8], s: [UInt8]) {
        let blob = try Self.signingBlob(key, publicPoint: publicPoint)
        if access.flags.isEmpty {
            return try withTPM { () throws(TPMError) in try tpm.sign(digest: digest, with: blob, via: .device) }
        }
        var closed = false
        if blob.policy.biometric != nil, proof.biometricMatch {
            do throws(VaultError) {
                return try withTPM { () throws(TPMError) in try tpm.sign(digest: digest, with: blob, via: .biometric) }
            } catch VaultError.tpm(.enrollmentChanged) {
                closed = true  // the set changed since the key was made: its branch is closed for good
            }
        }
        guard let authAccess = Self.authAccess(access), blob.policy.passcode else {
            throw closed || blob.policy.biometric == nil ? VaultError.itemInvalidated : VaultError.authenticationRequired
        }
        guard let authValue = try openItemKey(key.asItem, access: authAccess, name: (key.what.kind, key.what.name), proof: proof) else {
            throw VaultError.corrupted("the \(key.what.kind) \(key.what.name) has a device way in")
        }
        return try withTPM { () throws(TPMError) in try tpm.sign(digest: digest, with: blob, via: .passcode(PasscodeAuth(authValue: authValue))) }
    }
}

import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// ssh keys (docs/ssh.md): P-256 signing keys made in the TPM, one
/// `ssh_keys` row each. The TPM key's authPolicy carries the access control
/// in the vault's scheme:
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
extension Vault {
    package static let maximumSSHKeyName = 256

    private static let sshMetadataADLabel = Array("touchstone/ssh-key-metadata/v1".utf8)
    /// The lookup hash's first part for ssh keys: an item's (service,
    /// account) never hashes to it (its service would be this, and items
    /// live in another table).
    private static let sshLookupDomain = "touchstone/ssh-key"

    func sshLookup(_ name: String) -> [UInt8] { Crypto.keyedHash(lookupKey, Self.sshLookupDomain, name) }

    static func sshMetadataAD(_ lookup: [UInt8]) -> [UInt8] { sshMetadataADLabel + lookup }

    /// A row of `ssh_keys`.
    struct StoredSSHKey {
        let id: Int64
        let lookup: [UInt8]
        let metadata: [UInt8]
        let tpm: [UInt8]
        let keys: [UInt8]
        let cipher: Int64

        /// As the item code reads wrapped keys (only `keys` and `lookup` are read).
        var asItem: StoredItem { StoredItem(id: id, lookup: lookup, metadata: [], secret: [], keys: keys, cipher: cipher) }
    }

    /// The TPM policy for `access`, and the access control the key's
    /// authValue is wrapped for (nil: the policy has no PolicyAuthValue
    /// branch).
    private func sshPolicy(for access: AccessControl) throws(VaultError) -> (SealPolicy, AccessControl?, [UInt32: [UInt8]]) {
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

    // MARK: - Create, delete

    /// Makes a new key in the TPM and stores it. Needs no authentication (as
    /// adding an item); the passcode must be set for any access but `none`.
    package func createSSHKey(name: String, comment: String, access: AccessControl) throws(VaultError) -> SSHKeyInfo {
        try requireWritable()
        // No control characters: names and comments are shown in tab-separated lines and in the .pub line.
        func clean(_ text: String) -> Bool { !text.unicodeScalars.contains { $0.properties.generalCategory == .control } }
        guard !name.isEmpty, name.utf8.count <= Self.maximumSSHKeyName, clean(name) else {
            throw VaultError.invalidInput("an ssh key's name is 1 to \(Self.maximumSSHKeyName) bytes, without control characters")
        }
        guard comment.utf8.count <= Self.maximumFieldSize, clean(comment) else {
            throw VaultError.invalidInput("an ssh key's comment is at most \(Self.maximumFieldSize) bytes, without control characters")
        }
        if !access.flags.isEmpty { guard isPasscodeSet else { throw VaultError.passcodeNotSet } }
        let lookup = sshLookup(name)
        if try sshKeyExists(lookup) { throw VaultError.duplicateItem }

        let (policy, authAccess, names) = try sshPolicy(for: access)
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
        let info = SSHKeyInfo(name: name, comment: comment, access: access, created: Date(), publicPoint: key.publicPoint, state: .ok)
        let cipher = recordCipher
        let metadata = try metadataKeys.key(cipher).seal(Self.encodeSSHKey(info), ad: Self.sshMetadataAD(lookup))
        try db.transaction { () throws(VaultError) in
            if try sshKeyExists(lookup) { throw VaultError.duplicateItem }
            try db.query("INSERT INTO ssh_keys(lookup, metadata, tpm, keys, cipher) VALUES(?, ?, ?, ?, ?)",
                         [.blob(lookup), .blob(metadata), .blob(key.blob.serialized()),
                          .blob(wraps.isEmpty ? [] : WrapCodec.encode(wraps)), .integer(cipher.rawValue)])
        }
        return info
    }

    /// Deletes the key (no authentication, as an item's delete); its TPM
    /// blob goes with the row (`secure_delete`: zeroed in the file).
    package func deleteSSHKey(name: String) throws(VaultError) {
        try requireWritable()
        try db.query("DELETE FROM ssh_keys WHERE lookup = ?", [.blob(sshLookup(name))])
        if db.changes == 0 { throw VaultError.itemNotFound }
    }

    private func sshKeyExists(_ lookup: [UInt8]) throws(VaultError) -> Bool {
        try !db.rows("SELECT 1 FROM ssh_keys WHERE lookup = ?", [.blob(lookup)]) { _ in true }.isEmpty
    }

    // MARK: - Read

    private static let sshColumns = "id, lookup, metadata, tpm, keys, cipher"

    private static func storedSSHKey(_ row: SQLRow) -> StoredSSHKey {
        StoredSSHKey(id: row.integer(0), lookup: row.blob(1), metadata: row.blob(2), tpm: row.blob(3), keys: row.blob(4),
                     cipher: row.integer(5))
    }

    /// The key named `name`, its metadata opened and checked against the name.
    func loadSSHKey(_ name: String) throws(VaultError) -> (StoredSSHKey, SSHKeyInfo) {
        let lookup = sshLookup(name)
        guard let row = try db.firstRow("SELECT \(Self.sshColumns) FROM ssh_keys WHERE lookup = ?", blob: lookup, Self.storedSSHKey) else {
            throw VaultError.itemNotFound
        }
        let info = try openSSHMetadata(row)
        guard info.name == name else { throw VaultError.corrupted("the record found for the ssh key \(name) belongs to another key") }
        return (row, info)
    }

    private func openSSHMetadata(_ row: StoredSSHKey) throws(VaultError) -> SSHKeyInfo {
        guard let cipher = RecordCipher(rawValue: row.cipher) else { throw VaultError.corrupted("an ssh key names an unknown cipher") }
        guard let info = try metadataKeys.key(cipher).open(row.metadata, ad: Self.sshMetadataAD(row.lookup), { Self.decodeSSHKey($0) }) ?? nil,
              info.publicPoint.count == 65 else {
            throw VaultError.corrupted("an ssh key's record does not decrypt")
        }
        return info
    }

    /// Every key, with its state; a record that does not open is listed as
    /// corrupted. No authentication, no TPM command but the counter's read
    /// when a current-set key is there.
    package func sshKeys() throws(VaultError) -> [SSHKeyInfo] {
        let rows = try db.rows("SELECT \(Self.sshColumns) FROM ssh_keys ORDER BY id", [], Self.storedSSHKey)
        if rows.isEmpty { return [] }
        let classKeys = try classKeys()
        var generation: UInt64?? = .none
        func currentGeneration() -> UInt64? {
            if case .some(let known) = generation { return known }
            let read = try? enrollmentGeneration()
            generation = .some(read)
            return read
        }
        return rows.map { row in
            guard let info = try? openSSHMetadata(row) else {
                return SSHKeyInfo(name: "?", comment: "", access: .none, created: Date(timeIntervalSince1970: 0), publicPoint: [],
                                  state: .corrupted)
            }
            var listed = info
            listed.state = (try? sshKeyState(row, info, classKeys, currentGeneration)) ?? .corrupted
            return listed
        }
    }

    /// ok when a way to sign is open, invalidated when none is; throws
    /// for a damaged record.
    private func sshKeyState(_ row: StoredSSHKey, _ info: SSHKeyInfo, _ classKeys: [Int64: ClassKey],
                             _ generation: () -> UInt64?) throws(VaultError) -> ListedItem.State {
        let blob = try Self.sshBlob(row)
        guard try Self.throughTPM({ () throws(TPMError) in try TPM.publicPoint(of: blob) }) == info.publicPoint else { throw VaultError.corrupted("an ssh key's TPM key is not its own") }
        if info.access.flags.isEmpty { return .ok }
        if let bio = blob.policy.biometric, let current = generation(), bio.counterAtMost == current { return .ok }
        if let authAccess = Self.authAccess(info.access) {
            let wraps = try self.wraps(of: row.asItem)
            guard Self.ways(wraps, match: authAccess) else { throw VaultError.corrupted("an ssh key's wrapped keys do not match") }
            let needsGeneration = wraps.contains { $0.classKeyIDs.contains { classKeys[$0]?.kind == .biometryCurrentSet } }
            if wraps.contains(where: { Self.isOpen($0, classKeys, needsGeneration ? generation() : nil) }) { return .ok }
        }
        return .invalidated
    }

    private static func sshBlob(_ row: StoredSSHKey) throws(VaultError) -> SealedBlob {
        do throws(TPMError) { return try SealedBlob(serialized: row.tpm) } catch { throw VaultError.corrupted("an ssh key's TPM blob is damaged") }
    }

    /// The key's ways to sign that are still open, as an access control
    /// (what to ask for); `itemInvalidated` when none is. As for items,
    /// the enrolment generation comes from the database (no TPM command):
    /// the TPM checks the counter itself at the signature.
    package func sshKeyOpenAccess(name: String) throws(VaultError) -> AccessControl {
        let (row, info) = try loadSSHKey(name)
        let blob = try Self.sshBlob(row)
        guard try Self.throughTPM({ () throws(TPMError) in try TPM.publicPoint(of: blob) }) == info.publicPoint else { throw VaultError.corrupted("the ssh key \(name)'s TPM key is not its own") }
        if info.access.flags.isEmpty { return .none }
        let classKeys = try classKeys()
        let generation = try? committedGeneration(.enrollment)
        var open: [[AccessFlag]] = []
        if let bio = blob.policy.biometric, bio.counterAtMost == generation { open.append([.biometryCurrentSet]) }
        if let authAccess = Self.authAccess(info.access) {
            let wraps = try self.wraps(of: row.asItem)
            guard Self.ways(wraps, match: authAccess) else { throw VaultError.corrupted("the ssh key \(name)'s wrapped keys do not match its access") }
            for (wrap, alternative) in zip(wraps, authAccess.alternatives) where Self.isOpen(wrap, classKeys, generation) {
                open.append(alternative)
            }
        }
        guard !open.isEmpty else { throw VaultError.itemInvalidated }
        if info.access.combination == .all { return info.access }
        return AccessControl(stored: open.flatMap { $0 }, combination: .any)
    }

    // MARK: - Sign

    /// An ECDSA P-256 signature (r, s) of the SHA-256 digest `digest`, made
    /// by the TPM with the key `name`, through the way `proof` opens: the
    /// current-set branch after a match while the enrolled set is the
    /// key's, otherwise the key's authValue, opened from its wraps as an
    /// item key is (a touch opens biometry-any's class key, the passcode the
    /// passcode class key).
    package func signSSH(name: String, digest: [UInt8], proof: VaultProof) throws(VaultError) -> (r: [UInt8], s: [UInt8]) {
        let (row, info) = try loadSSHKey(name)
        let blob = try Self.sshBlob(row)
        guard try Self.throughTPM({ () throws(TPMError) in try TPM.publicPoint(of: blob) }) == info.publicPoint else { throw VaultError.corrupted("the ssh key \(name)'s TPM key is not its own") }
        if info.access.flags.isEmpty {
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
        guard let authAccess = Self.authAccess(info.access), blob.policy.passcode else {
            throw closed || blob.policy.biometric == nil ? VaultError.itemInvalidated : VaultError.authenticationRequired
        }
        guard let authValue = try openItemKey(row.asItem, access: authAccess, name: ("ssh key", name), proof: proof) else {
            throw VaultError.corrupted("the ssh key \(name) has a device way in")
        }
        return try withTPM { () throws(TPMError) in try tpm.sign(digest: digest, with: blob, via: .passcode(PasscodeAuth(authValue: authValue))) }
    }

    // MARK: - Record

    /// The metadata record: AttributeCodec's, with service the ssh-key
    /// domain, account the name, comment, access, created, and the public
    /// point as generic data.
    private static func encodeSSHKey(_ info: SSHKeyInfo) -> [UInt8] {
        AttributeCodec.encode(ItemAttributes(service: sshLookupDomain, account: info.name, comment: info.comment,
                                             generic: Data(info.publicPoint), access: info.access,
                                             created: info.created, modified: info.created))
    }

    private static func decodeSSHKey(_ raw: UnsafeRawBufferPointer) -> SSHKeyInfo? {
        guard let a = AttributeCodec.decode(raw), a.service == sshLookupDomain, let point = a.generic else { return nil }
        return SSHKeyInfo(name: a.account, comment: a.comment ?? "", access: a.access, created: a.created,
                          publicPoint: Array(point), state: .ok)
    }
}

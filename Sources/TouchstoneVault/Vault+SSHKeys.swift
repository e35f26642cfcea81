import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// ssh keys (docs/ssh.md): P-256 signing keys made in the TPM, one
/// `ssh_keys` row each, under the access control as Vault+SigningKeys
/// describes.
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

        /// Its signing key, named for messages.
        func signingKey(_ name: String) -> StoredSigningKey {
            StoredSigningKey(id: id, lookup: lookup, tpm: tpm, keys: keys, cipher: cipher, what: ("ssh key", name))
        }
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
        let lookup = sshLookup(name)
        if try sshKeyExists(lookup) { throw VaultError.duplicateItem }
        let key = try makeSigningKey(access: access)
        let info = SSHKeyInfo(name: name, comment: comment, access: access, created: Date(), publicPoint: key.publicPoint, state: .ok)
        let cipher = recordCipher
        let metadata = try metadataKeys.key(cipher).seal(Self.encodeSSHKey(info), ad: Self.sshMetadataAD(lookup))
        try db.transaction { () throws(VaultError) in
            if try sshKeyExists(lookup) { throw VaultError.duplicateItem }
            try db.query("INSERT INTO ssh_keys(lookup, metadata, tpm, keys, cipher) VALUES(?, ?, ?, ?, ?)",
                         [.blob(lookup), .blob(metadata), .blob(key.tpm), .blob(key.keys), .integer(cipher.rawValue)])
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
        let currentGeneration = enrollmentGenerationOnce()
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

    private func sshKeyState(_ row: StoredSSHKey, _ info: SSHKeyInfo, _ classKeys: [Int64: ClassKey],
                             _ generation: () -> UInt64?) throws(VaultError) -> ListedItem.State {
        try signingKeyState(row.signingKey(info.name), access: info.access, publicPoint: info.publicPoint, classKeys, generation)
    }

    /// The key's ways to sign that are still open, as an access control
    /// (what to ask for); `itemInvalidated` when none is.
    package func sshKeyOpenAccess(name: String) throws(VaultError) -> AccessControl {
        let (row, info) = try loadSSHKey(name)
        return try signingKeyOpenAccess(row.signingKey(name), access: info.access, publicPoint: info.publicPoint)
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
        return try sign(digest: digest, with: row.signingKey(name), access: info.access, publicPoint: info.publicPoint, proof: proof)
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

internal import CSodium
import Foundation
import TouchstoneFIDO
import TouchstoneSecure
import TouchstoneTPM

/// FIDO credentials (docs/fido.md): P-256 signing keys made in the TPM,
/// one `fido_credentials` row each, under an access control as ssh keys
/// are (Vault+SigningKeys). Each assertion signs
/// SHA-256(authenticatorData || clientDataHash), authenticatorData being
/// rpIdHash || flags || counter, the counter committed to the database
/// before the TPM signs: a crash after the commit skips a value, never
/// repeats one.
extension Vault {
    /// The longest relying party id or ssh application, in UTF-8 bytes.
    package static let maximumRelyingParty = 256
    /// The longest user handle (WebAuthn: 64 bytes).
    package static let maximumUserID = 64
    /// The size of the credential ids this vault makes.
    package static let credentialIDSize = 32
    /// The largest extension outputs an assertion carries.
    package static let maximumExtensionOutputs = 1024

    private static let fidoMetadataADLabel = Array("touchstone/fido-credential-metadata/v1".utf8)
    private static let fidoLookupDomain = "touchstone/fido-credential"
    private static let fidoRPDomain = "touchstone/fido-rp"

    func fidoLookup(_ id: [UInt8]) -> [UInt8] { Crypto.keyedHash(lookupKey, Self.fidoLookupDomain, FIDOCredentialInfo.base64url(id)) }
    func fidoRPLookup(_ relyingParty: String) -> [UInt8] { Crypto.keyedHash(lookupKey, Self.fidoRPDomain, relyingParty) }

    /// A row of `fido_credentials`.
    struct StoredFIDOCredential {
        let id: Int64
        let lookup: [UInt8]
        let metadata: [UInt8]
        let counter: Int64
        let tpm: [UInt8]
        let keys: [UInt8]
        let cipher: Int64

        func signingKey(_ idText: String) -> StoredSigningKey {
            StoredSigningKey(id: id, lookup: lookup, tpm: tpm, keys: keys, cipher: cipher, what: ("FIDO credential", idText))
        }
    }

    // MARK: - Create, delete

    /// Makes a new credential in the TPM and stores it. Needs no
    /// authentication (as adding an item); the passcode must be set, and
    /// the access may not be `none` (every signature asks for a touch). A
    /// discoverable credential for a relying party and user that already
    /// have one is refused (`duplicateItem`) unless `replace`, which
    /// deletes the old one in the same transaction.
    /// `keepingOthers`: a discoverable one is added beside any the
    /// relying party and user have (WebAuthn's registration, which
    /// replaces them with `deleteFIDOCredentials(replacedBy:)` only once
    /// the new one is attested).
    package func createFIDOCredential(_ request: FIDOCredentialRequest, replace: Bool = false, keepingOthers: Bool = false) throws(VaultError) -> FIDOCredentialInfo {
        try requireWritable()
        guard !request.relyingParty.isEmpty, request.relyingParty.utf8.count <= Self.maximumRelyingParty,
              !Self.hasControlCharacter(request.relyingParty) else {
            throw VaultError.invalidInput("a relying party (or ssh application) is 1 to \(Self.maximumRelyingParty) bytes, without control characters")
        }
        guard request.userID.count <= Self.maximumUserID else {
            throw VaultError.invalidInput("a user handle is at most \(Self.maximumUserID) bytes")
        }
        try Self.checkUserNames(request.userName, request.userDisplayName)
        guard (1...3).contains(request.credProtect) else { throw VaultError.invalidInput("credProtect is 1, 2 or 3") }
        guard !request.access.flags.isEmpty else {
            throw VaultError.invalidInput("a FIDO credential signs only after a touch: its access cannot be none")
        }
        let rp = fidoRPLookup(request.relyingParty)
        if request.discoverable, !replace, !keepingOthers, try !discoverableFIDO(rp, request).isEmpty { throw VaultError.duplicateItem }
        let key = try makeSigningKey(access: request.access)
        let id = (0..<Self.credentialIDSize).map { _ in UInt8.random(in: 0...255) }
        var info = FIDOCredentialInfo(id: id, relyingParty: request.relyingParty, userID: request.userID, userName: request.userName,
                                      userDisplayName: request.userDisplayName, discoverable: request.discoverable,
                                      verificationRequired: request.verificationRequired, credProtect: request.credProtect,
                                      access: request.access, created: Date(), publicPoint: key.publicPoint)
        if request.hmacSecret { info.hmacSecret = true }
        let lookup = fidoLookup(id)
        let cipher = recordCipher
        let metadata = try metadataKeys.key(cipher).seal(Self.encodeFIDO(info), ad: Self.fidoMetadataAD(lookup))
        try db.transaction { () throws(VaultError) in
            if request.discoverable, !keepingOthers {
                let existing = try discoverableFIDO(rp, request)
                if !existing.isEmpty && !replace { throw VaultError.duplicateItem }
                for row in existing { try db.query("DELETE FROM fido_credentials WHERE id = ?", [.integer(row)]) }
            }
            try db.query("INSERT INTO fido_credentials(lookup, rp, metadata, counter, tpm, keys, cipher) VALUES(?, ?, ?, 0, ?, ?, ?)",
                         [.blob(lookup), .blob(rp), .blob(metadata), .blob(key.tpm), .blob(key.keys), .integer(cipher.rawValue)])
        }
        return info
    }

    private static func hasControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// A user name and display name as a credential keeps them.
    private static func checkUserNames(_ names: String...) throws(VaultError) {
        for name in names {
            guard name.utf8.count <= maximumFieldSize, !hasControlCharacter(name) else {
                throw VaultError.invalidInput("a user name is at most \(maximumFieldSize) bytes, without control characters")
            }
        }
    }

    /// Changes the user name and display name of the credential `id` of
    /// `relyingParty` once `proof` shows what its signatures need (CTAP
    /// 2.1's updateUserInformation); its key, counter, user handle and the
    /// rest are kept.
    package func updateFIDOUser(id: [UInt8], relyingParty: String, userName: String, userDisplayName: String,
                                proof: VaultProof) throws(VaultError) {
        try requireWritable()
        try Self.checkUserNames(userName, userDisplayName)
        let (row, info) = try loadFIDO(id, relyingParty: relyingParty)
        let open = try signingKeyOpenAccess(row.signingKey(info.idText), access: info.access, publicPoint: info.publicPoint)
        guard open.alternatives.contains(where: { Self.proves(proof, $0) }) else { throw VaultError.authenticationRequired }
        guard let cipher = RecordCipher(rawValue: row.cipher) else { throw VaultError.corrupted("a FIDO credential names an unknown cipher") }
        var updated = info
        updated.userName = userName
        updated.userDisplayName = userDisplayName
        let metadata = try metadataKeys.key(cipher).seal(Self.encodeFIDO(updated), ad: Self.fidoMetadataAD(row.lookup))
        try db.query("UPDATE fido_credentials SET metadata = ? WHERE id = ?", [.blob(metadata), .integer(row.id)])
    }

    /// The row ids of the discoverable credentials for the request's
    /// relying party and user.
    private func discoverableFIDO(_ rp: [UInt8], _ request: FIDOCredentialRequest) throws(VaultError) -> [Int64] {
        let rows = try db.rows("SELECT \(Self.fidoColumns) FROM fido_credentials WHERE rp = ?", [.blob(rp)], Self.storedFIDO)
        return rows.compactMap { row in
            guard let info = try? openFIDOMetadata(row), info.discoverable, info.relyingParty == request.relyingParty,
                  info.userID == request.userID else { return nil }
            return row.id
        }
    }

    /// Deletes the other discoverable credentials of `credential`'s
    /// relying party and user (a registration's new one replaces them).
    package func deleteFIDOCredentials(replacedBy credential: FIDOCredentialInfo) throws(VaultError) {
        try requireWritable()
        let request = FIDOCredentialRequest(relyingParty: credential.relyingParty, userID: credential.userID)
        let kept = try db.firstRow("SELECT id FROM fido_credentials WHERE lookup = ?", [.blob(fidoLookup(credential.id))]) { $0.integer(0) }
        let others = try discoverableFIDO(fidoRPLookup(credential.relyingParty), request).filter { $0 != kept }
        try db.transaction { () throws(VaultError) in
            for id in others { try db.query("DELETE FROM fido_credentials WHERE id = ?", [.integer(id)]) }
        }
    }

    /// Deletes the credential of `relyingParty` once `proof` shows what its
    /// signatures need (one of its open ways).
    package func deleteFIDOCredential(id: [UInt8], relyingParty: String, proof: VaultProof) throws(VaultError) {
        try requireWritable()
        let (row, info) = try loadFIDO(id, relyingParty: relyingParty)
        let open = try signingKeyOpenAccess(row.signingKey(info.idText), access: info.access, publicPoint: info.publicPoint)
        guard open.alternatives.contains(where: { Self.proves(proof, $0) }) else { throw VaultError.authenticationRequired }
        try deleteFIDOCredential(id: id)
    }

    /// Deletes every credential `which` chooses (one whose record does not
    /// open is kept: nobody can say whose it is); how many went.
    package func deleteFIDOCredentials(where which: (FIDOCredentialInfo) -> Bool) throws(VaultError) -> Int {
        try requireWritable()
        let rows = try db.rows("SELECT \(Self.fidoColumns) FROM fido_credentials", [], Self.storedFIDO)
        let chosen = rows.filter { row in (try? openFIDOMetadata(row)).map(which) ?? false }
        try db.transaction { () throws(VaultError) in
            for row in chosen { try db.query("DELETE FROM fido_credentials WHERE id = ?", [.integer(row.id)]) }
        }
        return chosen.count
    }

    /// Deletes the credential (the caller checked what deleting asks); its
    /// TPM blob goes with the row (`secure_delete`: zeroed in the file).
    package func deleteFIDOCredential(id: [UInt8]) throws(VaultError) {
        try requireWritable()
        try db.query("DELETE FROM fido_credentials WHERE lookup = ?", [.blob(fidoLookup(id))])
        if db.changes == 0 { throw VaultError.itemNotFound }
    }

    // MARK: - Read

    private static let fidoColumns = "id, lookup, metadata, counter, tpm, keys, cipher"

    private static func storedFIDO(_ row: SQLRow) -> StoredFIDOCredential {
        StoredFIDOCredential(id: row.integer(0), lookup: row.blob(1), metadata: row.blob(2), counter: row.integer(3), tpm: row.blob(4),
                             keys: row.blob(5), cipher: row.integer(6))
    }

    /// The credential `id` of `relyingParty`, its metadata opened and
    /// checked against the id; a credential of another relying party is
    /// not found (a key handle presented for another application).
    private func loadFIDO(_ id: [UInt8], relyingParty: String) throws(VaultError) -> (StoredFIDOCredential, FIDOCredentialInfo) {
        guard let row = try db.firstRow("SELECT \(Self.fidoColumns) FROM fido_credentials WHERE lookup = ?", blob: fidoLookup(id),
                                        Self.storedFIDO) else {
            throw VaultError.itemNotFound
        }
        let info = try openFIDOMetadata(row)
        guard info.id == id else { throw VaultError.corrupted("the record found for a FIDO credential belongs to another") }
        guard info.relyingParty == relyingParty else { throw VaultError.itemNotFound }
        return (row, info)
    }

    private func openFIDOMetadata(_ row: StoredFIDOCredential) throws(VaultError) -> FIDOCredentialInfo {
        guard let cipher = RecordCipher(rawValue: row.cipher) else { throw VaultError.corrupted("a FIDO credential names an unknown cipher") }
        guard var info = try metadataKeys.key(cipher).open(row.metadata, ad: Self.fidoMetadataAD(row.lookup), { Self.decodeFIDO($0) }) ?? nil,
              info.publicPoint.count == 65, (0...Int64(UInt32.max)).contains(row.counter) else {
            throw VaultError.corrupted("a FIDO credential's record does not decrypt")
        }
        info.signCount = UInt32(row.counter)
        return info
    }

    /// Every credential (of `relyingParty`, when given), with its state; a
    /// record that does not open is listed as corrupted (only without a
    /// relying party: with one, it cannot be told whose it is).
    package func fidoCredentials(relyingParty: String? = nil) throws(VaultError) -> [FIDOCredentialInfo] {
        let rows = if let relyingParty {
            try db.rows("SELECT \(Self.fidoColumns) FROM fido_credentials WHERE rp = ? ORDER BY id", [.blob(fidoRPLookup(relyingParty))],
                        Self.storedFIDO)
        } else {
            try db.rows("SELECT \(Self.fidoColumns) FROM fido_credentials ORDER BY id", [], Self.storedFIDO)
        }
        if rows.isEmpty { return [] }
        let classKeys = try classKeys()
        let generation = enrollmentGenerationOnce()
        return rows.compactMap { row in
            guard let info = try? openFIDOMetadata(row) else {
                if relyingParty != nil { return nil }
                return FIDOCredentialInfo(id: [], relyingParty: "?", userID: [], userName: "", discoverable: false, verificationRequired: false,
                                          access: .none, created: Date(timeIntervalSince1970: 0), publicPoint: [], state: .corrupted)
            }
            if let relyingParty, info.relyingParty != relyingParty { return nil }
            var listed = info
            listed.state = (try? signingKeyState(row.signingKey(info.idText), access: info.access, publicPoint: info.publicPoint,
                                                 classKeys, generation)) ?? .corrupted
            return listed
        }
    }

    /// The credential's ways to sign that are still open, as an access
    /// control (what to ask for); `itemInvalidated` when none is.
    package func fidoOpenAccess(id: [UInt8], relyingParty: String) throws(VaultError) -> AccessControl {
        let (row, info) = try loadFIDO(id, relyingParty: relyingParty)
        return try signingKeyOpenAccess(row.signingKey(info.idText), access: info.access, publicPoint: info.publicPoint)
    }

    // MARK: - Assert

    /// An assertion by the credential `id` of `relyingParty` over `clientDataHash` (32
    /// bytes), through the way `proof` opens. Its flags: user present
    /// (the proof is a touch or the passcode given for this assertion);
    /// user verified when `userVerification` was asked and the proof is a
    /// finger match or the passcode (a credential made
    /// `verificationRequired` always asks it). The counter is committed
    /// before the TPM signs.
    ///
    /// `attestation`: the authenticator data carries the credential's
    /// attested data (AAGUID, id, COSE key), as a new credential's does
    /// (WebAuthn's self attestation signs it with the credential's own
    /// key). `extensions`: the authenticator's extension outputs (a CBOR
    /// map), appended with the ED flag.
    ///
    /// `hmacSecret`: the hmac-secret extension's salts (32 or 64 bytes)
    /// and the shared secret of PIN/UV auth protocol 2 with the platform:
    /// for a credential made with the extension, its outputs
    /// (HMAC-SHA-256 of each salt under the credential's secret, the one
    /// for a verified or an unverified assertion) go encrypted into the
    /// extensions; for another, nothing.
    package func assertFIDO(id: [UInt8], relyingParty: String, clientDataHash: [UInt8], userVerification: Bool,
                            attestation: Bool = false, extensions: [UInt8]? = nil, hmacSecret: (salts: [UInt8], shared: SecureBytes)? = nil,
                            proof: VaultProof) throws(VaultError) -> FIDOAssertion {
        guard clientDataHash.count == 32 else { throw VaultError.invalidInput("a client data hash is 32 bytes") }
        if let extensions {
            guard extensions.count <= Self.maximumExtensionOutputs, (try? CBOR.decode(extensions))?.mapValue != nil else {
                throw VaultError.invalidInput("extension outputs are a CBOR map of at most \(Self.maximumExtensionOutputs) bytes")
            }
        }
        try requireWritable()
        let (row, info) = try loadFIDO(id, relyingParty: relyingParty)
        let verify = userVerification || info.verificationRequired
        let verified = proof.biometricMatch || proof.passcode != nil
        if verify && !verified { throw VaultError.authenticationRequired }
        // Which way opens is the TPM's to say; checked here first so that
        // a proof that cannot open spends no counter value.
        let open = try signingKeyOpenAccess(row.signingKey(info.idText), access: info.access, publicPoint: info.publicPoint)
        guard open.alternatives.contains(where: { Self.proves(proof, $0) }) else { throw VaultError.authenticationRequired }
        var extensions = extensions
        if let hmacSecret, info.hmacSecret == true {
            extensions = try hmacSecretOutputs(info, verified: verify, salts: hmacSecret.salts, shared: hmacSecret.shared, adding: extensions)
        }
        let counter = try db.transaction { () throws(VaultError) -> UInt32 in
            guard let stored = try db.firstRow("SELECT counter FROM fido_credentials WHERE id = ?", [.integer(row.id)], { $0.integer(0) }) else {
                throw VaultError.itemNotFound
            }
            guard stored < Int64(UInt32.max) else { throw VaultError.invalidInput("the credential's signature counter is spent") }
            try db.query("UPDATE fido_credentials SET counter = ? WHERE id = ?", [.integer(stored + 1), .integer(row.id)])
            return UInt32(stored + 1)
        }
        let flags = FIDOAssertion.userPresent | (verify ? FIDOAssertion.userVerified : 0)
        var attested: [UInt8]?
        if attestation {
            guard let data = AuthenticatorData.attestedCredentialData(id: info.id, publicPoint: info.publicPoint) else { throw VaultError.corrupted("FIDO credential \(info.idText)") }
            attested = data
        }
        let authenticatorData = AuthenticatorData.encode(rpIDHash: Self.sha256(Array(info.relyingParty.utf8)), flags: flags, signCount: counter,
                                                         attested: attested, extensions: extensions)
        let digest = Self.sha256(authenticatorData + clientDataHash)
        let (r, s) = try sign(digest: digest, with: row.signingKey(info.idText), access: info.access, publicPoint: info.publicPoint, proof: proof)
        return FIDOAssertion(authenticatorData: authenticatorData, signature: SSHSignature(r: r, s: s))
    }

    /// The extensions with hmac-secret's encrypted outputs added.
    private func hmacSecretOutputs(_ info: FIDOCredentialInfo, verified: Bool, salts: [UInt8], shared: SecureBytes,
                                   adding extensions: [UInt8]?) throws(VaultError) -> [UInt8] {
        guard salts.count == 32 || salts.count == 64, shared.count == 64 else {
            throw VaultError.invalidInput("hmac-secret takes one or two 32-byte salts and a 64-byte shared secret")
        }
        // CredRandomWithUV or CredRandomWithoutUV: the vault's keyed hash of the credential.
        var credRandom = Crypto.keyedHash(lookupKey, [Array("touchstone/fido-hmac-secret".utf8), [verified ? 1 : 0], info.id])
        defer { secureWipe(&credRandom) }
        var outputs: [UInt8] = []
        defer { secureWipe(&outputs) }
        for start in stride(from: 0, to: salts.count, by: 32) {
            var out = [UInt8](repeating: 0, count: 32)
            crypto_auth_hmacsha256(&out, Array(salts[start..<start + 32]), 32, credRandom)
            outputs += out
            secureWipe(&out)
        }
        let encrypted: [UInt8]
        do { encrypted = try PinUvAuthProtocolTwo.encrypt(shared, outputs) } catch {
            throw VaultError.invalidInput("hmac-secret's outputs do not encrypt")
        }
        var entries: [CBOR.Entry] = []
        if let extensions, let map = (try? CBOR.decode(extensions))?.mapValue { entries = map }
        entries.append(.init(.text("hmac-secret"), .bytes(encrypted)))
        return CBOR.map(entries).encoded()
    }

    /// Whether `proof` shows what the alternative `flags` ask.
    private static func proves(_ proof: VaultProof, _ flags: [AccessFlag]) -> Bool {
        flags.allSatisfy { flag in
            switch flag {
            case .biometryAny, .biometryCurrentSet: proof.biometricMatch
            case .devicePasscode: proof.passcode != nil
            }
        }
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
        return out
    }

    // MARK: - Record

    static func fidoMetadataAD(_ lookup: [UInt8]) -> [UInt8] { fidoMetadataADLabel + lookup }

    /// The metadata record: the info as JSON (its counter and state are
    /// not in it: the counter is its own column).
    private static func encodeFIDO(_ info: FIDOCredentialInfo) throws(VaultError) -> [UInt8] {
        var record = info
        record.signCount = 0
        do {
            return Array(try JSONEncoder().encode(record))
        } catch {
            throw VaultError.invalidInput("a FIDO credential's record does not encode: \(error)")
        }
    }

    private static func decodeFIDO(_ raw: UnsafeRawBufferPointer) -> FIDOCredentialInfo? {
        try? JSONDecoder().decode(FIDOCredentialInfo.self, from: Data(raw))
    }
}

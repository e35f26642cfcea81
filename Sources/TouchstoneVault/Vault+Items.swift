import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// Items: add, read, update, delete, list.
///
/// Record layout (docs/vault.md), one `items` row per item:
/// - `lookup`: keyed BLAKE2b of (service, account) under the lookup key;
/// - `metadata`: AEAD of the attributes (AttributeCodec) under the metadata
///   key; the lookup is recomputed from them and must match;
/// - `secret`: AEAD of the secret under the item key (for access `none`,
///   under the device key), with the item's lookup and access control as
///   associated data;
/// - `keys`: the ways in, with the item key wrapped once per way (WrapCodec):
///   sealed boxes to class keys (nested for "and"), so adding needs no
///   authentication and opening needs the class key that the TPM releases
///   only under its policy. Access `none` has one way in, the device key,
///   with no wrapped key (rows before schema 3: the item key, AEAD under the
///   device key);
/// - `cipher`: the AEAD of the three (RecordCipher): AES-256-GCM or
///   XChaCha20-Poly1305.
extension Vault {
    static let maximumFieldSize = 4096

    func lookupHash(service: String, account: String) -> [UInt8] {
        Crypto.keyedHash(lookupKey, service, account)
    }

    private static let secretADLabel = Array("touchstone/item-secret/v1".utf8)
    private static let deviceWrapADLabel = Array("touchstone/device-wrap/v1".utf8)

    static func secretAD(lookup: [UInt8], access: AccessControl) -> [UInt8] {
        var ad = secretADLabel
        ad.reserveCapacity(ad.count + lookup.count + 64)
        ad += lookup
        ad += access.description.utf8
        return ad
    }

    static let metadataAD = Array("touchstone/item-metadata/v1".utf8)

    static func deviceWrapAD(lookup: [UInt8]) -> [UInt8] {
        deviceWrapADLabel + lookup
    }

    struct Wrap {
        let alternative: Int
        let classKeyIDs: [Int64]
        let wrapped: [UInt8]
    }

    struct StoredItem {
        let id: Int64
        let lookup: [UInt8]
        let metadata: [UInt8]
        let secret: [UInt8]
        /// The wrapped item keys (WrapCodec).
        let keys: [UInt8]
        /// RecordCipher's raw value, as stored.
        let cipher: Int64
    }

    /// The row's record cipher; an unknown one is damage.
    static func cipher(of item: StoredItem) throws -> RecordCipher {
        guard let cipher = RecordCipher(rawValue: item.cipher) else {
            throw VaultError.corrupted("an item's record names an unknown cipher (\(item.cipher))")
        }
        return cipher
    }

    /// `key` ready for the row cipher `cipher`.
    static func itemAEAD(_ key: SecureBytes, _ cipher: RecordCipher) throws -> AEADKey {
        guard let aead = AEADKey(key, cipher: cipher) else { throw cipher.unavailable }
        return aead
    }

    // MARK: - Add

    /// Stores a new item. Needs no authentication (as SecItemAdd); the
    /// passcode must be set for any access other than `none`.
    public func add(_ secret: SecureBytes, attributes: ItemAttributes) throws {
        try validate(attributes)
        try requireWritable()
        guard (1...Self.maximumSecretSize).contains(secret.count) else {
            throw VaultError.invalidInput("a secret is 1 byte to 1 MiB, not \(secret.count) bytes")
        }
        if attributes.accessibility == .whenPasscodeSetThisDeviceOnly || !attributes.access.flags.isEmpty {
            guard try enrolmentIndex() != nil else { throw VaultError.passcodeNotSet }
        }
        let lookup = lookupHash(service: attributes.service, account: attributes.account)
        if try exists(lookup: lookup) { throw VaultError.duplicateItem }

        let cipher = recordCipher
        // Access `none`: the secret is sealed to the device key itself, which
        // is in memory whenever the vault is open (an item key wrapped to it
        // would protect nothing more); its one way in has no wrapped key.
        if attributes.access.flags.isEmpty {
            let secretBox = try deviceKeys.key(cipher).seal(secret, ad: Self.secretAD(lookup: lookup, access: attributes.access))
            let keys = WrapCodec.encode([Wrap(alternative: 0, classKeyIDs: [ClassKey.deviceID], wrapped: [])])
            return try insert(lookup, try sealMetadata(attributes, cipher), secretBox, keys, cipher)
        }
        let itemKey = SecureBytes.random(count: Crypto.keySize)
        var wraps: [Wrap] = []
        for (n, alternative) in attributes.access.alternatives.enumerated() {
            let keys: [(Int64, [UInt8])] = try alternative.map { let k = try activeClassKey(for: $0); return (k.id, k.publicKey) }
            // The first box is the item key itself: wiped once sealed. The
            // array is the only reference to its storage when it is wiped
            // (a copy would make the wipe land on a copy).
            var box = itemKey.withUnsafeBytes { Array($0) }
            for (_, publicKey) in keys {
                let sealed = box.withUnsafeBytes { Crypto.sealBox($0, to: publicKey) }
                secureWipe(&box)
                box = sealed
            }
            wraps.append(Wrap(alternative: n, classKeyIDs: keys.map(\.0), wrapped: box))
        }
        let secretBox = try Self.itemAEAD(itemKey, cipher).seal(secret, ad: Self.secretAD(lookup: lookup, access: attributes.access))
        try insert(lookup, try sealMetadata(attributes, cipher), secretBox, WrapCodec.encode(wraps), cipher)
    }

    /// Adds a new item's row (duplicateItem if another process just added
    /// one by the same name).
    private func insert(_ lookup: [UInt8], _ metadata: [UInt8], _ secret: [UInt8], _ keys: [UInt8],
                        _ cipher: RecordCipher) throws {
        try db.transaction {
            if try exists(lookup: lookup) { throw VaultError.duplicateItem }
            try db.query("INSERT INTO items(lookup, metadata, secret, keys, cipher) VALUES(?, ?, ?, ?, ?)",
                         [.blob(lookup), .blob(metadata), .blob(secret), .blob(keys), .integer(cipher.rawValue)])
        }
    }

    func validate(_ a: ItemAttributes) throws {
        for (name, value) in [("service", a.service), ("account", a.account)] {
            guard !value.isEmpty else { throw VaultError.invalidInput("the \(name) is empty") }
        }
        for (name, value) in [("service", a.service), ("account", a.account), ("label", a.label ?? ""), ("comment", a.comment ?? "")] {
            guard value.utf8.count <= Self.maximumFieldSize else {
                throw VaultError.invalidInput("the \(name) is longer than \(Self.maximumFieldSize) bytes")
            }
        }
        guard (a.generic?.count ?? 0) <= Self.maximumSecretSize else { throw VaultError.invalidInput("generic data over 1 MiB") }
    }

    func sealMetadata(_ attributes: ItemAttributes, _ cipher: RecordCipher) throws -> [UInt8] {
        var plain = AttributeCodec.encode(attributes)
        defer { secureWipe(&plain) }
        return try metadataKeys.key(cipher).seal(plain, ad: Self.metadataAD)
    }

    /// The item's attributes, checked against its lookup hash. `expected`:
    /// the (service, account) whose hash found the row; when the attributes
    /// name exactly these, the row's lookup is their hash already (it was
    /// found by it), and the hash is not computed again.
    func openMetadata(_ item: StoredItem, expected: (service: String, account: String)? = nil) throws -> ItemAttributes {
        guard let plain = try metadataKeys.key(Self.cipher(of: item)).open(item.metadata, ad: Self.metadataAD) else {
            throw VaultError.corrupted("an item's attributes do not decrypt")
        }
        let attributes = try plain.withUnsafeBytes { try Self.decodeAttributes($0) }
        // Bytes, not String ==: canonically equivalent strings hash differently.
        if let expected, Crypto.sameBytes(attributes.service, expected.service),
           Crypto.sameBytes(attributes.account, expected.account) {
            return attributes
        }
        guard lookupHash(service: attributes.service, account: attributes.account) == item.lookup else {
            throw VaultError.corrupted("the item \(attributes.service)/\(attributes.account) does not match its lookup hash")
        }
        return attributes
    }

    /// The attributes from their decrypted record: the binary encoding
    /// (AttributeCodec), or JSON as the first release wrote it. Any
    /// malformed input is `corrupted`, never a trap (fuzzed:
    /// fuzz/ItemRecord.swift).
    static func decodeAttributes(_ plain: UnsafeRawBufferPointer) throws -> ItemAttributes {
        if plain.first == AttributeCodec.format {
            guard let attributes = AttributeCodec.decode(plain) else {
                throw VaultError.corrupted("an item's attributes do not parse")
            }
            return attributes
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            return try decoder.decode(ItemAttributes.self, from: Data(plain))
        } catch {
            throw VaultError.corrupted("an item's attributes do not parse")
        }
    }

    /// The class key ids of a wraps row ("3", "3+5", "0"); nil for anything
    /// else (fuzzed: fuzz/ItemRecord.swift).
    static func parseClassKeyIDs(_ text: String) -> [Int64]? {
        let parts = text.split(separator: "+", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.count <= AccessFlag.allCases.count else { return nil }
        var ids: [Int64] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 19, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let id = Int64(part), id >= 0 else { return nil }
            ids.append(id)
        }
        return ids
    }

    // MARK: - Read

    func exists(lookup: [UInt8]) throws -> Bool {
        try !db.rows("SELECT 1 FROM items WHERE lookup = ?", [.blob(lookup)]) { _ in true }.isEmpty
    }

    static let itemColumns = "id, lookup, metadata, secret, keys, cipher"

    static func storedItem(_ row: SQLRow) -> StoredItem {
        StoredItem(id: row.integer(0), lookup: row.blob(1), metadata: row.blob(2), secret: row.blob(3), keys: row.blob(4),
                   cipher: row.integer(5))
    }

    private static let rowByLookup = "SELECT id, metadata, secret, keys, cipher FROM items WHERE lookup = ?"

    /// The item stored under `lookup` (one row: its keys record is in it).
    func row(lookup: [UInt8]) throws -> StoredItem? {
        // The row's lookup equals the one it was found by: not read again.
        try db.firstRow(Self.rowByLookup, blob: lookup) {
            StoredItem(id: $0.integer(0), lookup: lookup, metadata: $0.blob(1), secret: $0.blob(2), keys: $0.blob(3),
                       cipher: $0.integer(4))
        }
    }

    func allRows() throws -> [StoredItem] {
        try db.rows("SELECT \(Self.itemColumns) FROM items ORDER BY id", [], Self.storedItem)
    }

    static let damagedWrap = VaultError.corrupted("an item's wrapped keys are damaged")

    /// The item's wrapped keys, one per way in.
    func wraps(of item: StoredItem) throws -> [Wrap] {
        guard let wraps = WrapCodec.decode(item.keys) else { throw Self.damagedWrap }
        return wraps
    }

    /// The item for (service, account), its attributes checked. A missing
    /// row whose lookup hash was altered is found by its attributes and
    /// reported as corrupted, not as missing.
    func load(service: String, account: String) throws -> (StoredItem, ItemAttributes) {
        let lookup = lookupHash(service: service, account: account)
        if let item = try row(lookup: lookup) {
            let attributes = try openMetadata(item, expected: (service, account))
            guard attributes.service == service, attributes.account == account else {
                throw VaultError.corrupted("the record found for \(service)/\(account) belongs to another item")
            }
            return (item, attributes)
        }
        for item in try allRows() {
            guard let cipher = try? Self.cipher(of: item), let key = try? metadataKeys.key(cipher),
                  let json = key.open(item.metadata, ad: Self.metadataAD) else { continue }
            if let a = try? json.withUnsafeBytes({ try Self.decodeAttributes($0) }),
               a.service == service, a.account == account {
                throw VaultError.corrupted("the lookup hash of \(service)/\(account) was altered")
            }
        }
        throw VaultError.itemNotFound
    }

    /// The attributes of one item (no authentication).
    public func attributes(service: String, account: String) throws -> ItemAttributes {
        try load(service: service, account: account).1
    }

    /// The item's secret, opened with what `proof` shows.
    ///
    /// The row is read where SQLite holds it, with the checks of `load`:
    /// the attributes decrypt, parse to their fields, and name exactly this
    /// service and account (the other attributes are not turned into
    /// strings: a read does not return them). An item of access `none` is
    /// opened there, while the row is current; one that needs a class key is
    /// copied out first, so no TPM command runs under the database's lock.
    /// Anything unusual (no row, a record that does not decrypt or parse,
    /// another item's record, a first-release JSON record, a wrapped key
    /// that does not open) goes through `load` and `openItemKey`, which say
    /// what.
    public func secret(service: String, account: String, proof: VaultProof) throws -> SecureBytes {
        let name = (service: service, account: account)
        let lookup = lookupHash(service: service, account: account)
        let found = try db.firstRow(Self.rowByLookup, blob: lookup) { try read($0, lookup: lookup, name: name) }
        let item: StoredItem, access: AccessControl
        switch found {
        case .opened(let secret)?:
            return secret
        case .needsClassKey(let copied, let itemAccess)?:
            (item, access) = (copied, itemAccess)
        case .unusual?, nil:
            let (loaded, attributes) = try load(service: service, account: account)
            (item, access) = (loaded, attributes.access)
        }
        let key = try secretKey(item, access: access, name: name, proof: proof)
        return try item.secret.withUnsafeBufferPointer { try openSecret($0, key, lookup: item.lookup, access: access, name: name) }
    }

    /// What a read found in the current row.
    private enum RowRead {
        /// Access `none`: the secret, opened.
        case opened(SecureBytes)
        /// The row, copied out, and its access control: a class key is needed.
        case needsClassKey(StoredItem, AccessControl)
        /// Anything else: `load` says what.
        case unusual
    }

    /// A read's work on the current row of `rowByLookup`.
    private func read(_ row: SQLRow, lookup: [UInt8], name: (service: String, account: String)) throws -> RowRead {
        guard let cipher = RecordCipher(rawValue: row.integer(4)), let metadataKey = try? metadataKeys.key(cipher) else {
            return .unusual
        }
        let access: AccessControl? = row.withBlob(1) { box in
            metadataKey.open(box, ad: Self.metadataAD) { raw -> AccessControl? in
                guard let fields = AttributeCodec.fields(raw),
                      Crypto.sameBytes(fields.service, name.service), Crypto.sameBytes(fields.account, name.account) else { return nil }
                return fields.access
            } ?? nil
        }
        guard let access else { return .unusual }
        guard access.flags.isEmpty else {
            let item = StoredItem(id: row.integer(0), lookup: lookup, metadata: row.blob(1), secret: row.blob(2),
                                  keys: row.blob(3), cipher: cipher.rawValue)
            return .needsClassKey(item, access)
        }
        // Access `none`: one way in, through the device key: the secret is
        // sealed to it (or, in rows before schema 3, to an item key wrapped
        // to it).
        let deviceKey = try deviceKeys.key(cipher)
        enum DeviceWay { case direct, wrapped(SecureBytes), damaged }
        let way: DeviceWay = row.withBlob(3) { keys in
            guard let range = WrapCodec.deviceWrap(in: keys) else { return .damaged }
            if range.isEmpty { return .direct }
            guard let itemKey = deviceKey.open(UnsafeBufferPointer(rebasing: keys[range]), ad: Self.deviceWrapAD(lookup: lookup)),
                  itemKey.count == Crypto.keySize else { return .damaged }
            return .wrapped(itemKey)
        }
        let key: AEADKey
        switch way {
        case .direct: key = deviceKey
        case .wrapped(let itemKey): key = try Self.itemAEAD(itemKey, cipher)
        case .damaged: return .unusual
        }
        return .opened(try row.withBlob(2) { try openSecret($0, key, lookup: lookup, access: access, name: name) })
    }

    /// The secret in `box`, under `key` (the item's, or the device key).
    private func openSecret(_ box: UnsafeBufferPointer<UInt8>, _ key: AEADKey,
                            lookup: [UInt8], access: AccessControl, name: (service: String, account: String)) throws -> SecureBytes {
        guard let secret = key.open(box, ad: Self.secretAD(lookup: lookup, access: access)) else {
            throw VaultError.corrupted("the secret of \(name.service)/\(name.account) does not decrypt")
        }
        return secret
    }

    /// Whether an item's ways in fit its access control: one per
    /// alternative, and the device key is the one way into an access-`none`
    /// item and no way into any other.
    static func ways(_ wraps: [Wrap], match access: AccessControl) -> Bool {
        wraps.count == access.alternativeCount
            && wraps.allSatisfy { ($0.classKeyIDs == [ClassKey.deviceID]) == access.flags.isEmpty }
    }

    /// The key the item's secret is sealed under: its item key, or for an
    /// access-`none` item of schema 3 the device key itself.
    func secretKey(_ item: StoredItem, access: AccessControl, name: (service: String, account: String),
                   proof: VaultProof) throws -> AEADKey {
        let cipher = try Self.cipher(of: item)
        guard let itemKey = try openItemKey(item, access: access, name: name, proof: proof) else { return try deviceKeys.key(cipher) }
        return try Self.itemAEAD(itemKey, cipher)
    }

    /// Tries each way into the item that `proof` can satisfy: the item key,
    /// or nil when the item has none (access `none`, its secret sealed to
    /// the device key). `name`: the item's service and account, for
    /// messages.
    func openItemKey(_ item: StoredItem, access: AccessControl, name: (service: String, account: String),
                     proof: VaultProof) throws -> SecureBytes? {
        let wraps = try wraps(of: item)
        guard Self.ways(wraps, match: access) else {
            throw VaultError.corrupted("the wrapped keys of \(name.service)/\(name.account) do not match its access control (\(wraps.count) for \(access.alternativeCount) ways in)")
        }
        // Items wrapped only to the device key (access none) need no class
        // key record: skip that query for them.
        let needsClassKeys = wraps.contains { $0.classKeyIDs.contains { $0 != ClassKey.deviceID } }
        let classKeys = needsClassKeys ? try classKeys() : [:]
        var closed = 0
        for wrap in wraps {
            if wrap.classKeyIDs == [ClassKey.deviceID] {
                if wrap.wrapped.isEmpty { return nil }
                guard let itemKey = try deviceKeys.key(Self.cipher(of: item)).open(wrap.wrapped, ad: Self.deviceWrapAD(lookup: item.lookup)),
                      itemKey.count == Crypto.keySize else {
                    throw VaultError.corrupted("a wrapped key of \(name.service)/\(name.account) does not open")
                }
                return itemKey
            }
            var keys: [ClassKey] = []
            for id in wrap.classKeyIDs where id != ClassKey.deviceID {
                if let key = classKeys[id] { keys.append(key) }
            }
            guard keys.count == wrap.classKeyIDs.count, !keys.isEmpty else { closed += 1; continue }  // removed with the passcode
            let needsPasscode = keys.contains { $0.kind == .passcode }
            let needsMatch = keys.contains { $0.kind == .biometryAny || $0.kind == .biometryCurrentSet }
            if (needsPasscode && proof.passcode == nil) || (needsMatch && !proof.biometricMatch) {
                continue
            }
            do {
                var box = wrap.wrapped
                for key in keys.reversed() {
                    let secretKey = try openClassKey(key, proof: proof)
                    guard let opened = Crypto.openBox(box, publicKey: key.publicKey, secretKey: secretKey) else {
                        throw VaultError.corrupted("a wrapped key of \(name.service)/\(name.account) does not open")
                    }
                    box = opened.withUnsafeBytes { Array($0) }
                }
                defer { secureWipe(&box) }
                guard box.count == Crypto.keySize else { throw VaultError.corrupted("a wrapped key has the wrong size") }
                return SecureBytes(consuming: &box)
            } catch VaultError.itemInvalidated {
                closed += 1
            }
        }
        if closed == wraps.count { throw VaultError.itemInvalidated }
        throw VaultError.authenticationRequired
    }

    /// The item's ways in that are still open, as an access control: a
    /// biometry-current-set alternative whose enrolment set is gone, or one
    /// whose class key went with the passcode, is dropped. Throws
    /// `itemInvalidated` when none is left.
    public func openAccess(service: String, account: String) throws -> AccessControl {
        let (item, attributes) = try load(service: service, account: account)
        let classKeys = try classKeys()
        let wraps = try wraps(of: item)
        // The TPM's state is read only when a biometry-current-set key is involved.
        let needsState = wraps.contains { $0.classKeyIDs.contains { classKeys[$0]?.kind == .biometryCurrentSet } }
        let state = needsState ? try currentDomainState() : nil
        let alternatives = attributes.access.alternatives
        guard wraps.count == alternatives.count else {
            throw VaultError.corrupted("the item \(service)/\(account) has \(wraps.count) wrapped keys for \(alternatives.count) ways in")
        }
        let open = zip(wraps, alternatives).filter { wrap, _ in Self.isOpen(wrap, classKeys, state) }.map(\.1)
        guard !open.isEmpty else { throw VaultError.itemInvalidated }
        if attributes.access.flags.isEmpty { return .none }
        if attributes.access.combination == .all { return attributes.access }
        return AccessControl(open.flatMap { $0 }, combination: .any)
    }

    static func isOpen(_ wrap: Wrap, _ classKeys: [Int64: ClassKey], _ state: [UInt8]?) -> Bool {
        wrap.classKeyIDs.allSatisfy { id in
            if id == ClassKey.deviceID { return true }
            guard let key = classKeys[id] else { return false }
            return key.kind != .biometryCurrentSet || key.epoch == state
        }
    }

    // MARK: - Update, delete

    /// Replaces the secret (needs the same authentication as reading it)
    /// and/or the label, comment and generic data (no authentication).
    public func update(service: String, account: String, secret newSecret: SecureBytes? = nil,
                       label: String?? = nil, comment: String?? = nil, generic: Data?? = nil,
                       proof: VaultProof = .none) throws {
        try requireWritable()
        let (item, old) = try load(service: service, account: account)
        var attributes = old
        if let label { attributes.label = label }
        if let comment { attributes.comment = comment }
        if let generic { attributes.generic = generic }
        attributes.modified = Date()
        try validate(attributes)
        var secretBox = item.secret
        if let newSecret {
            guard (1...Self.maximumSecretSize).contains(newSecret.count) else {
                throw VaultError.invalidInput("a secret is 1 byte to 1 MiB, not \(newSecret.count) bytes")
            }
            secretBox = try secretKey(item, access: old.access, name: (service, account), proof: proof)
                .seal(newSecret, ad: Self.secretAD(lookup: item.lookup, access: old.access))
        }
        // The row keeps its cipher: its other boxes were made with it.
        try rewrite(item, metadata: try sealMetadata(attributes, Self.cipher(of: item)), secret: secretBox)
    }

    /// Writes an item's new records over the row `item` was read from. The
    /// row may have been deleted since by another process: then nothing is
    /// written, and the item is reported not found (not a silent success).
    func rewrite(_ item: StoredItem, metadata: [UInt8], secret: [UInt8]) throws {
        let updated = try db.transaction {
            try db.query("UPDATE items SET metadata = ?, secret = ? WHERE id = ? AND lookup = ?",
                         [.blob(metadata), .blob(secret), .integer(item.id), .blob(item.lookup)])
            return db.changes
        }
        if updated == 0 { throw VaultError.itemNotFound }
    }

    /// Deletes the item (no authentication, as SecItemDelete). A corrupted
    /// item can be deleted too.
    public func delete(service: String, account: String) throws {
        try requireWritable()
        let lookup = lookupHash(service: service, account: account)
        try db.query("DELETE FROM items WHERE lookup = ?", [.blob(lookup)])
        if db.changes == 0 {
            _ = try load(service: service, account: account)  // corrupted or not found: says which
            throw VaultError.itemNotFound
        }
    }

    // MARK: - List

    /// Every item's attributes and state, without authentication and without
    /// any secret. One bad record is listed as corrupted; the rest are listed.
    public func list(service: String? = nil) throws -> [ListedItem] {
        let classKeys = try classKeys()
        let state = try currentDomainState()
        var out: [ListedItem] = []
        for item in try allRows() {
            guard let attributes = try? openMetadata(item) else {
                if service == nil { out.append(ListedItem(attributes: nil, state: .corrupted)) }
                continue
            }
            if let service, attributes.service != service { continue }
            guard let wraps = try? self.wraps(of: item), Self.ways(wraps, match: attributes.access) else {
                out.append(ListedItem(attributes: attributes, state: .corrupted))
                continue
            }
            let open = wraps.contains { Self.isOpen($0, classKeys, state) }
            out.append(ListedItem(attributes: attributes, state: open ? .ok : .invalidated))
        }
        return out
    }

    /// How many items the vault holds.
    public func itemCount() throws -> Int {
        try db.rows("SELECT COUNT(*) FROM items", []) { Int($0.integer(0)) }.first ?? 0
    }
}

import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// Items: add, read, update, delete, list.
///
/// Record layout (docs/vault.md):
/// - `lookup`: keyed BLAKE2b of (service, account) under the lookup key;
/// - `metadata`: XChaCha20-Poly1305 of the attributes (JSON) under the
///   metadata key; the lookup is recomputed from them and must match;
/// - `secret`: XChaCha20-Poly1305 of the secret under the item key, with the
///   item's lookup and access control as associated data;
/// - `wraps`: the item key in a sealed box to each way in (nested boxes for
///   "and"), so adding needs no authentication and opening needs the class
///   key that the TPM releases only under its policy.
extension Vault {
    static let maximumFieldSize = 4096

    func lookupHash(service: String, account: String) -> [UInt8] {
        Crypto.keyedHash(lookupKey, [Array(service.utf8), Array(account.utf8)])
    }

    static func secretAD(lookup: [UInt8], access: AccessControl) -> [UInt8] {
        Array("touchstone/item-secret/v1".utf8) + lookup + Array(access.description.utf8)
    }

    static let metadataAD = Array("touchstone/item-metadata/v1".utf8)

    static func deviceWrapAD(lookup: [UInt8]) -> [UInt8] {
        Array("touchstone/device-wrap/v1".utf8) + lookup
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
        if try row(lookup: lookup) != nil { throw VaultError.duplicateItem }

        let itemKey = SecureBytes.random(count: Crypto.keySize)
        var wraps: [Wrap] = []
        for (n, alternative) in attributes.access.alternatives.enumerated() {
            if alternative.isEmpty {
                wraps.append(Wrap(alternative: n, classKeyIDs: [ClassKey.deviceID],
                                  wrapped: Crypto.seal(itemKey, key: deviceKey, ad: Self.deviceWrapAD(lookup: lookup))))
                continue
            }
            let keys: [(Int64, [UInt8])] = try alternative.map { let k = try activeClassKey(for: $0); return (k.id, k.publicKey) }
            var box = itemKey.withUnsafeBytes { Array($0) }
            for (_, publicKey) in keys {
                let inner = box
                box = inner.withUnsafeBytes { Crypto.sealBox($0, to: publicKey) }
                var wipeable = inner
                secureWipe(&wipeable)
            }
            wraps.append(Wrap(alternative: n, classKeyIDs: keys.map(\.0), wrapped: box))
        }
        let secretBox = Crypto.seal(secret, key: itemKey, ad: Self.secretAD(lookup: lookup, access: attributes.access))
        let metadataBox = try sealMetadata(attributes)
        try db.transaction {
            if try row(lookup: lookup) != nil { throw VaultError.duplicateItem }
            try db.query("INSERT INTO items(lookup, metadata, secret) VALUES(?, ?, ?)",
                         [.blob(lookup), .blob(metadataBox), .blob(secretBox)])
            let id = db.lastInsertRowID
            for wrap in wraps {
                try db.query("INSERT INTO wraps(item_id, alternative, class_keys, wrapped) VALUES(?, ?, ?, ?)",
                             [.integer(id), .integer(Int64(wrap.alternative)),
                              .text(wrap.classKeyIDs.map(String.init).joined(separator: "+")), .blob(wrap.wrapped)])
            }
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

    func sealMetadata(_ attributes: ItemAttributes) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        var json = [UInt8](try encoder.encode(attributes))
        defer { secureWipe(&json) }
        return Crypto.seal(json, key: metadataKey, ad: Self.metadataAD)
    }

    func openMetadata(_ item: StoredItem) throws -> ItemAttributes {
        guard let json = Crypto.open(item.metadata, key: metadataKey, ad: Self.metadataAD) else {
            throw VaultError.corrupted("an item's attributes do not decrypt")
        }
        let attributes = try json.withUnsafeBytes { try Self.decodeAttributes($0) }
        guard lookupHash(service: attributes.service, account: attributes.account) == item.lookup else {
            throw VaultError.corrupted("the item \(attributes.service)/\(attributes.account) does not match its lookup hash")
        }
        return attributes
    }

    /// The attributes from their decrypted JSON. Any malformed input is
    /// `corrupted`, never a trap (fuzzed: fuzz/ItemRecord.swift).
    static func decodeAttributes(_ json: UnsafeRawBufferPointer) throws -> ItemAttributes {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            return try decoder.decode(ItemAttributes.self, from: Data(json))
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

    func row(lookup: [UInt8]) throws -> StoredItem? {
        try db.rows("SELECT id, lookup, metadata, secret FROM items WHERE lookup = ?", [.blob(lookup)]) {
            StoredItem(id: $0.integer(0), lookup: $0.blob(1), metadata: $0.blob(2), secret: $0.blob(3))
        }.first
    }

    func allRows() throws -> [StoredItem] {
        try db.rows("SELECT id, lookup, metadata, secret FROM items ORDER BY id", []) {
            StoredItem(id: $0.integer(0), lookup: $0.blob(1), metadata: $0.blob(2), secret: $0.blob(3))
        }
    }

    func wraps(of item: StoredItem) throws -> [Wrap] {
        try db.rows("SELECT alternative, class_keys, wrapped FROM wraps WHERE item_id = ? ORDER BY alternative",
                    [.integer(item.id)]) { row in
            guard let ids = Self.parseClassKeyIDs(row.text(1)) else {
                throw VaultError.corrupted("a wrapped key names no valid class key")
            }
            return Wrap(alternative: Int(row.integer(0)), classKeyIDs: ids, wrapped: row.blob(2))
        }
    }

    /// Every item's wraps, by item id, in one query (listing used to make
    /// one query per item).
    func allWraps() throws -> [Int64: [Wrap]] {
        var out: [Int64: [Wrap]] = [:]
        try db.query("SELECT item_id, alternative, class_keys, wrapped FROM wraps ORDER BY item_id, alternative") { row in
            out[row.integer(0), default: []].append(
                // A damaged id list names class key -1, which never exists:
                // that way in counts as closed.
                Wrap(alternative: Int(row.integer(1)),
                     classKeyIDs: Self.parseClassKeyIDs(row.text(2)) ?? [-1],
                     wrapped: row.blob(3)))
        }
        return out
    }

    /// The item for (service, account), its attributes checked. A missing
    /// row whose lookup hash was altered is found by its attributes and
    /// reported as corrupted, not as missing.
    func load(service: String, account: String) throws -> (StoredItem, ItemAttributes) {
        let lookup = lookupHash(service: service, account: account)
        if let item = try row(lookup: lookup) {
            let attributes = try openMetadata(item)
            guard attributes.service == service, attributes.account == account else {
                throw VaultError.corrupted("the record found for \(service)/\(account) belongs to another item")
            }
            return (item, attributes)
        }
        for item in try allRows() {
            guard let json = Crypto.open(item.metadata, key: metadataKey, ad: Self.metadataAD) else { continue }
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
    public func secret(service: String, account: String, proof: VaultProof) throws -> SecureBytes {
        let (item, attributes) = try load(service: service, account: account)
        let itemKey = try openItemKey(item, attributes, proof: proof)
        guard let secret = Crypto.open(item.secret, key: itemKey,
                                       ad: Self.secretAD(lookup: item.lookup, access: attributes.access)) else {
            throw VaultError.corrupted("the secret of \(service)/\(account) does not decrypt")
        }
        return secret
    }

    /// Tries each way into the item that `proof` can satisfy.
    func openItemKey(_ item: StoredItem, _ attributes: ItemAttributes, proof: VaultProof) throws -> SecureBytes {
        let wraps = try wraps(of: item)
        guard wraps.count == attributes.access.alternatives.count else {
            throw VaultError.corrupted("the item \(attributes.service)/\(attributes.account) has \(wraps.count) wrapped keys for \(attributes.access.alternatives.count) ways in")
        }
        // Items wrapped only to the device key (access none) need no class
        // key record: skip that query for them.
        let needsClassKeys = wraps.contains { $0.classKeyIDs.contains { $0 != ClassKey.deviceID } }
        let classKeys = needsClassKeys ? try classKeys() : [:]
        var closed = 0
        for wrap in wraps {
            if wrap.classKeyIDs == [ClassKey.deviceID] {
                guard let itemKey = Crypto.open(wrap.wrapped, key: deviceKey, ad: Self.deviceWrapAD(lookup: item.lookup)),
                      itemKey.count == Crypto.keySize else {
                    throw VaultError.corrupted("a wrapped key of \(attributes.service)/\(attributes.account) does not open")
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
                        throw VaultError.corrupted("a wrapped key of \(attributes.service)/\(attributes.account) does not open")
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
            let itemKey = try openItemKey(item, old, proof: proof)
            secretBox = Crypto.seal(newSecret, key: itemKey, ad: Self.secretAD(lookup: item.lookup, access: old.access))
        }
        let metadataBox = try sealMetadata(attributes)
        try db.query("UPDATE items SET metadata = ?, secret = ? WHERE id = ?",
                     [.blob(metadataBox), .blob(secretBox), .integer(item.id)])
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
        let rows = try allRows()
        let wrapsByItem = try allWraps()
        var out: [ListedItem] = []
        for item in rows {
            guard let attributes = try? openMetadata(item) else {
                if service == nil { out.append(ListedItem(attributes: nil, state: .corrupted)) }
                continue
            }
            if let service, attributes.service != service { continue }
            let open = (wrapsByItem[item.id] ?? []).contains { Self.isOpen($0, classKeys, state) }
            out.append(ListedItem(attributes: attributes, state: open ? .ok : .invalidated))
        }
        return out
    }

    /// How many items the vault holds.
    public func itemCount() throws -> Int {
        try db.rows("SELECT COUNT(*) FROM items", []) { Int($0.integer(0)) }.first ?? 0
    }
}

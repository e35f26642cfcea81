import Foundation
import TouchstoneSecure

/// Items: add, read, update, delete, list.
extension Vault {
    static let maximumFieldSize = 4096

    // MARK: - Add

    /// Stores a new item. Needs no authentication (as SecItemAdd); the
    /// passcode must be set for any access other than `none`. An item of
    /// that service and account already there is `duplicateItem`.
    package func add(_ secret: SecureBytes, attributes: ItemAttributes) throws(VaultError) {
        _ = try add(secret, attributes: attributes, rule: .refuseDuplicateName)
    }

    /// What an add does about items already there.
    package enum AddRule: Sendable {
        /// `duplicateItem` when an item has the service and account (the
        /// CLI's and the Keychain API's add).
        case refuseDuplicateName
        /// Adds beside them (a Secret Service CreateItem without replace).
        case keepOthers
        /// Replaces the items whose attribute set equals this one's and,
        /// when the set names a service and an account, the items of that
        /// service and account (CreateItem with replace): one transaction.
        case replaceEqual
    }

    /// Stores a new item under `rule`; returns its reference and those of
    /// the items it replaced. An item with a search attribute set (a Secret
    /// Service item) may hold an empty secret.
    package func add(_ secret: SecureBytes, attributes: ItemAttributes,
                     rule: AddRule) throws(VaultError) -> (ItemReference, replaced: [ItemReference]) {
        try validate(attributes)
        try requireWritable()
        let row = try makeRow(secret, attributes)
        return try db.transaction { () throws(VaultError) in
            var replaced: [Int64] = []
            switch rule {
            case .refuseDuplicateName:
                if try exists(lookup: row.lookup) { throw VaultError.duplicateItem }
            case .keepOthers:
                break
            case .replaceEqual:
                replaced = try equalItems(attributes)
                for id in replaced { try db.query("DELETE FROM items WHERE id = ?", [.integer(id)]) }
            }
            let id = try insert(row)
            try indexAttributes(id, attributes)
            return (ItemReference(id: id), replaced.map(ItemReference.init(id:)))
        }
    }

    /// A new item's row, its item key wrapped to the class keys its access
    /// names (no authentication: sealed boxes to their public keys).
    struct NewRow {
        let lookup: [UInt8]
        let metadata: [UInt8]
        let secret: [UInt8]
        let keys: [UInt8]
        let cipher: RecordCipher
    }

    func makeRow(_ secret: SecureBytes, _ attributes: ItemAttributes) throws(VaultError) -> NewRow {
        let smallest = attributes.searchAttributes == nil ? 1 : 0
        guard (smallest...Self.maximumSecretSize).contains(secret.count) else {
            throw VaultError.invalidInput("a secret is \(smallest) byte\(smallest == 1 ? "" : "s") to 1 MiB, not \(secret.count) bytes")
        }
        if attributes.accessibility == .whenPasscodeSetThisDeviceOnly || !attributes.access.flags.isEmpty {
            guard isPasscodeSet else { throw VaultError.passcodeNotSet }
        }
        let lookup = lookupHash(service: attributes.service, account: attributes.account)
        let cipher = recordCipher
        let ad = Self.secretAD(lookup: lookup, access: attributes.access)
        // Access `none`: the secret is sealed to the device key itself, which
        // is in memory whenever the vault is open (an item key wrapped to it
        // would protect nothing more); its one way in has no wrapped key.
        if attributes.access.flags.isEmpty {
            let secretBox = try deviceKeys.key(cipher).seal(secret, ad: ad)
            let keys = WrapCodec.encode([Wrap(alternative: 0, classKeyIDs: [ClassKey.deviceID], wrapped: [])])
            return NewRow(lookup: lookup, metadata: try sealMetadata(attributes, cipher), secret: secretBox, keys: keys, cipher: cipher)
        }
        let itemKey = SecureBytes.random(count: Crypto.keySize)
        let wraps = try wrap(itemKey, for: attributes.access)
        let secretBox = try Self.itemAEAD(itemKey, cipher).seal(secret, ad: ad)
        return NewRow(lookup: lookup, metadata: try sealMetadata(attributes, cipher), secret: secretBox,
                      keys: WrapCodec.encode(wraps), cipher: cipher)
    }

    func validate(_ a: ItemAttributes) throws(VaultError) {
        for (name, value) in [("service", a.service), ("account", a.account)] {
            guard !value.isEmpty else { throw VaultError.invalidInput("the \(name) is empty") }
        }
        for (name, value) in [("service", a.service), ("account", a.account), ("label", a.label ?? ""), ("comment", a.comment ?? "")] {
            guard value.utf8.count <= Self.maximumFieldSize else {
                throw VaultError.invalidInput("the \(name) is longer than \(Self.maximumFieldSize) bytes")
            }
        }
        guard (a.generic?.count ?? 0) <= Self.maximumSecretSize else { throw VaultError.invalidInput("generic data over 1 MiB") }
        if let set = a.searchAttributes {
            guard set.count <= AttributeCodec.maximumAttributeCount else {
                throw VaultError.invalidInput("an item has at most \(AttributeCodec.maximumAttributeCount) attributes, not \(set.count)")
            }
            for (name, value) in set where name.utf8.count > Self.maximumFieldSize || value.utf8.count > Self.maximumFieldSize {
                throw VaultError.invalidInput("an attribute's name or value is longer than \(Self.maximumFieldSize) bytes")
            }
        }
        guard (a.contentType?.utf8.count ?? 0) <= 255 else { throw VaultError.invalidInput("the content type is longer than 255 bytes") }
    }

    // MARK: - Read

    /// The item for (service, account), its attributes checked. A missing
    /// row whose lookup hash was altered is found by its attributes and
    /// reported as corrupted, not as missing.
    func load(service: String, account: String) throws(VaultError) -> (StoredItem, ItemAttributes) {
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
    package func attributes(service: String, account: String) throws(VaultError) -> ItemAttributes {
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
    package func secret(service: String, account: String, proof: VaultProof) throws(VaultError) -> SecureBytes {
        let name = (service: service, account: account)
        let lookup = lookupHash(service: service, account: account)
        let found = try db.firstRow(Self.rowByLookup, blob: lookup) { row throws(VaultError) in try read(row, lookup: lookup, name: name) }
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
        return try item.secret.withUnsafeBufferPointer { box in
            Result { () throws(VaultError) in try openSecret(box, key, lookup: item.lookup, access: access, name: name) }
        }.get()
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
    private func read(_ row: SQLRow, lookup: [UInt8], name: (service: String, account: String)) throws(VaultError) -> RowRead {
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
        return .opened(try row.withBlob(2) { box throws(VaultError) in try openSecret(box, key, lookup: lookup, access: access, name: name) })
    }

    /// The secret in `box`, under `key` (the item's, or the device key).
    private func openSecret(_ box: UnsafeBufferPointer<UInt8>, _ key: AEADKey,
                            lookup: [UInt8], access: AccessControl, name: (service: String, account: String)) throws(VaultError) -> SecureBytes {
        guard let secret = key.open(box, ad: Self.secretAD(lookup: lookup, access: access)) else {
            throw VaultError.corrupted("the secret of \(name.service)/\(name.account) does not decrypt")
        }
        return secret
    }

    // MARK: - Update, delete

    /// Replaces the secret (needs the same authentication as reading it)
    /// and/or the label, comment and generic data (no authentication).
    package func update(service: String, account: String, secret newSecret: SecureBytes? = nil,
                       label: String?? = nil, comment: String?? = nil, generic: Data?? = nil,
                       proof: VaultProof = .none) throws(VaultError) {
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

    /// Deletes the item (no authentication, as SecItemDelete): of several
    /// of that name, the newest. A corrupted item can be deleted too.
    package func delete(service: String, account: String) throws(VaultError) {
        try requireWritable()
        let lookup = lookupHash(service: service, account: account)
        try db.query("DELETE FROM items WHERE id = (SELECT id FROM items WHERE lookup = ? ORDER BY id DESC LIMIT 1)", [.blob(lookup)])
        if db.changes == 0 {
            _ = try load(service: service, account: account)  // corrupted or not found: says which
            throw VaultError.itemNotFound
        }
    }

    // MARK: - List

    /// Every item's attributes and state, without authentication and without
    /// any secret. One bad record is listed as corrupted; the rest are listed.
    package func list(service: String? = nil) throws(VaultError) -> [ListedItem] {
        let states = StateReader(self)
        var out: [ListedItem] = []
        for item in try allRows() {
            let listed = try states.listed(item)
            if let service, listed.attributes?.service != service { continue }
            out.append(listed)
        }
        return out
    }
}

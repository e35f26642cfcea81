import Foundation
import TouchstoneSecure

/// Items by reference and by attributes: the Secret Service's view
/// (docs/vault.md, "Attributes").
///
/// Each item's attribute set (`ItemAttributes.effectiveSearchAttributes`)
/// is in its encrypted metadata record; the `attributes` table holds one
/// keyed BLAKE2b per (name, value) pair under the attribute key, so that a
/// search finds its candidates in SQLite without decrypting every record
/// and nothing on disk names an attribute in plain text. Every candidate's
/// record is then opened and its set compared with the query: a row moved
/// or altered on disk matches nothing it does not hold.
extension Vault {
    static let attributesIndexedKey = "attributes_indexed"

    /// The keyed hash of one attribute pair.
    func pairHash(_ name: String, _ value: String) -> [UInt8] {
        Crypto.keyedHash(attributeKey, name, value)
    }

    /// Writes item `id`'s pair hashes (in the caller's transaction).
    func indexAttributes(_ id: Int64, _ attributes: ItemAttributes) throws(VaultError) {
        try db.query("DELETE FROM attributes WHERE item_id = ?", [.integer(id)])
        for (name, value) in attributes.effectiveSearchAttributes {
            try db.query("INSERT OR IGNORE INTO attributes(item_id, pair) VALUES(?, ?)", [.integer(id), .blob(pairHash(name, value))])
        }
    }

    /// Indexes the items of a vault from before schema 5, once (the
    /// migration could not: it has no keys). A record that does not open
    /// is left out (it is listed as corrupted, and no search finds it).
    func indexAttributesIfNeeded() throws(VaultError) {
        guard !db.isReadOnly, try meta(Self.attributesIndexedKey) == nil else { return }
        try db.transaction { () throws(VaultError) in
            for item in try allRows() {
                guard let attributes = try? openMetadata(item) else { continue }
                try indexAttributes(item.id, attributes)
            }
            try setMeta(Self.attributesIndexedKey, [1])
        }
    }

    /// The rows of the items whose set holds every pair of `query`, from
    /// the index (candidates: their records are checked by the caller), in
    /// one query. Its cost is the rows of the pair that drives it: the one
    /// with the fewest rows (counted up to `probeLimit`), so that a query
    /// with one rare pair (a user, a server) beside common ones (an
    /// application, a schema) stays as fast with 10,000 items as with 10.
    private func candidates(_ query: [String: String]) throws(VaultError) -> [StoredItem] {
        if query.isEmpty { return try allRows() }
        var hashes = Array(Set(query.map { pairHash($0.key, $0.value) }))
        if hashes.count > 1 {
            // One statement counts them all.
            let probes = hashes.map { _ in "(SELECT count(*) FROM (SELECT 1 FROM attributes WHERE pair = ? LIMIT \(Self.probeLimit)))" }
            let counts = try db.firstRow("SELECT " + probes.joined(separator: ", "), hashes.map { .blob($0) }) { row throws(VaultError) in
                hashes.indices.map { row.integer(Int32($0)) }
            } ?? []
            if counts.count != hashes.count || counts.contains(0) { return [] }
            hashes = zip(hashes, counts).sorted { $0.1 < $1.1 }.map(\.0)
        }
        let others = hashes.dropFirst().indices.map { "AND EXISTS (SELECT 1 FROM attributes a\($0) WHERE a\($0).pair = ? AND a\($0).item_id = d.item_id)" }
        return try db.rows("""
            SELECT \(Self.itemColumns) FROM items WHERE id IN
                (SELECT d.item_id FROM attributes d WHERE d.pair = ? \(others.joined(separator: " ")))
            ORDER BY id
            """, hashes.map { .blob($0) }, Self.storedItem)
    }

    /// How far a search counts each pair's rows to choose the one that drives it.
    static let probeLimit = 64

    /// Items whose attribute set holds every pair of `query` (an empty
    /// query: every item), oldest first, with their states. No
    /// authentication; no secret is read.
    package func search(_ query: [String: String]) throws(VaultError) -> [ReferencedItem] {
        let rows = try candidates(query)
        if rows.isEmpty { return [] }
        let states = StateReader(self)
        var found: [ReferencedItem] = []
        for item in rows {
            let listed = try states.listed(item)
            let reference = ItemReference(id: item.id)
            guard let attributes = listed.attributes else {
                // A record that does not open matches only the query for everything.
                if query.isEmpty { found.append(ReferencedItem(reference: reference, item: listed)) }
                continue
            }
            let set = attributes.effectiveSearchAttributes
            guard query.allSatisfy({ set[$0.key] == $0.value }) else { continue }
            found.append(ReferencedItem(reference: reference, item: listed))
        }
        return found
    }

    /// The items an add with `.replaceEqual` replaces: equal attribute set
    /// or, when the set names both, equal service and account.
    func equalItems(_ attributes: ItemAttributes) throws(VaultError) -> [Int64] {
        let set = attributes.effectiveSearchAttributes
        var ids: [Int64] = []
        for item in try candidates(set) {
            guard let old = try? openMetadata(item) else { continue }
            if old.effectiveSearchAttributes == set { ids.append(item.id) }
        }
        if set["service"] == attributes.service, set["account"] == attributes.account {
            let lookup = lookupHash(service: attributes.service, account: attributes.account)
            ids += try db.rows("SELECT id FROM items WHERE lookup = ?", [.blob(lookup)]) { $0.integer(0) }
        }
        return Array(Set(ids)).sorted()
    }

    /// Item `id`'s row and attributes; `itemNotFound` when there is none.
    func load(_ reference: ItemReference) throws(VaultError) -> (StoredItem, ItemAttributes) {
        guard let item = try row(id: reference.id) else { throw VaultError.itemNotFound }
        return (item, try openMetadata(item))
    }

    /// One item's attributes and state (no authentication).
    package func item(_ reference: ItemReference) throws(VaultError) -> ReferencedItem {
        guard let item = try row(id: reference.id) else { throw VaultError.itemNotFound }
        return ReferencedItem(reference: reference, item: try StateReader(self).listed(item))
    }

    /// The item's ways in that are still open (`itemInvalidated` when none is).
    package func openAccess(_ reference: ItemReference) throws(VaultError) -> AccessControl {
        let (item, attributes) = try load(reference)
        return try openAccess(item, attributes)
    }

    /// The item's secret, opened with what `proof` shows, and its attributes.
    package func secret(_ reference: ItemReference, proof: VaultProof) throws(VaultError) -> (SecureBytes, ItemAttributes) {
        let (item, attributes) = try load(reference)
        return (try openedSecret(item, attributes, proof: proof), attributes)
    }

    private func openedSecret(_ item: StoredItem, _ attributes: ItemAttributes, proof: VaultProof) throws(VaultError) -> SecureBytes {
        let name = (service: attributes.service, account: attributes.account)
        let key = try secretKey(item, access: attributes.access, name: name, proof: proof)
        guard let secret = key.open(item.secret, ad: Self.secretAD(lookup: item.lookup, access: attributes.access)) else {
            throw VaultError.corrupted("the secret of \(name.service)/\(name.account) does not decrypt")
        }
        return secret
    }

    /// Changes an item in place (it keeps its reference). A new secret, or
    /// a new service or account (which the secret's record is bound to),
    /// needs what reading it needs (`proof`); the label, the rest of the
    /// attribute set and the content type need nothing. Nil leaves a field
    /// as it is.
    package func update(_ reference: ItemReference, secret newSecret: SecureBytes? = nil, label: String?? = nil,
                        searchAttributes: [String: String]? = nil, contentType: String?? = nil,
                        proof: VaultProof = .none) throws(VaultError) {
        try requireWritable()
        let (item, old) = try load(reference)
        var attributes = old
        if let label { attributes.label = label }
        if let contentType { attributes.contentType = contentType }
        if let searchAttributes {
            attributes.searchAttributes = searchAttributes
            if let service = searchAttributes["service"] { attributes.service = service }
            if let account = searchAttributes["account"] { attributes.account = account }
        }
        attributes.modified = Date()
        try validate(attributes)
        let renamed = attributes.service != old.service || attributes.account != old.account
        if renamed || newSecret != nil {
            // A whole new row under the same id: new lookup, item key and wraps.
            let secret: SecureBytes
            if let newSecret { secret = newSecret } else { secret = try openedSecret(item, old, proof: proof) }
            if newSecret != nil { _ = try openItemKey(item, access: old.access, name: (old.service, old.account), proof: proof) }
            let row = try makeRow(secret, attributes)
            try db.transaction { () throws(VaultError) in
                try db.query("UPDATE items SET lookup = ?, metadata = ?, secret = ?, keys = ?, cipher = ? WHERE id = ? AND lookup = ?",
                             [.blob(row.lookup), .blob(row.metadata), .blob(row.secret), .blob(row.keys),
                              .integer(row.cipher.rawValue), .integer(item.id), .blob(item.lookup)])
                if db.changes == 0 { throw VaultError.itemNotFound }
                try indexAttributes(item.id, attributes)
            }
            return
        }
        let metadata = try sealMetadata(attributes, Self.cipher(of: item))
        try db.transaction { () throws(VaultError) in
            try db.query("UPDATE items SET metadata = ? WHERE id = ? AND lookup = ?",
                         [.blob(metadata), .integer(item.id), .blob(item.lookup)])
            if db.changes == 0 { throw VaultError.itemNotFound }
            try indexAttributes(item.id, attributes)
        }
    }

    /// Deletes item `id` (no authentication).
    package func delete(_ reference: ItemReference) throws(VaultError) {
        try requireWritable()
        try db.query("DELETE FROM items WHERE id = ?", [.integer(reference.id)])
        if db.changes == 0 { throw VaultError.itemNotFound }
    }
}

/// What a listing needs to tell each item's state: the class keys, and
/// the enrolment counter when a current-set key is there (read once).
/// Read when the first item that needs them is listed (items of access
/// `none` need neither).
final class StateReader {
    let vault: Vault
    private var keys: (classKeys: [Int64: ClassKey], generation: UInt64?)?

    init(_ vault: Vault) { self.vault = vault }

    private func classKeys() throws(VaultError) -> (classKeys: [Int64: ClassKey], generation: UInt64?) {
        if let keys { return keys }
        let classKeys = try vault.classKeys()
        let generation = classKeys.values.contains { $0.kind == .biometryCurrentSet } ? try vault.enrollmentGeneration() : nil
        keys = (classKeys, generation)
        return (classKeys, generation)
    }

    /// The item's attributes and state; a record that does not open is
    /// listed as corrupted.
    func listed(_ item: Vault.StoredItem) throws(VaultError) -> ListedItem {
        guard let attributes = try? vault.openMetadata(item) else { return ListedItem(attributes: nil, state: .corrupted) }
        guard let wraps = try? vault.wraps(of: item), Vault.ways(wraps, match: attributes.access) else {
            return ListedItem(attributes: attributes, state: .corrupted)
        }
        // Access `none`: its one way, the device key, is always open.
        if attributes.access.flags.isEmpty { return ListedItem(attributes: attributes, state: .ok) }
        let (classKeys, generation) = try classKeys()
        let open = wraps.contains { Vault.isOpen($0, classKeys, generation) }
        return ListedItem(attributes: attributes, state: open ? .ok : .invalidated)
    }
}

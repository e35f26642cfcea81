/// The `items` table's SQL: finding, reading, adding, rewriting and
/// counting rows.
extension Vault {
    func exists(lookup: [UInt8]) throws(VaultError) -> Bool {
        try !db.rows("SELECT 1 FROM items WHERE lookup = ?", [.blob(lookup)]) { _ in true }.isEmpty
    }

    /// The newest row of a name (a Secret Service client may store several).
    static let rowByLookup = "SELECT id, metadata, secret, keys, cipher FROM items WHERE lookup = ? ORDER BY id DESC LIMIT 1"

    /// The item stored under `lookup` (one row: its keys record is in it).
    func row(lookup: [UInt8]) throws(VaultError) -> StoredItem? {
        // The row's lookup equals the one it was found by: not read again.
        try db.firstRow(Self.rowByLookup, blob: lookup) {
            StoredItem(id: $0.integer(0), lookup: lookup, metadata: $0.blob(1), secret: $0.blob(2), keys: $0.blob(3),
                       cipher: $0.integer(4))
        }
    }

    func allRows() throws(VaultError) -> [StoredItem] {
        try db.rows("SELECT \(Self.itemColumns) FROM items ORDER BY id", [], Self.storedItem)
    }

    /// Adds a new item's row; returns its id. Called inside the add's
    /// transaction, which checks for duplicates first.
    func insert(_ row: NewRow) throws(VaultError) -> Int64 {
        try db.query("INSERT INTO items(lookup, metadata, secret, keys, cipher) VALUES(?, ?, ?, ?, ?)",
                     [.blob(row.lookup), .blob(row.metadata), .blob(row.secret), .blob(row.keys), .integer(row.cipher.rawValue)])
        return db.lastInsertRowID
    }

    /// The row of item `id`.
    func row(id: Int64) throws(VaultError) -> StoredItem? {
        try db.firstRow("SELECT \(Self.itemColumns) FROM items WHERE id = ?", [.integer(id)], Self.storedItem)
    }

    /// Writes an item's new records over the row `item` was read from. The
    /// row may have been deleted since by another process: then nothing is
    /// written, and the item is reported not found (not a silent success).
    func rewrite(_ item: StoredItem, metadata: [UInt8], secret: [UInt8]) throws(VaultError) {
        let updated = try db.transaction { () throws(VaultError) in
            try db.query("UPDATE items SET metadata = ?, secret = ? WHERE id = ? AND lookup = ?",
                         [.blob(metadata), .blob(secret), .integer(item.id), .blob(item.lookup)])
            return db.changes
        }
        if updated == 0 { throw VaultError.itemNotFound }
    }

    /// How many items the vault holds.
    package func itemCount() throws(VaultError) -> Int {
        try db.rows("SELECT COUNT(*) FROM items", []) { Int($0.integer(0)) }.first ?? 0
    }
}

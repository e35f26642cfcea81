import TouchstoneVault

/// The baseline: the same rows in a plain SQLite table with the vault's
/// columns, on a connection of the vault's own kind (SQLiteDatabase): the
/// same open flags, journal mode (WAL) and synchronous setting (NORMAL).
/// Each insert is its own transaction (BEGIN IMMEDIATE, INSERT, COMMIT), as
/// each vault add is, its blobs bound as copies; selects look a row up by
/// its lookup blob, bound in place. Statements are prepared once and reused.
final class PlainSQLiteStore {
    private let db: SQLiteDatabase
    private static let insert = "INSERT INTO items(lookup, metadata, secret) VALUES(?, ?, ?)"
    private static let select = "SELECT metadata, secret FROM items WHERE lookup = ?"
    private static let selectAll = "SELECT lookup, metadata, secret FROM items ORDER BY id"

    /// Creates the table in a new database at `path`.
    init(path: String) throws {
        db = try SQLiteDatabase(path: path, mode: .create)
        try db.execute("""
            CREATE TABLE items (
                id       INTEGER PRIMARY KEY,
                lookup   BLOB NOT NULL UNIQUE,
                metadata BLOB NOT NULL,
                secret   BLOB NOT NULL
            )
            """)
    }

    /// The journal mode and synchronous level actually in force (checked,
    /// not assumed).
    func settings() throws -> (journal: String, synchronous: String) {
        (try db.firstRow("PRAGMA journal_mode") { $0.text(0) } ?? "?", try db.firstRow("PRAGMA synchronous") { $0.text(0) } ?? "?")
    }

    /// Inserts one row in its own transaction.
    func add(_ row: StoredRow) throws {
        try db.transaction {
            try db.query(Self.insert, [.blob(row.lookup), .blob(row.metadata), .blob(row.secret)])
        }
    }

    /// The metadata and secret columns of the row with `lookup` (nil if
    /// there is none): the two blobs a vault get reads and opens.
    /// The lookup is bound in place, as the vault binds its lookups.
    func row(lookup: [UInt8]) throws -> (metadata: [UInt8], secret: [UInt8])? {
        try db.firstRow(Self.select, blob: lookup) { (metadata: $0.blob(0), secret: $0.blob(1)) }
    }

    /// Every row, in insertion order.
    func all() throws -> [StoredRow] {
        try db.rows(Self.selectAll) { StoredRow(lookup: $0.blob(0), metadata: $0.blob(1), secret: $0.blob(2)) }
    }
}

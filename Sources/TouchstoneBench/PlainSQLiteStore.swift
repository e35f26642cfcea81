import TouchstoneVault

/// The baseline: the same rows in a plain SQLite table with the vault's
/// columns, on a connection opened as the vault's is (SQLiteDatabase: the
/// same open flags, journal mode WAL, synchronous NORMAL), through its own
/// prepared statements. Each insert is its own transaction (BEGIN
/// IMMEDIATE, INSERT, COMMIT), as each vault add is; selects look a row up
/// by its lookup blob. Statements are prepared once and reused.
final class PlainSQLiteStore {
    private let db: SQLiteDatabase
    private let begin: PreparedStatement
    private let insert: PreparedStatement
    private let commit: PreparedStatement
    private let select: PreparedStatement
    private let selectAll: PreparedStatement

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
        begin = try PreparedStatement("BEGIN IMMEDIATE", on: db)
        insert = try PreparedStatement("INSERT INTO items(lookup, metadata, secret) VALUES(?, ?, ?)", on: db)
        commit = try PreparedStatement("COMMIT", on: db)
        select = try PreparedStatement("SELECT metadata, secret FROM items WHERE lookup = ?", on: db)
        selectAll = try PreparedStatement("SELECT lookup, metadata, secret FROM items ORDER BY id", on: db)
    }

    /// Finalizes the statements before the connection closes.
    deinit {
        for statement in [begin, insert, commit, select, selectAll] { statement.finalize() }
    }

    /// The journal mode and synchronous level actually in force (checked,
    /// not assumed).
    func settings() throws -> (journal: String, synchronous: String) {
        (try db.firstRow("PRAGMA journal_mode") { $0.text(0) } ?? "?", try db.firstRow("PRAGMA synchronous") { $0.text(0) } ?? "?")
    }

    /// Inserts one row in its own transaction.
    func add(_ row: StoredRow) throws {
        begin.reset()
        _ = try begin.step()
        do {
            insert.reset()
            try insert.bind(1, row.lookup)
            try insert.bind(2, row.metadata)
            try insert.bind(3, row.secret)
            _ = try insert.step()
            commit.reset()
            _ = try commit.step()
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// The metadata and secret columns of the row with `lookup` (nil if
    /// there is none): the two blobs a vault get reads and opens.
    /// The lookup is bound in place, as the vault binds its lookups.
    func row(lookup: [UInt8]) throws -> (metadata: [UInt8], secret: [UInt8])? {
        try select.withBlob(1, lookup) {
            guard try select.step() else { return nil }
            return (metadata: select.blob(0), secret: select.blob(1))
        }
    }

    /// Every row, in insertion order.
    func all() throws -> [StoredRow] {
        selectAll.reset()
        var rows: [StoredRow] = []
        while try selectAll.step() {
            rows.append(StoredRow(lookup: selectAll.blob(0), metadata: selectAll.blob(1), secret: selectAll.blob(2)))
        }
        selectAll.reset()
        return rows
    }
}

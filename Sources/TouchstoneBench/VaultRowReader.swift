import TouchstoneVault

/// Reads back the rows the vault has stored, through its own read-only
/// connection, outside any timing. It is opened once the vault has
/// written (its passcode set), so the write-ahead log is there and the
/// connection reads through it (SQLiteDatabase's `readOnly` mode opens a
/// file without a log as immutable), seeing each new block of rows.
final class VaultRowReader {
    private let db: SQLiteDatabase
    private var lastID: Int64 = 0

    init(databasePath: String) throws {
        db = try SQLiteDatabase(path: databasePath, mode: .readOnly)
    }

    /// The rows added since the last call, in the order they were added.
    /// The statement is reset after the last row, which ends the read
    /// transaction: the vault's checkpoints are not held back.
    func newRows() throws -> [StoredRow] {
        try db.rows("SELECT id, lookup, metadata, secret FROM items WHERE id > ? ORDER BY id", [.integer(lastID)]) { row in
            lastID = row.integer(0)
            return StoredRow(lookup: row.blob(1), metadata: row.blob(2), secret: row.blob(3))
        }
    }

    /// Bytes of the vault's `keys` column per item (the wrapped item keys),
    /// which the plain table does not have, for the report.
    func wrapBytesPerItem() throws -> Double {
        let text = try db.firstRow("SELECT avg(length(keys)) FROM items") { $0.text(0) }
        return Double(text ?? "") ?? 0
    }
}

/// Reads back the rows the vault has stored, through its own read-only
/// connection, outside any timing.
final class VaultRowReader {
    private let connection: SQLiteConnection
    private let statement: PreparedStatement
    private var lastID: Int64 = 0

    init(databasePath: String) throws {
        connection = try SQLiteConnection(path: databasePath, readOnly: true)
        statement = try connection.prepare("SELECT id, lookup, metadata, secret FROM items WHERE id > ? ORDER BY id")
    }

    deinit { statement.finalize() }

    /// The rows added since the last call, in the order they were added.
    func newRows() throws -> [StoredRow] {
        statement.reset()
        try statement.bind(1, lastID)
        var rows: [StoredRow] = []
        while try statement.step() {
            lastID = statement.integer(0)
            rows.append(StoredRow(lookup: statement.blob(1), metadata: statement.blob(2), secret: statement.blob(3)))
        }
        statement.reset()  // ends the read transaction: the vault's checkpoints are not held back
        return rows
    }

    /// Bytes of the vault's `keys` column per item (the wrapped item keys),
    /// which the plain table does not have, for the report.
    func wrapBytesPerItem() throws -> Double {
        let text = try connection.text("SELECT avg(length(keys)) FROM items")
        return Double(text ?? "") ?? 0
    }
}

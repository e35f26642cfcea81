import CSQLite
import TouchstoneVault

/// A statement prepared on a connection's SQLite handle, reset and re-bound
/// for each use: the baseline's direct calls, with none of the connection's
/// own layers (its lock, statement cache and value enum) in the way. The
/// benchmark uses a connection from one thread, and through one path at a
/// time; the statement is finalized before the connection closes.
struct PreparedStatement {
    let statement: OpaquePointer
    unowned let connection: SQLiteDatabase

    /// Prepares `sql` on `connection`.
    init(_ sql: String, on connection: SQLiteDatabase) throws {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw Self.failure(sql, connection)
        }
        self.statement = statement
        self.connection = connection
    }

    /// Clears the previous run and its bindings.
    func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    func bind(_ index: Int32, _ bytes: [UInt8]) throws {
        let rc = bytes.withUnsafeBytes {
            sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), ts_sqlite_transient)
        }
        guard rc == SQLITE_OK else { throw Self.failure("bind", connection) }
    }

    /// Runs `body` with `bytes` bound in place (SQLITE_STATIC), then resets
    /// the statement, dropping the binding before the bytes can go.
    func withBlob<R>(_ index: Int32, _ bytes: [UInt8], _ body: () throws -> R) throws -> R {
        try bytes.withUnsafeBytes { raw in
            defer { reset() }
            guard sqlite3_bind_blob(statement, index, raw.baseAddress, Int32(raw.count), nil) == SQLITE_OK else {
                throw Self.failure("bind", connection)
            }
            return try body()
        }
    }

    /// One step: true for a row, false when done.
    func step() throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw Self.failure("step", connection)
        }
    }

    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let p = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: count))
    }

    func finalize() { sqlite3_finalize(statement) }

    private static func failure(_ what: String, _ connection: SQLiteDatabase) -> BenchError {
        BenchError.setup("SQLite: \(what): \(String(cString: sqlite3_errmsg(connection.handle)))")
    }
}

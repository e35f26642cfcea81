import CSQLite
import Foundation

/// A bare SQLite connection for the baseline: prepared statements kept and
/// reused, no locking layer, no Swift value enum in the way. It is what a
/// program that uses SQLite directly would write.
final class SQLiteConnection {
    private(set) var handle: OpaquePointer?
    let path: String

    /// Opens (creating if needed) the database at `path` with the same open
    /// flags as the vault's connection.
    init(path: String, readOnly: Bool = false) throws {
        self.path = path
        let flags = readOnly ? SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
                             : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "error \(rc)"
            sqlite3_close(handle)
            handle = nil
            throw BenchError.setup("cannot open \(path): \(message)")
        }
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs `sql` (no results).
    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(sql) }
    }

    /// Runs `sql` and returns the first column of its first row as text.
    func text(_ sql: String) throws -> String? {
        let statement = try prepare(sql)
        defer { statement.finalize() }
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// A prepared statement on this connection.
    func prepare(_ sql: String) throws -> PreparedStatement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw failure(sql)
        }
        return PreparedStatement(statement: statement, connection: self)
    }

    func failure(_ what: String) -> BenchError {
        BenchError.setup("SQLite: \(what): \(String(cString: sqlite3_errmsg(handle)))")
    }
}

/// A statement that is reset and re-bound for each use.
struct PreparedStatement {
    let statement: OpaquePointer
    unowned let connection: SQLiteConnection

    /// Clears the previous run and its bindings.
    func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    func bind(_ index: Int32, _ bytes: [UInt8]) throws {
        let rc = bytes.withUnsafeBytes {
            sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), ts_sqlite_transient)
        }
        guard rc == SQLITE_OK else { throw connection.failure("bind") }
    }

    /// Runs `body` with `bytes` bound in place (SQLITE_STATIC), then resets
    /// the statement, dropping the binding before the bytes can go.
    func withBlob<R>(_ index: Int32, _ bytes: [UInt8], _ body: () throws -> R) throws -> R {
        try bytes.withUnsafeBytes { raw in
            defer { reset() }
            guard sqlite3_bind_blob(statement, index, raw.baseAddress, Int32(raw.count), nil) == SQLITE_OK else {
                throw connection.failure("bind")
            }
            return try body()
        }
    }

    func bind(_ index: Int32, _ value: Int64) throws {
        guard sqlite3_bind_int64(statement, index, value) == SQLITE_OK else { throw connection.failure("bind") }
    }

    /// One step: true for a row, false when done.
    func step() throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.failure("step")
        }
    }

    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let p = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: count))
    }

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: p)
    }

    func finalize() { sqlite3_finalize(statement) }
}

import CSQLite
import Foundation

/// A SQLite connection: WAL journal, foreign keys on, a busy timeout so two
/// processes writing at once wait for each other instead of failing.
/// Serialised by a lock. Prepared statements are kept per SQL text and
/// reused (preparing one costs about as much as running it).
final class SQLiteDatabase: @unchecked Sendable {
    // @unchecked Sendable: `handle` and `statements` are used only under `lock`.
    private var handle: OpaquePointer?
    private let lock = NSRecursiveLock()
    /// Idle prepared statements by SQL text, each reset with no bindings.
    /// One in use is taken out, so a nested query with the same text
    /// prepares its own.
    private var statements: [String: OpaquePointer] = [:]
    private static let maximumCachedStatements = 64
    let path: String

    /// Opens (creating if needed, mode 0600) the database at `path`.
    init(path: String) throws {
        self.path = path
        let existed = FileManager.default.fileExists(atPath: path)
        let previous = umask(0o077)
        defer { umask(previous) }
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nil)
        guard rc == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "error \(rc)"
            sqlite3_close(handle)
            handle = nil
            throw VaultError.storage("cannot open \(path): \(message)")
        }
        if !existed { chmod(path, 0o600) }
        sqlite3_busy_timeout(handle, 10_000)
        do {
            // A file that is not a database fails here, at the first read.
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA foreign_keys=ON")
            try execute("PRAGMA synchronous=NORMAL")
        } catch {
            sqlite3_close(handle)
            handle = nil
            throw error
        }
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs `sql` (one or more statements, no results).
    func execute(_ sql: String) throws {
        try locked {
            var error: UnsafeMutablePointer<CChar>?
            let rc = sqlite3_exec(handle, sql, nil, nil, &error)
            if rc != SQLITE_OK {
                let message = error.map { String(cString: $0) } ?? "error \(rc)"
                sqlite3_free(error)
                throw Self.error(rc, message)
            }
        }
    }

    /// Runs a statement with `bindings`, calling `row` for each result row.
    func query(_ sql: String, _ bindings: [SQLValue] = [], row: (SQLRow) throws -> Void = { _ in }) throws {
        try locked {
            let statement = try statements.removeValue(forKey: sql) ?? prepare(sql)
            defer { release(statement, sql) }
            for (i, value) in bindings.enumerated() {
                let index = Int32(i + 1)
                let rc: Int32
                switch value {
                case .null: rc = sqlite3_bind_null(statement, index)
                case .integer(let v): rc = sqlite3_bind_int64(statement, index, v)
                case .real(let v): rc = sqlite3_bind_double(statement, index, v)
                case .text(let v): rc = sqlite3_bind_text(statement, index, v, -1, ts_sqlite_transient)
                case .blob(let v):
                    rc = v.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), ts_sqlite_transient) }
                }
                guard rc == SQLITE_OK else { throw Self.error(rc, String(cString: sqlite3_errmsg(handle))) }
            }
            while true {
                let rc = sqlite3_step(statement)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw Self.error(rc, String(cString: sqlite3_errmsg(handle))) }
                try row(SQLRow(statement: statement))
            }
        }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw Self.error(prepared, String(cString: sqlite3_errmsg(handle)))
        }
        return statement
    }

    /// Resets a statement after use (ending its read, dropping its bound
    /// values) and keeps it for the next call.
    private func release(_ statement: OpaquePointer, _ sql: String) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        if statements[sql] == nil, statements.count < Self.maximumCachedStatements {
            statements[sql] = statement
        } else {
            sqlite3_finalize(statement)
        }
    }

    /// The rows of a query, each mapped by `transform`.
    func rows<T>(_ sql: String, _ bindings: [SQLValue] = [], _ transform: (SQLRow) throws -> T) throws -> [T] {
        var out: [T] = []
        try query(sql, bindings) { out.append(try transform($0)) }
        return out
    }

    var lastInsertRowID: Int64 { locked { sqlite3_last_insert_rowid(handle) } }
    var changes: Int { locked { Int(sqlite3_changes(handle)) } }

    /// Runs `body` in an IMMEDIATE transaction (the write lock is taken at
    /// once, so concurrent writers queue instead of deadlocking); rolls back
    /// on any error.
    func transaction<R>(_ body: () throws -> R) throws -> R {
        try locked {
            // Through the statement cache: sqlite3_exec would parse these
            // on every transaction.
            try query("BEGIN IMMEDIATE")
            do {
                let result = try body()
                try query("COMMIT")
                return result
            } catch {
                try? query("ROLLBACK")
                throw error
            }
        }
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body()
    }

    static func error(_ rc: Int32, _ message: String) -> VaultError {
        switch rc & 0xff {
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupted("the database is damaged or not a Touchstone vault (\(message))")
        case SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_IOERR, SQLITE_FULL:
            return .storage(message)
        default: return .storage(message)
        }
    }
}

enum SQLValue {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// One result row, read by column index.
struct SQLRow {
    let statement: OpaquePointer

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    func real(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }
    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: p)
    }
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let p = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: count))
    }
}

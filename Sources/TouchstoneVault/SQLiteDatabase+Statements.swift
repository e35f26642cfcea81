internal import CSQLite

/// The statement cache: prepared statements kept per SQL text and reused.
extension SQLiteDatabase {
    private static let maximumCachedStatements = 64

    /// Runs `body` with the prepared statement for `sql` (from the cache
    /// when idle there), `bindings` bound; resets it afterwards.
    func withStatement<R>(_ sql: String, _ bindings: [SQLValue], _ body: (OpaquePointer) throws(VaultError) -> R) throws(VaultError) -> R {
        try locked { () throws(VaultError) in
            let cached: CachedStatement?
            if let lastUsed, lastUsed.sql == sql {
                cached = lastUsed.statement
            } else {
                cached = statements[sql]
                if let cached { lastUsed = (sql, cached) }
            }
            let statement: OpaquePointer
            if let cached, !cached.inUse {
                cached.inUse = true
                statement = cached.handle
            } else {
                statement = try prepare(sql)
            }
            defer {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
                if let cached, cached.handle == statement {
                    cached.inUse = false
                } else if cached == nil, statements.count < Self.maximumCachedStatements {
                    statements[sql] = CachedStatement(statement)
                } else {
                    sqlite3_finalize(statement)
                }
            }
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
                guard rc == SQLITE_OK else { throw failure(rc, String(cString: sqlite3_errmsg(handle))) }
            }
            return try body(statement)
        }
    }

    private func prepare(_ sql: String) throws(VaultError) -> OpaquePointer {
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw failure(prepared, String(cString: sqlite3_errmsg(handle)))
        }
        return statement
    }
}

/// A prepared statement kept for reuse, and whether a query is using it.
final class CachedStatement {
    let handle: OpaquePointer
    var inUse = false
    init(_ handle: OpaquePointer) { self.handle = handle }
}

internal import CSQLite

package enum SQLValue {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// One result row, read by column index.
package struct SQLRow {
    let statement: OpaquePointer

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
    package func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    package func real(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }
    package func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: p)
    }
    package func blob(_ column: Int32) -> [UInt8] {
        withBlob(column) { Array($0) }
    }
    /// Runs `body` on a blob column's bytes where SQLite holds them (valid
    /// while the row is current), without copying them.
    func withBlob<R, E: Error>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        let p = sqlite3_column_blob(statement, column)  // before _bytes, as SQLite documents
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let p else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeBufferPointer(start: p.assumingMemoryBound(to: UInt8.self), count: count))
    }
}

internal import CSQLite
import Foundation
import Glibc
import TouchstonePOSIX

/// A SQLite connection: WAL journal, foreign keys on, a busy timeout so two
/// processes writing at once wait for each other instead of failing.
/// Serialised by a lock. Prepared statements are kept per SQL text and
/// reused (preparing one costs about as much as running it).
///
/// Damage is reported, never repaired: an empty file, a file shorter than
/// its header says, a page that does not parse are `VaultError.corrupted`,
/// and a connection that met damage closes without checkpointing, so the
/// file and its write-ahead log stay byte for byte as they were.
package final class SQLiteDatabase: @unchecked Sendable {
    // @unchecked Sendable: `handle` and `statements` are used only under `lock`
    // (the benchmark's baseline aside: it prepares its own statements on
    // `handle`, from one thread).
    package private(set) var handle: OpaquePointer?
    private let lock = NSRecursiveLock()
    /// Prepared statements by SQL text, each reset with no bindings when
    /// idle. One in use is marked, so a nested query with the same text
    /// prepares its own (finalized after use).
    var statements: [String: CachedStatement] = [:]
    /// The statement used last: a query repeated with the same SQL string
    /// (a constant, the usual case) finds it without hashing the text.
    var lastUsed: (sql: String, statement: CachedStatement)?
    let path: String
    /// Opened read-only: the file is on a read-only file system.
    let isReadOnly: Bool

    /// How a connection opens its file.
    package enum OpenMode {
        /// Read and write, creating the file (mode 0600) if it is missing.
        case create
        /// Read and write; the file must exist and hold a database.
        case existing
        /// Read only, for a file on a read-only file system, where SQLite
        /// cannot create the `-shm` index a WAL database needs: opened
        /// `immutable` when no write-ahead log is there (nothing can change
        /// the file), else read-only through the log and its index.
        case readOnly
    }

    /// Opens the database at `path`.
    package init(path: String, mode: OpenMode = .create) throws(VaultError) {
        self.path = path
        isReadOnly = mode == .readOnly
        if mode != .create { try Self.checkFile(path) }
        let existed = FileManager.default.fileExists(atPath: path)
        let previous = umask(0o077)
        defer { umask(previous) }
        let (name, flags): (String, Int32)
        switch mode {
        case .create: (name, flags) = (path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        case .existing: (name, flags) = (path, SQLITE_OPEN_READWRITE)
        case .readOnly:
            let log = Self.fileSize(path + "-wal") ?? 0
            name = Self.uri(path) + (log > 0 ? "?mode=ro" : "?immutable=1")
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
        }
        // NOMUTEX: `lock` already serialises every use of the connection and
        // its statements, so SQLite's own per-call mutex would only repeat it.
        let rc = sqlite3_open_v2(name, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "error \(rc)"
            sqlite3_close(handle)
            handle = nil
            throw VaultError.storage(StorageFailure(.database, "cannot open \(path): \(message)"))
        }
        if !existed { _ = try? valueOrErrno(retryOnInterrupt: true) { chmod(path, 0o600) } }  // best effort: the folder is 0700
        sqlite3_busy_timeout(handle, 10_000)
        do throws(VaultError) {
            // A file that is not a database fails here, at the first read.
            if mode == .readOnly {
                try execute("PRAGMA foreign_keys=ON")
                try execute("SELECT count(*) FROM sqlite_master")
            } else {
                try execute("PRAGMA journal_mode=WAL")
                try execute("PRAGMA foreign_keys=ON")
                try execute("PRAGMA synchronous=NORMAL")
                // Deleted and overwritten content is zeroed, not left in
                // free pages: an item deleted, a key re-sealed after a
                // passcode change (see `checkpointTruncating`).
                try execute("PRAGMA secure_delete=ON")
            }
        } catch {
            close(checkpoint: false)
            throw error
        }
    }

    /// Copies the write-ahead log into the database and truncates it to
    /// nothing, so content replaced since (with `secure_delete`, zeroed in
    /// the database's pages) is gone from the log too. Another process
    /// reading at that moment keeps the log in use: tried a few times, then
    /// false (the next checkpoint overwrites it; the log is never read
    /// past its last commit).
    @discardableResult
    func checkpointTruncating(attempts: Int = 20) -> Bool {
        for attempt in 0..<attempts {
            var busy: Int64 = 1
            var logFrames: Int64 = -1
            do throws(VaultError) {
                try query("PRAGMA wal_checkpoint(TRUNCATE)") { row throws(VaultError) in
                    busy = row.integer(0)
                    logFrames = row.integer(1)
                }
            } catch {
                busy = 1
            }
            if busy == 0 && logFrames <= 0 { return true }
            if attempt + 1 < attempts { usleep(50_000) }
        }
        return false
    }

    /// Closes the connection (a no-op when closed). With `checkpoint`
    /// false, the write-ahead log is left as it is.
    func close(checkpoint: Bool = true) {
        locked {
            guard let handle else { return }
            if !checkpoint { ts_sqlite_no_checkpoint_on_close(handle) }
            for statement in statements.values { sqlite3_finalize(statement.handle) }
            statements = [:]
            lastUsed = nil
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    deinit {
        close()
    }

    /// Runs `sql` (one or more statements, no results).
    package func execute(_ sql: String) throws(VaultError) {
        try locked { () throws(VaultError) in
            var error: UnsafeMutablePointer<CChar>?
            let rc = sqlite3_exec(handle, sql, nil, nil, &error)
            if rc != SQLITE_OK {
                let message = error.map { String(cString: $0) } ?? "error \(rc)"
                sqlite3_free(error)
                throw failure(rc, message)
            }
        }
    }

    /// Runs a statement with `bindings`, calling `row` for each result row.
    package func query(_ sql: String, _ bindings: [SQLValue] = [], row: (SQLRow) throws(VaultError) -> Void = { _ in }) throws(VaultError) {
        try withStatement(sql, bindings) { statement throws(VaultError) in
            while try step(statement) { try row(SQLRow(statement: statement)) }
        }
    }

    /// The rows of a query, each mapped by `transform`.
    package func rows<T>(_ sql: String, _ bindings: [SQLValue] = [], _ transform: (SQLRow) throws(VaultError) -> T) throws(VaultError) -> [T] {
        var out: [T] = []
        try query(sql, bindings) { row throws(VaultError) in out.append(try transform(row)) }
        return out
    }

    /// The first row of a query, mapped by `transform`, or nil when there
    /// is none; the statement stops there (for lookups by a unique key).
    package func firstRow<T>(_ sql: String, _ bindings: [SQLValue] = [], _ transform: (SQLRow) throws(VaultError) -> T) throws(VaultError) -> T? {
        try withStatement(sql, bindings) { statement throws(VaultError) in
            try step(statement) ? try transform(SQLRow(statement: statement)) : nil
        }
    }

    /// `firstRow` of a query with one parameter, a blob (a lookup by a
    /// unique key). The blob is bound in place, not copied (SQLITE_STATIC):
    /// the statement is reset, dropping the binding, before `key`'s
    /// storage is let go.
    func firstRow<T>(_ sql: String, blob key: [UInt8], _ transform: (SQLRow) throws(VaultError) -> T) throws(VaultError) -> T? {
        try key.withUnsafeBytes { raw in Result { () throws(VaultError) in
            try withStatement(sql, []) { statement throws(VaultError) in
                let rc = sqlite3_bind_blob(statement, 1, raw.baseAddress, Int32(raw.count), nil)  // nil: SQLITE_STATIC
                guard rc == SQLITE_OK else { throw failure(rc, String(cString: sqlite3_errmsg(handle))) }
                return try step(statement) ? try transform(SQLRow(statement: statement)) : nil
            }
        } }.get()
    }

    /// One more row of `statement`: true when there is one, false when done.
    private func step(_ statement: OpaquePointer) throws(VaultError) -> Bool {
        let rc = sqlite3_step(statement)
        if rc == SQLITE_DONE { return false }
        guard rc == SQLITE_ROW else { throw failure(rc, String(cString: sqlite3_errmsg(handle))) }
        return true
    }

    var lastInsertRowID: Int64 { locked { sqlite3_last_insert_rowid(handle) } }
    var changes: Int { locked { Int(sqlite3_changes(handle)) } }

    /// Runs `body` in an IMMEDIATE transaction (the write lock is taken at
    /// once, so concurrent writers queue instead of deadlocking); rolls back
    /// on any error.
    package func transaction<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        try inTransaction(body, failing: { $0 })
    }

    /// `transaction` for a body that throws errors of its own (the daemon's
    /// gate keeps its tables in a database of this kind).
    package func transaction<R>(_ body: () throws -> R) throws -> R {
        try inTransaction(body, failing: { $0 as any Error })
    }

    /// The transaction of both: `failing` makes the database's own
    /// failures (BEGIN, COMMIT) errors of the body's type.
    private func inTransaction<R, E: Error>(_ body: () throws(E) -> R, failing: (VaultError) -> E) throws(E) -> R {
        try locked { () throws(E) in
            // Through the statement cache: sqlite3_exec would parse these
            // on every transaction.
            do throws(VaultError) { try query("BEGIN IMMEDIATE") } catch { throw failing(error) }
            do throws(E) {
                let result = try body()
                do throws(VaultError) { try query("COMMIT") } catch { throw failing(error) }
                return result
            } catch {
                try? query("ROLLBACK")
                throw error
            }
        }
    }

    func locked<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock.lock(); defer { lock.unlock() }
        return try body()
    }
}

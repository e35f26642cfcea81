import CSQLite
import Foundation
import Glibc

/// A SQLite connection: WAL journal, foreign keys on, a busy timeout so two
/// processes writing at once wait for each other instead of failing.
/// Serialised by a lock. Prepared statements are kept per SQL text and
/// reused (preparing one costs about as much as running it).
///
/// Damage is reported, never repaired: an empty file, a file shorter than
/// its header says, a page that does not parse are `VaultError.corrupted`,
/// and a connection that met damage closes without checkpointing, so the
/// file and its write-ahead log stay byte for byte as they were.
final class SQLiteDatabase: @unchecked Sendable {
    // @unchecked Sendable: `handle` and `statements` are used only under `lock`.
    private var handle: OpaquePointer?
    private let lock = NSRecursiveLock()
    /// Prepared statements by SQL text, each reset with no bindings when
    /// idle. One in use is marked, so a nested query with the same text
    /// prepares its own (finalized after use).
    private var statements: [String: CachedStatement] = [:]
    /// The statement used last: a query repeated with the same SQL string
    /// (a constant, the usual case) finds it without hashing the text.
    private var lastUsed: (sql: String, statement: CachedStatement)?
    private static let maximumCachedStatements = 64
    let path: String
    /// Opened read-only: the file is on a read-only file system.
    let isReadOnly: Bool

    /// How a connection opens its file.
    enum OpenMode {
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
    init(path: String, mode: OpenMode = .create) throws {
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
            throw VaultError.storage("cannot open \(path): \(message)")
        }
        if !existed { chmod(path, 0o600) }
        sqlite3_busy_timeout(handle, 10_000)
        do {
            // A file that is not a database fails here, at the first read.
            if mode == .readOnly {
                try execute("PRAGMA foreign_keys=ON")
                try execute("SELECT count(*) FROM sqlite_master")
            } else {
                try execute("PRAGMA journal_mode=WAL")
                try execute("PRAGMA foreign_keys=ON")
                try execute("PRAGMA synchronous=NORMAL")
            }
        } catch {
            close(checkpoint: false)
            throw error
        }
    }

    /// Checks a file that must already hold a database, before SQLite opens
    /// it: refuses a missing or empty one, and one shorter than its header
    /// says unless its write-ahead log holds every missing page (a
    /// checkpoint cut short leaves that; SQLite reads them from the log).
    /// SQLite alone would take an empty file for a new database, and would
    /// read pages missing at the end as zeros where the log holds the
    /// header, so neither reaches it.
    private static func checkFile(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw VaultError.storage("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_size > 0 else {
            // A vault is created whole (Vault.createDatabase): an empty one was cut.
            throw VaultError.corrupted("\(path) is empty (0 bytes): it was truncated, or its creation never finished; it was left as it is")
        }
        // The header's page count grows with every checkpoint that grows
        // the file (page 1 holds it), so a file at least that long is whole;
        // pages past it that a later commit added are in the log.
        let size = Int(info.st_size)
        guard let (pageSize, headerPages) = header(path), size < pageSize * headerPages else { return }
        let log = committedLog(path + "-wal", pageSize: pageSize)
        let pages = max(headerPages, log.pages)
        let missing = (size / pageSize + 1)...pages
        guard missing.allSatisfy(log.holds.contains) else {
            throw VaultError.corrupted("\(path) is truncated: \(size) bytes where the database has \(pageSize * pages); it was left as it is")
        }
    }

    /// The page size and page count the file's header records (the count
    /// 0 unless valid: SQLite's own rule, the change counter at offset 24
    /// equals the version-valid-for number at 92).
    static func header(_ path: String) -> (pageSize: Int, pages: Int)? {
        guard let header = read(path, count: 100), header.count == 100,
              Array(header[0..<16]) == Array("SQLite format 3\0".utf8) else { return nil }
        let rawPageSize = Int(header[16]) << 8 | Int(header[17])
        let pageSize = rawPageSize == 1 ? 65536 : rawPageSize
        guard pageSize >= 512 else { return nil }
        return (pageSize, u32(header, 24) == u32(header, 92) ? u32(header, 28) : 0)
    }

    /// The pages that committed frames of the write-ahead log at `path`
    /// hold, and the database size in pages its last commit records.
    /// Format (sqlite.org/fileformat2.html, "WAL file format"): a 32-byte
    /// header (page size at 8, salts at 16), then frames of a 24-byte
    /// header (page number at 0, the database size at 4 on a commit frame,
    /// the salts at 8) and a page. Frames whose salts differ are left over
    /// from before the log restarted; frames after the last commit frame
    /// are not committed.
    static func committedLog(_ path: String, pageSize: Int) -> (holds: Set<Int>, pages: Int) {
        guard let log = read(path, count: nil), log.count >= 32, u32(log, 8) == pageSize else { return ([], 0) }
        let salts = Array(log[16..<24])
        var committed = Set<Int>(), pending = Set<Int>(), pages = 0
        var offset = 32
        while offset + 24 + pageSize <= log.count, Array(log[offset + 8..<offset + 16]) == salts {
            pending.insert(u32(log, offset))
            if u32(log, offset + 4) != 0 {
                committed.formUnion(pending)
                pending = []
                pages = u32(log, offset + 4)
            }
            offset += 24 + pageSize
        }
        return (committed, pages)
    }

    private static func u32(_ bytes: [UInt8], _ offset: Int) -> Int {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
    }

    /// The first `count` bytes of a file (all when nil), nil if unreadable.
    private static func read(_ path: String, count: Int?) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while count.map({ out.count < $0 }) ?? true {
            let want = min(buffer.count, count.map { $0 - out.count } ?? buffer.count)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, want) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return out
    }

    static func fileSize(_ path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : nil
    }

    /// `path` as a `file:` URI (RFC 3986: unreserved characters and `/`
    /// kept, everything else percent-encoded).
    static func uri(_ path: String) -> String {
        let kept = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/".utf8)
        var out = "file:"
        for byte in path.utf8 {
            if kept.contains(byte) { out.append(Character(Unicode.Scalar(byte))) }
            else { out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true) }
        }
        return out
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
    func execute(_ sql: String) throws {
        try locked {
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
    func query(_ sql: String, _ bindings: [SQLValue] = [], row: (SQLRow) throws -> Void = { _ in }) throws {
        try withStatement(sql, bindings) { statement in
            while try step(statement) { try row(SQLRow(statement: statement)) }
        }
    }

    /// The rows of a query, each mapped by `transform`.
    func rows<T>(_ sql: String, _ bindings: [SQLValue] = [], _ transform: (SQLRow) throws -> T) throws -> [T] {
        var out: [T] = []
        try query(sql, bindings) { out.append(try transform($0)) }
        return out
    }

    /// The first row of a query, mapped by `transform`, or nil when there
    /// is none; the statement stops there (for lookups by a unique key).
    func firstRow<T>(_ sql: String, _ bindings: [SQLValue] = [], _ transform: (SQLRow) throws -> T) throws -> T? {
        try withStatement(sql, bindings) { statement in
            try step(statement) ? try transform(SQLRow(statement: statement)) : nil
        }
    }

    /// `firstRow` of a query with one parameter, a blob (a lookup by a
    /// unique key). The blob is bound in place, not copied (SQLITE_STATIC):
    /// the statement is reset, dropping the binding, before `key`'s
    /// storage is let go.
    func firstRow<T>(_ sql: String, blob key: [UInt8], _ transform: (SQLRow) throws -> T) throws -> T? {
        try key.withUnsafeBytes { raw in
            try withStatement(sql, []) { statement in
                let rc = sqlite3_bind_blob(statement, 1, raw.baseAddress, Int32(raw.count), nil)  // nil: SQLITE_STATIC
                guard rc == SQLITE_OK else { throw failure(rc, String(cString: sqlite3_errmsg(handle))) }
                return try step(statement) ? try transform(SQLRow(statement: statement)) : nil
            }
        }
    }

    /// One more row of `statement`: true when there is one, false when done.
    private func step(_ statement: OpaquePointer) throws -> Bool {
        let rc = sqlite3_step(statement)
        if rc == SQLITE_DONE { return false }
        guard rc == SQLITE_ROW else { throw failure(rc, String(cString: sqlite3_errmsg(handle))) }
        return true
    }

    /// Runs `body` with the prepared statement for `sql` (from the cache
    /// when idle there), `bindings` bound; resets it afterwards.
    private func withStatement<R>(_ sql: String, _ bindings: [SQLValue], _ body: (OpaquePointer) throws -> R) throws -> R {
        try locked {
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

    private func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw failure(prepared, String(cString: sqlite3_errmsg(handle)))
        }
        return statement
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

    /// The vault's error for a SQLite result code. Damage also stops this
    /// connection from checkpointing into the file when it closes.
    private func failure(_ rc: Int32, _ message: String) -> VaultError {
        switch rc & 0xff {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return damaged("the database \(path) is damaged or not a Touchstone vault (\(message))")
        case SQLITE_READONLY where isReadOnly:
            return Self.readOnly(path)
        case SQLITE_CANTOPEN where isReadOnly:
            return .storage("cannot read \(path) on a read-only file system: its write-ahead log (-wal) holds changes that need the -shm index, which is missing and cannot be made there; mount it read-write once")
        default: return .storage(message)
        }
    }

    /// A damage report; the connection will close without a checkpoint.
    private func damaged(_ what: String) -> VaultError {
        if let handle { ts_sqlite_no_checkpoint_on_close(handle) }
        return .corrupted(what)
    }

    /// The error for a change refused because the vault's file system is
    /// read-only.
    static func readOnly(_ path: String) -> VaultError {
        let folder = (path as NSString).deletingLastPathComponent
        return .storage("cannot change the vault: \(folder) is on a read-only file system (reading works)")
    }
}

/// A prepared statement kept for reuse, and whether a query is using it.
private final class CachedStatement {
    let handle: OpaquePointer
    var inUse = false
    init(_ handle: OpaquePointer) { self.handle = handle }
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
        withBlob(column) { Array($0) }
    }
    /// Runs `body` on a blob column's bytes where SQLite holds them (valid
    /// while the row is current), without copying them.
    func withBlob<R>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let p = sqlite3_column_blob(statement, column)  // before _bytes, as SQLite documents
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let p else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeBufferPointer(start: p.assumingMemoryBound(to: UInt8.self), count: count))
    }
}

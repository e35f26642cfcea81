import Glibc
import TouchstonePOSIX

/// Checks on the database file itself, made before SQLite opens it, and
/// the file reads they need.
extension SQLiteDatabase {
    /// Checks a file that must already hold a database, before SQLite opens
    /// it: refuses a missing or empty one, and one shorter than its header
    /// says unless its write-ahead log holds every missing page (a
    /// checkpoint cut short leaves that; SQLite reads them from the log).
    /// SQLite alone would take an empty file for a new database, and would
    /// read pages missing at the end as zeros where the log holds the
    /// header, so neither reaches it.
    static func checkFile(_ path: String) throws(VaultError) {
        var info = stat()
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { stat(path, &info) }
        } catch {
            throw VaultError.storage(StorageFailure(.database, "cannot open \(path): \(error)"))
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
        guard let file = try? OwnedDescriptor.open(path, O_RDONLY) else { return nil }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while count.map({ out.count < $0 }) ?? true {
            let want = min(buffer.count, count.map { $0 - out.count } ?? buffer.count)
            // EINTR retried; an error ends the read like the file's end.
            let n = (try? buffer.withUnsafeMutableBytes { bytes in try file.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<want])) }) ?? 0
            guard n > 0 else { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return out
    }

    static func fileSize(_ path: String) -> Int? {
        var info = stat()
        guard (try? valueOrErrno(retryOnInterrupt: false, { stat(path, &info) })) != nil else { return nil }
        return Int(info.st_size)
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
}

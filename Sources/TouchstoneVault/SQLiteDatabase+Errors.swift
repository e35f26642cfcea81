internal import CSQLite
import Foundation

/// SQLite result codes as the vault's errors.
extension SQLiteDatabase {
    /// The vault's error for a SQLite result code. Damage also stops this
    /// connection from checkpointing into the file when it closes.
    func failure(_ rc: Int32, _ message: String) -> VaultError {
        switch rc & 0xff {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return damaged("the database \(path) is damaged or not a Touchstone vault (\(message))")
        case SQLITE_READONLY where isReadOnly:
            return Self.readOnly(path)
        case SQLITE_CANTOPEN where isReadOnly:
            return .storage(StorageFailure(.database, "cannot read \(path) on a read-only file system: its write-ahead log (-wal) holds changes that need the -shm index, which is missing and cannot be made there; mount it read-write once"))
        default: return .storage(StorageFailure(.database, message))
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
        return .storage(StorageFailure(.readOnly, "cannot change the vault: \(folder) is on a read-only file system (reading works)"))
    }
}

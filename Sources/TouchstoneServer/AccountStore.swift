import Foundation
import Synchronization
import Touchstone
import TouchstoneVault

/// Which account each uid's vault was made for, in the daemon's database
/// (`HOME/daemon.sqlite`, table `accounts`): the passwd name the uid had
/// when the daemon first served it. A uid whose name changed since (the
/// account deleted and the uid given to another) is refused: its vault,
/// gate and throttle are the old account's, until an administrator removes
/// them (`touchstoned --remove-user UID`).
package final class AccountStore: Sendable {
    private let database: SQLiteDatabase
    /// The names read from the database so far.
    private let known = Mutex<[UInt32: String]>([:])

    package init(database: SQLiteDatabase) throws {
        self.database = database
        try database.execute("CREATE TABLE IF NOT EXISTS accounts(uid INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    }

    /// Checks that `uid` is still the account `name` its vault was made
    /// for; records it at the uid's first use.
    func check(_ uid: UInt32, name: String) throws(DeviceError) {
        if let recorded = known.withLock({ $0[uid] }) {
            try Self.compare(uid, recorded: recorded, now: name)
            return
        }
        let stored: String?
        do throws(VaultError) {
            stored = try database.firstRow("SELECT name FROM accounts WHERE uid = ?", [.integer(Int64(uid))]) { $0.text(0) }
            if stored == nil {
                try database.query("INSERT INTO accounts(uid, name) VALUES(?, ?)", [.integer(Int64(uid)), .text(name)])
            }
        } catch {
            // Unknown whose the uid is: refused (fails closed).
            throw DeviceError(vault: error)
        }
        known.withLock { $0[uid] = stored ?? name }
        if let stored { try Self.compare(uid, recorded: stored, now: name) }
    }

    private static func compare(_ uid: UInt32, recorded: String, now: String) throws(DeviceError) {
        guard recorded == now else {
            throw .storage(StorageFailure(.stateFolder,
                                          "uid \(uid) was the account '\(recorded)' when touchstoned made its vault, and is '\(now)' now: refused",
                                          fix: "an administrator removes the old account's vault: touchstoned --remove-user \(uid)"))
        }
    }
}

extension DaemonServer {
    /// Deletes what the daemon at `home` holds for `uid`: its state folder,
    /// its TPM gate, its passcode throttle and verifier, its account record
    /// (`touchstoned --remove-user`). Stop the daemon first: a running one
    /// keeps an open user's engine. Returns the account name recorded, if any.
    package static func removeUser(_ uid: UInt32, home: URL) throws -> (account: String?, removedFolder: Bool) {
        let database = try SQLiteDatabase(path: home.appendingPathComponent("daemon.sqlite").path)
        let id = Int64(uid)
        var account: String?
        try database.transaction { () throws(VaultError) in
            var tables: Set<String> = []
            try database.query("SELECT name FROM sqlite_master WHERE type = 'table'") { tables.insert($0.text(0)) }
            if tables.contains("accounts") {
                account = try database.firstRow("SELECT name FROM accounts WHERE uid = ?", [.integer(id)]) { $0.text(0) }
            }
            for table in ["accounts", "gates", "throttle", "verifiers"] where tables.contains(table) {
                try database.query("DELETE FROM \(table) WHERE uid = ?", [.integer(id)])
            }
        }
        let folder = home.appendingPathComponent("users").appendingPathComponent(String(uid))
        let existed = FileManager.default.fileExists(atPath: folder.path)
        if existed { try FileManager.default.removeItem(at: folder) }
        return (account, existed)
    }
}

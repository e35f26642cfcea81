import Foundation
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// Every client user's TPM gate (TPM+Gate.swift), in the daemon's database
/// (`HOME/daemon.sqlite`, table `gates`): the gate object's public and
/// private areas, its authValue and the pepper. Nothing of it leaves the
/// daemon; whoever reads this table holds every user's gate.
package final class GateStore: Sendable {
    private let database: SQLiteDatabase

    /// `database`: the daemon's own (`HOME/daemon.sqlite`).
    package init(database: SQLiteDatabase) throws {
        self.database = database
        try database.execute("""
            CREATE TABLE IF NOT EXISTS gates(uid INTEGER PRIMARY KEY, public BLOB NOT NULL, private BLOB NOT NULL,
                                             name BLOB NOT NULL, auth BLOB NOT NULL, pepper BLOB NOT NULL)
            """)
    }

    /// `uid`'s gate; created (on the TPM at `tcti`) for a user whose vault
    /// does not exist yet. A vault made before gates existed gets none.
    func gate(for uid: uid_t, vaultExists: Bool, tcti: String) throws(DeviceError) -> TPMGate? {
        do throws(VaultError) {
            if let stored = try database.firstRow("SELECT public, private, name, auth, pepper FROM gates WHERE uid = ?",
                                                  [.integer(Int64(uid))], { row -> TPMGate in
                var auth = row.blob(3), pepper = row.blob(4)
                return TPMGate(publicArea: row.blob(0), privateArea: row.blob(1), name: row.blob(2),
                               authValue: SecureBytes(consuming: &auth), pepper: SecureBytes(consuming: &pepper))
            }) {
                return stored
            }
        } catch {
            throw DeviceError(vault: error)
        }
        guard !vaultExists else { return nil }
        let gate: TPMGate
        do throws(TPMError) { gate = try TPM(tcti: tcti).createGate() } catch { throw DeviceError(tpm: error) }
        var auth = gate.authValue.withUnsafeBytes { Array($0) }
        var pepper = gate.pepper.withUnsafeBytes { Array($0) }
        defer { secureWipe(&auth); secureWipe(&pepper) }
        do throws(VaultError) {
            try database.query("INSERT INTO gates(uid, public, private, name, auth, pepper) VALUES(?, ?, ?, ?, ?, ?)",
                               [.integer(Int64(uid)), .blob(gate.publicArea), .blob(gate.privateArea), .blob(gate.name),
                                .blob(auth), .blob(pepper)])
        } catch {
            throw DeviceError(vault: error)
        }
        return gate
    }
}

import Foundation
import TestRigs
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

/// A vault on a private swtpm in a fresh home folder.
final class VaultRig: @unchecked Sendable {
    let tpmRig: SwtpmRig
    let tpm: TPM
    let home: URL
    let vault: Vault

    let recordCipher: RecordCipher

    /// `recordCipher`: what the vault writes new rows with (default: what
    /// a vault on this CPU writes).
    init(passcode: Bool = true, recordCipher: RecordCipher = .preferred) throws {
        self.recordCipher = recordCipher
        tpmRig = try SwtpmRig()
        tpm = try tpmRig.tpm()
        home = URL(fileURLWithPath: tpmRig.directory).appendingPathComponent("home")
        vault = try Vault(home: home, tpm: tpm, recordCipher: recordCipher)
        if passcode { try vault.setPasscode(rightPasscode, domainState: randomState()) }
    }

    /// Another Vault instance on the same folder and TPM (another process's
    /// view), writing with `recordCipher` (default: the rig's).
    func reopen(recordCipher: RecordCipher? = nil) throws -> Vault {
        try Vault(home: home, tpm: tpm, recordCipher: recordCipher ?? self.recordCipher)
    }

    /// A raw connection to the database, for tampering.
    func database() throws -> SQLiteDatabase {
        try SQLiteDatabase(path: home.appendingPathComponent(Vault.databaseName).path)
    }
}

func secret(_ text: String) -> SecureBytes {
    var bytes = Array(text.utf8)
    return SecureBytes(consuming: &bytes)
}

func string(_ bytes: SecureBytes) -> String {
    bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

let finger = VaultProof(biometricMatch: true)
let passcode = VaultProof(passcode: rightPasscode)
let both = VaultProof(biometricMatch: true, passcode: rightPasscode)

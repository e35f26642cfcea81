import Foundation
import TestRigs
import TouchstoneFingerprint
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
    /// `gated`: the TPM has a daemon's gate installed (daemon mode).
    init(passcode: Bool = true, recordCipher: RecordCipher = .preferred, gated: Bool = false) throws {
        self.recordCipher = recordCipher
        tpmRig = try SwtpmRig()
        let plain = try tpmRig.tpm()
        tpm = gated ? try TPM(tcti: tpmRig.swtpm.tcti, gate: try plain.createGate()) : plain
        home = URL(fileURLWithPath: tpmRig.directory).appendingPathComponent("home")
        vault = try Vault(home: home, tpm: tpm, recordCipher: recordCipher)
        if passcode { try vault.setPasscode(rightPasscode) }
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

/// The reader the vault tests' prints come from (no reader is opened: the
/// vault stores prints, libfprint makes and matches them).
let testReader = ReaderIdentity(driver: "test_driver", deviceID: "0")

/// A print of `finger`: random bytes standing for libfprint's data.
func testPrint(_ finger: Finger = .rightIndex) -> EnrolledPrint {
    EnrolledPrint(finger: finger, reader: testReader, data: SecureBytes.random(count: 64).withUnsafeBytes { Array($0) })
}

/// An enrolment change: the set becomes `prints` (by default one new
/// print of the right index finger), proved by `passcode`.
@discardableResult
func changeFingers(_ vault: Vault, passcode: PasscodeAuth = rightPasscode,
                   to prints: [EnrolledPrint] = [testPrint()]) throws(VaultError) -> EnrolledFingers {
    try vault.changeFingers(to: prints, reader: prints.first?.reader, proof: VaultProof(passcode: passcode))
}

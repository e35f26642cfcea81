import Foundation
import Testing
import TestScopes
import TestRigs
import TouchstoneSecure
@testable import TouchstoneTPM
@testable import TouchstoneVault

/// ssh keys in the vault (Vault+SSHKeys.swift): each access control's
/// ways to sign, across enrolment and passcode changes, and a record
/// tampered with.
@Suite("ssh keys in the vault: access controls, changes, tampering", .offPool)
struct SSHKeyVaultTests {
    private static let digest = [UInt8](repeating: 0x5a, count: 32)

    private static func signs(_ vault: Vault, _ name: String, _ proof: VaultProof) -> Bool {
        (try? vault.signSSH(name: name, digest: digest, proof: proof)) != nil
    }

    @Test("each access signs with the proofs it names and no other", arguments: [
        ("none", AccessControl.none, [true, true, true, true]),
        ("passcode", .devicePasscode, [false, false, true, true]),
        ("biometry-any", .biometryAny, [false, true, false, true]),
        ("current-set", .biometryCurrentSet, [false, true, false, true]),
        ("user-presence", .userPresence, [false, true, true, true]),
        ("any and passcode", .and(.biometryAny, .devicePasscode), [false, false, false, true]),
        ("current-set and passcode", .and(.biometryCurrentSet, .devicePasscode), [false, false, false, true]),
    ])
    func proofsPerAccess(_ what: String, _ access: AccessControl, _ expected: [Bool]) throws {
        let rig = try VaultRig()
        try changeFingers(rig.vault)
        let info = try rig.vault.createSSHKey(name: what, comment: "c", access: access)
        #expect(info.publicPoint.count == 65)
        let proofs = [VaultProof.none, finger, passcode, both]
        #expect(proofs.map { Self.signs(rig.vault, what, $0) } == expected, "\(what)")
        #expect(try rig.vault.sshKeys().map(\.state) == [.ok])
    }

    @Test("an enrolment change closes current-set keys for good (invalidated, itemInvalidated) and keeps biometry-any and user-presence keys signing; a passcode change keeps passcode keys signing with the new passcode only")
    func changes() throws {
        let rig = try VaultRig()
        let vault = rig.vault
        try changeFingers(vault)
        _ = try vault.createSSHKey(name: "current", comment: "", access: .biometryCurrentSet)
        _ = try vault.createSSHKey(name: "any", comment: "", access: .biometryAny)
        _ = try vault.createSSHKey(name: "presence", comment: "", access: .userPresence)
        _ = try vault.createSSHKey(name: "pin", comment: "", access: .devicePasscode)
        try changeFingers(vault, to: [testPrint(.rightIndex), testPrint(.leftThumb)])
        #expect(try vault.sshKeys().map { "\($0.name) \($0.state)" } == ["current invalidated", "any ok", "presence ok", "pin ok"])
        #expect(throws: VaultError.itemInvalidated) { try vault.signSSH(name: "current", digest: Self.digest, proof: finger) }
        #expect(throws: VaultError.itemInvalidated) { try vault.sshKeyOpenAccess(name: "current") }
        #expect(Self.signs(vault, "any", finger) && Self.signs(vault, "presence", finger))

        let next = PasscodeAuth(passcodeString: "another passcode")
        try vault.changePasscode(from: rightPasscode, to: next)
        #expect(Self.signs(vault, "pin", VaultProof(passcode: next)))
        #expect(!Self.signs(vault, "pin", passcode), "the old passcode signs nothing")
        #expect(Self.signs(vault, "presence", VaultProof(passcode: next)))
    }

    @Test("name and comment are nowhere in the database in clear; a row's TPM blob or metadata moved to another key's row reads as corrupted and signs nothing")
    func tampering() throws {
        let rig = try VaultRig()
        let first = try rig.vault.createSSHKey(name: "first-key-name", comment: "first-comment-text", access: .none)
        _ = try rig.vault.createSSHKey(name: "second-key-name", comment: "", access: .none)
        #expect(Self.signs(rig.vault, "first-key-name", .none) && Self.signs(rig.vault, "second-key-name", .none))
        let db = try rig.database()
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let files = ["", "-wal"].map { rig.home.appendingPathComponent(Vault.databaseName + $0).path }
        for path in files {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            for text in ["first-key-name", "second-key-name", "first-comment-text"] {
                #expect(bytes.range(of: Data(text.utf8)) == nil, "\(text) in \(path)")
            }
        }
        #expect(try rig.vault.sshKeys().map(\.name) == ["first-key-name", "second-key-name"], "while the vault reads them")

        let rows = try db.rows("SELECT id, tpm, metadata FROM ssh_keys ORDER BY id", []) { ($0.integer(0), $0.blob(1), $0.blob(2)) }
        try db.query("UPDATE ssh_keys SET tpm = ? WHERE id = ?", [.blob(rows[1].1), .integer(rows[0].0)])
        #expect(throws: VaultError.self) { try rig.vault.signSSH(name: "first-key-name", digest: Self.digest, proof: .none) }
        #expect(try rig.vault.sshKeys().map(\.state) == [.corrupted, .ok])
        try db.query("UPDATE ssh_keys SET tpm = ?, metadata = ? WHERE id = ?", [.blob(rows[0].1), .blob(rows[1].2), .integer(rows[0].0)])
        #expect(throws: VaultError.self) { try rig.vault.signSSH(name: "first-key-name", digest: Self.digest, proof: .none) }
        #expect(try rig.vault.sshKeys().first?.state == .corrupted, "metadata bound to its row's lookup")
        try db.query("UPDATE ssh_keys SET metadata = ? WHERE id = ?", [.blob(rows[0].2), .integer(rows[0].0)])
        // Put back, it reads and signs again (the creation time as stored: seconds since 1970, a Double).
        let back = try #require(try rig.vault.sshKeys().first)
        #expect(back.name == first.name && back.comment == first.comment && back.publicPoint == first.publicPoint && back.state == .ok)
        #expect(abs(back.created.timeIntervalSince(first.created)) < 0.001)
        #expect(Self.signs(rig.vault, "first-key-name", .none))
    }

    @Test("in daemon mode every key's TPM policy starts with the gate: a TPM without the gate signs with none of them, not even access none")
    func gated() throws {
        let rig = try VaultRig(gated: true)
        try changeFingers(rig.vault)
        let plain = try rig.tpmRig.tpm()
        for (name, access, proof) in [("none", AccessControl.none, VaultProof.none), ("any", .biometryAny, finger),
                                      ("current", .biometryCurrentSet, finger), ("pin", .devicePasscode, passcode)] {
            _ = try rig.vault.createSSHKey(name: name, comment: "", access: access)
            #expect(Self.signs(rig.vault, name, proof), "\(name): the daemon's vault signs")
            let blob = try SealedBlob(serialized: try rig.database().rows("SELECT tpm FROM ssh_keys ORDER BY id DESC LIMIT 1", []) { $0.blob(0) }[0])
            #expect(blob.policy.gateName != nil, "\(name)")
            let branch: UnsealBranch = access.flags.isEmpty ? .device : access == .biometryCurrentSet ? .biometric
                : .passcode(PasscodeAuth(authValue: SecureBytes.random(count: 32)))
            #expect(throws: TPMError.self, "\(name): without the gate") { try plain.sign(digest: Self.digest, with: blob, via: branch) }
        }
    }

    @Test("bad names and comments are refused before anything is made: empty, too long, control characters", arguments: [
        ("", ""), (String(repeating: "n", count: 257), ""), ("tab\there", ""), ("line\nbreak", ""), ("ok", "bell\u{7}"),
    ])
    func badNames(_ name: String, _ comment: String) throws {
        let rig = try VaultRig()
        #expect(throws: VaultError.self) { try rig.vault.createSSHKey(name: name, comment: comment, access: .none) }
        #expect(try rig.vault.sshKeys().isEmpty)
        #expect(try rig.vault.createSSHKey(name: String(repeating: "n", count: 256), comment: "a comment", access: .none).publicPoint.count == 65)
    }
}

import Foundation
import Testing
import TestScopes
import TestRigs
import TouchstoneSecure
@testable import TouchstoneTPM
@testable import TouchstoneVault

/// FIDO credentials in the vault (Vault+FIDO.swift): the flags an
/// assertion carries, the counter, what a credential refuses, and records
/// tampered with.
@Suite("FIDO credentials in the vault: flags, counter, refusals, tampering", .offPool)
struct FIDOVaultTests {
    private static let clientDataHash = [UInt8](repeating: 0xc1, count: 32)

    private static func request(_ rp: String = "ssh:work", user: String = "alice", discoverable: Bool = false,
                                verify: Bool = false, access: AccessControl = .userPresence) -> FIDOCredentialRequest {
        FIDOCredentialRequest(relyingParty: rp, userID: Array(user.utf8), userName: user, discoverable: discoverable,
                              verificationRequired: verify, access: access)
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] { Vault.sha256(bytes) }

    @Test("an assertion's authenticator data: the relying party's hash, user present always, user verified only when asked (or the credential requires it), a counter that rises by one")
    func flagsAndCounter() throws {
        let rig = try VaultRig()
        try changeFingers(rig.vault)
        let plain = try rig.vault.createFIDOCredential(Self.request())
        let verified = try rig.vault.createFIDOCredential(Self.request("ssh:other", verify: true))
        #expect(plain.id.count == Vault.credentialIDSize && plain.publicPoint.count == 65 && plain.signCount == 0)

        let first = try rig.vault.assertFIDO(id: plain.id, relyingParty: "ssh:work", clientDataHash: Self.clientDataHash,
                                             userVerification: false, proof: finger)
        #expect(Array(first.authenticatorData.prefix(32)) == Self.sha256(Array("ssh:work".utf8)))
        #expect(first.flags == FIDOAssertion.userPresent && first.signCount == 1 && first.authenticatorData.count == 37)
        #expect(first.signature.r.count == 32 && first.signature.s.count == 32)
        let asked = try rig.vault.assertFIDO(id: plain.id, relyingParty: "ssh:work", clientDataHash: Self.clientDataHash,
                                             userVerification: true, proof: passcode)
        #expect(asked.flags == FIDOAssertion.userPresent | FIDOAssertion.userVerified && asked.signCount == 2)
        let required = try rig.vault.assertFIDO(id: verified.id, relyingParty: "ssh:other", clientDataHash: Self.clientDataHash,
                                                userVerification: false, proof: finger)
        #expect(required.flags == FIDOAssertion.userPresent | FIDOAssertion.userVerified && required.signCount == 1,
                "a verify-required credential's counter is its own")
        #expect(try rig.vault.fidoCredentials().map(\.signCount) == [2, 1])
        #expect(try rig.vault.fidoCredentials(relyingParty: "ssh:other").map(\.id) == [verified.id])
    }

    @Test("a registration's discoverable credential is kept beside the user's older one until attested, then replaces it and only it: another user's, and the same user's non-discoverable one, stay")
    func replacedOnceAttested() throws {
        let rig = try VaultRig()
        try changeFingers(rig.vault)
        let older = try rig.vault.createFIDOCredential(Self.request("example.org", discoverable: true))
        let bobs = try rig.vault.createFIDOCredential(Self.request("example.org", user: "bob", discoverable: true))
        let plain = try rig.vault.createFIDOCredential(Self.request("example.org"))
        let newer = try rig.vault.createFIDOCredential(Self.request("example.org", discoverable: true), keepingOthers: true)
        #expect(Set(try rig.vault.fidoCredentials().map(\.id)) == [older.id, bobs.id, plain.id, newer.id])
        try rig.vault.deleteFIDOCredentials(replacedBy: newer)
        #expect(Set(try rig.vault.fidoCredentials().map(\.id)) == [bobs.id, plain.id, newer.id])
    }

    @Test("a user's names changed only with a proof the credential's access names, a control character refused; the id, user handle, key and counter kept, and it still signs")
    func userNamesUpdated() throws {
        let rig = try VaultRig()
        try changeFingers(rig.vault)
        let made = try rig.vault.createFIDOCredential(Self.request("example.org", discoverable: true, access: .devicePasscode))
        _ = try rig.vault.assertFIDO(id: made.id, relyingParty: "example.org", clientDataHash: Self.clientDataHash, userVerification: false,
                                     proof: passcode)
        #expect(throws: VaultError.authenticationRequired) {
            try rig.vault.updateFIDOUser(id: made.id, relyingParty: "example.org", userName: "mallory", userDisplayName: "", proof: finger)
        }
        #expect(throws: VaultError.itemNotFound) {
            try rig.vault.updateFIDOUser(id: made.id, relyingParty: "elsewhere.org", userName: "mallory", userDisplayName: "", proof: passcode)
        }
        #expect(throws: VaultError.invalidInput("a user name is at most \(Vault.maximumFieldSize) bytes, without control characters")) {
            try rig.vault.updateFIDOUser(id: made.id, relyingParty: "example.org", userName: "a\u{7}", userDisplayName: "", proof: passcode)
        }
        #expect(try rig.vault.fidoCredentials().map(\.userName) == ["alice"])
        try rig.vault.updateFIDOUser(id: made.id, relyingParty: "example.org", userName: "alice@example.org", userDisplayName: "Alice",
                                     proof: passcode)
        let listed = try #require(try rig.vault.fidoCredentials().first)
        #expect(listed.userName == "alice@example.org" && listed.userDisplayName == "Alice")
        #expect(listed.id == made.id && listed.userID == made.userID && listed.publicPoint == made.publicPoint && listed.signCount == 1)
        let signed = try rig.vault.assertFIDO(id: made.id, relyingParty: "example.org", clientDataHash: Self.clientDataHash,
                                              userVerification: false, proof: passcode)
        #expect(signed.signCount == 2)
    }

    @Test("what a credential refuses spends no counter value: another relying party's request (not found), a proof its access does not name, a proof with nothing in it when verification is required")
    func refusalsSpendNothing() throws {
        let rig = try VaultRig()
        try changeFingers(rig.vault)
        let pin = try rig.vault.createFIDOCredential(Self.request(access: .devicePasscode))
        #expect(throws: VaultError.itemNotFound) {
            try rig.vault.assertFIDO(id: pin.id, relyingParty: "ssh:elsewhere", clientDataHash: Self.clientDataHash, userVerification: false,
                                     proof: passcode)
        }
        #expect(throws: VaultError.authenticationRequired) {
            try rig.vault.assertFIDO(id: pin.id, relyingParty: "ssh:work", clientDataHash: Self.clientDataHash, userVerification: false,
                                     proof: finger)
        }
        #expect(throws: VaultError.authenticationRequired) {
            try rig.vault.assertFIDO(id: pin.id, relyingParty: "ssh:work", clientDataHash: Self.clientDataHash, userVerification: true,
                                     proof: .none)
        }
        #expect(throws: VaultError.invalidInput("a client data hash is 32 bytes")) {
            try rig.vault.assertFIDO(id: pin.id, relyingParty: "ssh:work", clientDataHash: [1, 2, 3], userVerification: false, proof: passcode)
        }
        #expect(try rig.vault.fidoCredentials().map(\.signCount) == [0])
        let signed = try rig.vault.assertFIDO(id: pin.id, relyingParty: "ssh:work", clientDataHash: Self.clientDataHash,
                                              userVerification: false, proof: passcode)
        #expect(signed.signCount == 1, "the first value released is the first")
    }

    @Test("made: never with access none, a user handle over 64 bytes, a control character or credProtect 4; a second discoverable credential for the same relying party and user only by replacing the first")
    func creationRules() throws {
        let rig = try VaultRig()
        try changeFingers(rig.vault)
        #expect(throws: VaultError.self) { try rig.vault.createFIDOCredential(Self.request(access: .none)) }
        #expect(throws: VaultError.self) { try rig.vault.createFIDOCredential(Self.request(user: String(repeating: "u", count: 65))) }
        #expect(throws: VaultError.self) { try rig.vault.createFIDOCredential(Self.request("ssh:\u{1b}[31m")) }
        var protected = Self.request()
        protected.credProtect = 4
        #expect(throws: VaultError.self) { try rig.vault.createFIDOCredential(protected) }
        #expect(try rig.vault.fidoCredentials().isEmpty)

        let old = try rig.vault.createFIDOCredential(Self.request(discoverable: true))
        #expect(throws: VaultError.duplicateItem) { try rig.vault.createFIDOCredential(Self.request(discoverable: true)) }
        let other = try rig.vault.createFIDOCredential(Self.request(user: "bob", discoverable: true))
        let new = try rig.vault.createFIDOCredential(Self.request(discoverable: true), replace: true)
        #expect(Set(try rig.vault.fidoCredentials().map(\.id)) == [other.id, new.id], "the old one is gone")
        #expect(throws: VaultError.itemNotFound) {
            try rig.vault.assertFIDO(id: old.id, relyingParty: "ssh:work", clientDataHash: Self.clientDataHash, userVerification: false,
                                     proof: finger)
        }
        _ = try rig.vault.createFIDOCredential(Self.request())
        _ = try rig.vault.createFIDOCredential(Self.request())
        #expect(try rig.vault.fidoCredentials().count == 4, "non-discoverable credentials never replace one another")
    }

    @Test("the relying party and user are nowhere in the database in clear; a metadata box moved to another row, or a counter past 32 bits, reads as corrupted and asserts nothing")
    func tampering() throws {
        let rig = try VaultRig()
        try changeFingers(rig.vault)
        let first = try rig.vault.createFIDOCredential(Self.request("ssh:first-application-name", user: "first-user-name"))
        _ = try rig.vault.createFIDOCredential(Self.request("ssh:second-application-name"))
        let db = try rig.database()
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for path in ["", "-wal"].map({ rig.home.appendingPathComponent(Vault.databaseName + $0).path }) {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            for text in ["first-application-name", "second-application-name", "first-user-name"] {
                #expect(bytes.range(of: Data(text.utf8)) == nil, "\(text) in \(path)")
            }
        }
        let rows = try db.rows("SELECT id, metadata FROM fido_credentials ORDER BY id", []) { ($0.integer(0), $0.blob(1)) }
        try db.query("UPDATE fido_credentials SET metadata = ? WHERE id = ?", [.blob(rows[1].1), .integer(rows[0].0)])
        #expect(try rig.vault.fidoCredentials().map(\.state) == [.corrupted, .ok])
        #expect(throws: VaultError.self) {
            try rig.vault.assertFIDO(id: first.id, relyingParty: "ssh:first-application-name", clientDataHash: Self.clientDataHash,
                                     userVerification: false, proof: finger)
        }
        try db.query("UPDATE fido_credentials SET metadata = ?, counter = ? WHERE id = ?",
                     [.blob(rows[0].1), .integer(Int64(UInt32.max) + 1), .integer(rows[0].0)])
        #expect(try rig.vault.fidoCredentials().first?.state == .corrupted)
        try db.query("UPDATE fido_credentials SET counter = 7 WHERE id = ?", [.integer(rows[0].0)])
        let back = try rig.vault.assertFIDO(id: first.id, relyingParty: "ssh:first-application-name", clientDataHash: Self.clientDataHash,
                                            userVerification: false, proof: finger)
        #expect(back.signCount == 8, "put back, it asserts again, from the stored counter")
    }

    @Test("in daemon mode every credential's TPM policy starts with the gate: the daemon's vault asserts, a TPM without the gate signs with none of them")
    func gated() throws {
        let rig = try VaultRig(gated: true)
        try changeFingers(rig.vault)
        let plain = try rig.tpmRig.tpm()
        for (access, proof) in [(AccessControl.biometryAny, finger), (.biometryCurrentSet, finger), (.devicePasscode, passcode)] {
            let made = try rig.vault.createFIDOCredential(Self.request("ssh:\(access)", access: access))
            #expect((try? rig.vault.assertFIDO(id: made.id, relyingParty: "ssh:\(access)", clientDataHash: Self.clientDataHash,
                                               userVerification: true, proof: proof)) != nil, "\(access): the daemon's vault asserts")
            let stored = try rig.database().rows("SELECT tpm FROM fido_credentials ORDER BY id DESC LIMIT 1", []) { $0.blob(0) }[0]
            let blob = try SealedBlob(serialized: stored)
            #expect(blob.policy.gateName != nil, "\(access)")
            let branch: UnsealBranch = access == .biometryCurrentSet ? .biometric : .passcode(PasscodeAuth(authValue: SecureBytes.random(count: 32)))
            #expect(throws: TPMError.self, "\(access): without the gate") {
                try plain.sign(digest: Array(repeating: 1, count: 32), with: blob, via: branch)
            }
        }
    }
}

import Foundation
import Testing
import TestScopes
import TestRigs
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

/// A vault on a TPM with the daemon's gate (what `touchstoned` opens for a
/// user): biometry-any has no passcode branch at all.
@Suite("A daemon-mode vault: biometry-any without a passcode branch", .offPool)
struct DaemonModeVaultTests {
    @Test("biometry-any keys get no passcode blob, and still follow every enrolment and passcode change (the vault opens their biometric blob through the gate); an embedded vault's do have one")
    func biometryAnyWithoutPasscodeBlob() throws {
        let rig = try VaultRig(gated: true)
        let vault = rig.vault
        try changeFingers(vault)
        try vault.add(secret("any"), attributes: ItemAttributes(service: "s", account: "any", access: .biometryAny))
        #expect(try vault.classKey(.biometryAny).passcodeSealed == nil)
        #expect(string(try vault.secret(service: "s", account: "any", proof: finger)) == "any")
        #expect(throws: (any Error).self, "the passcode alone opens no biometry-any item") {
            try vault.secret(service: "s", account: "any", proof: passcode)
        }
        for round in 1...2 {
            try changeFingers(vault, to: [testPrint(.rightIndex), testPrint(.leftThumb)].prefix(round).map { $0 })
            #expect(try vault.classKey(.biometryAny).passcodeSealed == nil, "change \(round)")
            #expect(string(try vault.secret(service: "s", account: "any", proof: finger)) == "any", "after change \(round)")
        }
        let next = PasscodeAuth(passcodeString: "another passcode")
        try vault.changePasscode(from: rightPasscode, to: next)
        try changeFingers(vault, passcode: next, to: [testPrint(.leftIndex)])
        #expect(try vault.classKey(.biometryAny).passcodeSealed == nil)
        #expect(string(try vault.secret(service: "s", account: "any", proof: finger)) == "any")

        // The control: an embedded vault seals biometry-any for the passcode too.
        let embedded = try VaultRig()
        #expect(try embedded.vault.classKey(.biometryAny).passcodeSealed != nil)
    }

    @Test("a passcode proof from a key the TPM opened earlier (the daemon's warm passcode) opens passcode items while the passcode key's record is the one it came from; after a passcode change that record is stale and gives no proof")
    func proofFromAnOpenedKey() throws {
        let rig = try VaultRig(gated: true)
        let vault = rig.vault
        try vault.add(secret("pin"), attributes: ItemAttributes(service: "s", account: "pin", access: .devicePasscode))
        let proved = try vault.verifyPasscode(rightPasscode)
        let opened = try #require(try vault.openedPasscodeKey(in: proved))
        let record = try vault.passcodeKeyRecord()

        let again = try #require(try vault.passcodeProof(rightPasscode, opened: opened, record: record))
        #expect(string(try vault.secret(service: "s", account: "pin", proof: again)) == "pin")

        let next = PasscodeAuth(passcodeString: "another passcode")
        try vault.changePasscode(from: rightPasscode, to: next)
        #expect(try vault.passcodeKeyRecord() != record)
        #expect(try vault.passcodeProof(rightPasscode, opened: opened, record: record) == nil,
                "a record from before the change still gave a proof")
        #expect(string(try vault.secret(service: "s", account: "pin", proof: VaultProof(passcode: next))) == "pin")
    }
}

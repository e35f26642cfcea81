import Foundation
import Testing
import TestScopes
import TestRigs
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

@Suite("Vault items on swtpm", .offPool)
struct VaultItemTests {
    @Test("add, get, update, delete, duplicates and missing items")
    func lifecycle() throws {
        let rig = try VaultRig()
        let vault = rig.vault
        try vault.add(secret("s3cret"), attributes: ItemAttributes(service: "github", account: "alice",
                                                                   label: "GitHub", access: .devicePasscode))
        #expect(throws: VaultError.duplicateItem) {
            try vault.add(secret("other"), attributes: ItemAttributes(service: "github", account: "alice"))
        }
        #expect(string(try vault.secret(service: "github", account: "alice", proof: passcode)) == "s3cret")
        #expect(throws: VaultError.authenticationRequired) {
            try vault.secret(service: "github", account: "alice", proof: finger)
        }
        #expect(throws: VaultError.itemNotFound) { try vault.secret(service: "github", account: "bob", proof: passcode) }

        let created = try vault.attributes(service: "github", account: "alice").created
        try vault.update(service: "github", account: "alice", secret: secret("n3w"), comment: "rotated", proof: passcode)
        let updated = try vault.attributes(service: "github", account: "alice")
        #expect(updated.comment == "rotated")
        #expect(updated.label == "GitHub")
        #expect(updated.created == created)
        #expect(updated.modified >= created)
        #expect(string(try vault.secret(service: "github", account: "alice", proof: passcode)) == "n3w")
        #expect(throws: VaultError.authenticationRequired) {
            try vault.update(service: "github", account: "alice", secret: secret("x"), proof: .none)
        }

        try vault.delete(service: "github", account: "alice")
        #expect(throws: VaultError.itemNotFound) { try vault.delete(service: "github", account: "alice") }
        #expect(try vault.itemCount() == 0)
    }

    @Test("every byte value round-trips; empty and oversized secrets are refused and nothing is stored")
    func secretSizes() throws {
        let rig = try VaultRig()
        var all = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7919) }
        let expected = all
        try rig.vault.add(SecureBytes(consuming: &all), attributes: ItemAttributes(service: "bin", account: "a", access: .none))
        let back = try rig.vault.secret(service: "bin", account: "a", proof: .none)
        #expect(back.withUnsafeBytes { Array($0) } == expected)
        #expect(throws: VaultError.self) {
            try rig.vault.add(SecureBytes(count: 0), attributes: ItemAttributes(service: "bin", account: "empty", access: .none))
        }
        #expect(throws: VaultError.self) {
            try rig.vault.add(SecureBytes(count: (1 << 20) + 1), attributes: ItemAttributes(service: "bin", account: "big", access: .none))
        }
        #expect(try rig.vault.itemCount() == 1)
    }

    @Test("without a passcode only access 'none' can be stored; biometry needs a passcode")
    func passcodeNeeded() throws {
        let rig = try VaultRig(passcode: false)
        try rig.vault.add(secret("x"), attributes: ItemAttributes(service: "s", account: "none", access: .none))
        for access in [AccessControl.userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode] {
            #expect(throws: VaultError.passcodeNotSet) {
                try rig.vault.add(secret("x"), attributes: ItemAttributes(service: "s", account: access.description, access: access))
            }
        }
        #expect(throws: VaultError.passcodeNotSet) {
            try rig.vault.add(secret("x"), attributes: ItemAttributes(service: "s", account: "w", access: .none,
                                                                      accessibility: .whenPasscodeSetThisDeviceOnly))
        }
        #expect(string(try rig.vault.secret(service: "s", account: "none", proof: .none)) == "x")
    }

    @Test("an enrolment change closes biometry-current-set for good, keeps biometry-any, and 'or passcode' still opens")
    func enrollmentChange() throws {
        let rig = try VaultRig()
        let vault = rig.vault
        func add(_ account: String, _ access: AccessControl) throws {
            try vault.add(secret(account), attributes: ItemAttributes(service: "s", account: account, access: access))
        }
        try add("current", .biometryCurrentSet)
        try add("any", .biometryAny)
        try add("current-or-passcode", .or(.biometryCurrentSet, .devicePasscode))
        try add("current-and-passcode", .and(.biometryCurrentSet, .devicePasscode))
        for account in ["current", "any", "current-or-passcode"] {
            #expect(string(try vault.secret(service: "s", account: account, proof: finger)) == account)
        }
        #expect(throws: VaultError.authenticationRequired) {
            try vault.secret(service: "s", account: "current-and-passcode", proof: finger)
        }
        #expect(string(try vault.secret(service: "s", account: "current-and-passcode", proof: both)) == "current-and-passcode")

        try changeFingers(vault, passcode: rightPasscode)

        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "current", proof: both) }
        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "current-and-passcode", proof: both) }
        #expect(string(try vault.secret(service: "s", account: "any", proof: finger)) == "any")
        #expect(string(try vault.secret(service: "s", account: "current-or-passcode", proof: passcode)) == "current-or-passcode")
        #expect(throws: VaultError.self) { try vault.secret(service: "s", account: "current-or-passcode", proof: finger) }

        let states = Dictionary(uniqueKeysWithValues: try vault.list().map { ($0.attributes!.account, $0.state) })
        #expect(states == ["current": .invalidated, "any": .ok, "current-or-passcode": .ok, "current-and-passcode": .invalidated])

        // A new biometry-current-set item binds the new set and opens.
        try add("current-2", .biometryCurrentSet)
        #expect(string(try vault.secret(service: "s", account: "current-2", proof: finger)) == "current-2")
        // Another change, then the old state never comes back.
        try changeFingers(vault, passcode: rightPasscode)
        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "current-2", proof: finger) }
        #expect(string(try vault.secret(service: "s", account: "any", proof: finger)) == "any")
    }

    @Test("an enrolment change needs the right passcode; a wrong one changes nothing")
    func enrollmentChangeNeedsPasscode() throws {
        let rig = try VaultRig()
        try rig.tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
        try rig.vault.add(secret("c"), attributes: ItemAttributes(service: "s", account: "c", access: .biometryCurrentSet))
        let before = try rig.vault.currentDomainState()
        #expect(throws: VaultError.tpm(.wrongPasscode)) { try changeFingers(rig.vault, passcode: wrongPasscode) }
        #expect(try rig.vault.currentDomainState() == before)
        #expect(string(try rig.vault.secret(service: "s", account: "c", proof: finger)) == "c")
    }

    @Test("passcode change: the new passcode opens, the old does not, biometry unaffected")
    func passcodeChange() throws {
        let rig = try VaultRig()
        try rig.tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
        let vault = rig.vault
        try vault.add(secret("p"), attributes: ItemAttributes(service: "s", account: "p", access: .devicePasscode))
        try vault.add(secret("u"), attributes: ItemAttributes(service: "s", account: "u", access: .userPresence))
        let newPasscode = PasscodeAuth(passcodeString: "brand new")
        #expect(throws: VaultError.tpm(.wrongPasscode)) { try vault.changePasscode(from: wrongPasscode, to: newPasscode) }
        try vault.changePasscode(from: rightPasscode, to: newPasscode)
        #expect(string(try vault.secret(service: "s", account: "p", proof: VaultProof(passcode: newPasscode))) == "p")
        #expect(throws: VaultError.tpm(.wrongPasscode)) { try vault.secret(service: "s", account: "p", proof: passcode) }
        #expect(string(try vault.secret(service: "s", account: "u", proof: finger)) == "u")
        try changeFingers(vault, passcode: newPasscode)
        #expect(string(try vault.secret(service: "s", account: "u", proof: finger)) == "u")
    }

    @Test("passcode removal: passcode and biometry items become unusable, 'when passcode set' items are deleted, 'none' items stay")
    func passcodeRemoval() throws {
        let rig = try VaultRig()
        let vault = rig.vault
        try vault.add(secret("n"), attributes: ItemAttributes(service: "s", account: "none", access: .none))
        try vault.add(secret("p"), attributes: ItemAttributes(service: "s", account: "passcode", access: .devicePasscode))
        try vault.add(secret("b"), attributes: ItemAttributes(service: "s", account: "any", access: .biometryAny))
        try vault.add(secret("w"), attributes: ItemAttributes(service: "s", account: "when-set", access: .none,
                                                              accessibility: .whenPasscodeSetThisDeviceOnly))
        #expect(try vault.removePasscode(rightPasscode) == 1)
        #expect(!vault.isPasscodeSet)
        #expect(string(try vault.secret(service: "s", account: "none", proof: .none)) == "n")
        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "passcode", proof: both) }
        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "any", proof: both) }
        #expect(throws: VaultError.itemNotFound) { try vault.secret(service: "s", account: "when-set", proof: .none) }
        let states = Dictionary(uniqueKeysWithValues: try vault.list().map { ($0.attributes!.account, $0.state) })
        #expect(states == ["none": .ok, "passcode": .invalidated, "any": .invalidated])
        // A new passcode does not revive them.
        try vault.setPasscode(rightPasscode)
        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "passcode", proof: both) }
    }

    @Test("list shows attributes only, filters by service, needs no authentication")
    func listing() throws {
        let rig = try VaultRig()
        try rig.vault.add(secret("TOPSECRET-1"), attributes: ItemAttributes(service: "a", account: "1", label: "L", comment: "C"))
        try rig.vault.add(secret("TOPSECRET-2"), attributes: ItemAttributes(service: "b", account: "2"))
        let all = try rig.reopen().list()
        #expect(all.count == 2)
        #expect(Set(all.compactMap(\.attributes?.service)) == ["a", "b"])
        #expect(try rig.vault.list(service: "a").map(\.attributes?.label) == ["L"])
        #expect(!String(describing: all).contains("TOPSECRET"))
    }
}

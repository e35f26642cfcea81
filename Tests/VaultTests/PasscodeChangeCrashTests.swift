import Foundation
import TestRigs
import Testing
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

/// A passcode change cannot stop half-way: the enrolment index's authValue
/// comes from the passcode class key, so the change is the TPM's re-seals
/// (no TPM state) and one database commit. Vaults from before, whose index
/// takes the passcode itself, move to the derived value once, and that
/// move survives being cut at any point.
@Suite("Vault: passcode change and the enrolment index")
struct PasscodeChangeCrashTests {
    /// A rig whose TPM forgives wrong tries (each recovery costs one).
    func rig() throws -> VaultRig {
        let rig = try VaultRig()
        try rig.tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
        try rig.vault.add(secret("p"), attributes: ItemAttributes(service: "s", account: "p", access: .devicePasscode))
        try rig.vault.add(secret("c"), attributes: ItemAttributes(service: "s", account: "c", access: .biometryCurrentSet))
        return rig
    }

    /// Turns the rig's vault into one made before the derived authValue:
    /// the index takes the passcode itself, and `index_auth` is absent.
    func makeLegacy(_ rig: VaultRig) throws -> UInt32 {
        let index = try #require(try rig.vault.enrollmentIndex())
        let (derived, _) = try rig.vault.indexAuth(rightPasscode)
        try rig.tpm.changeEnrollmentIndexPasscode(index, from: derived, to: rightPasscode)
        try rig.vault.setMeta("index_auth", nil)
        return index
    }

    func failedTries(_ rig: VaultRig) throws -> UInt32 { try rig.tpm.dictionaryAttackState().failedTries }

    @Test("the index takes the value derived from the passcode class key, not the passcode; a change leaves it alone")
    func derivedAuth() throws {
        let rig = try rig()
        let vault = rig.vault
        let index = try #require(try vault.enrollmentIndex())
        let state = try vault.currentDomainState()!
        #expect(throws: TPMError.wrongPasscode) { try rig.tpm.writeEnrollmentState(index, state: state, passcode: rightPasscode) }
        let (before, _) = try vault.indexAuth(rightPasscode)
        try rig.tpm.writeEnrollmentState(index, state: state, passcode: before)

        let newPasscode = PasscodeAuth(passcodeString: "brand new")
        try vault.changePasscode(from: rightPasscode, to: newPasscode)
        let (after, _) = try vault.indexAuth(newPasscode)
        #expect(after.value == before.value)
        // The new passcode does everything: opens, and changes the enrolled set.
        #expect(string(try vault.secret(service: "s", account: "p", proof: VaultProof(passcode: newPasscode))) == "p")
        try vault.enrollmentChanged(to: randomState(), passcode: newPasscode)
        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "c", proof: finger) }
        // The old one nothing.
        #expect(throws: VaultError.tpm(.wrongPasscode)) { try vault.enrollmentChanged(to: randomState(), passcode: rightPasscode) }
    }

    @Test("a vault from before moves to the derived value at its first enrolment change")
    func legacyMovesOnEnrollment() throws {
        let rig = try rig()
        let index = try makeLegacy(rig)
        let tries = try failedTries(rig)
        try rig.vault.enrollmentChanged(to: randomState(), passcode: rightPasscode)
        #expect(try rig.vault.meta("index_auth") == Vault.indexAuthScheme)
        #expect(throws: TPMError.wrongPasscode) {
            try rig.tpm.writeEnrollmentState(index, state: randomState(), passcode: rightPasscode)
        }
        #expect(try failedTries(rig) == tries + 1)  // that last refusal, nothing before
        #expect(throws: VaultError.itemInvalidated) { try rig.vault.secret(service: "s", account: "c", proof: finger) }
    }

    @Test("the move cut after the TPM took the derived value, before it was recorded: the next enrolment change finishes it")
    func legacyMoveInterrupted() throws {
        let rig = try rig()
        let index = try makeLegacy(rig)
        // What the move does on the TPM, without its database write.
        let (derived, _) = try rig.vault.indexAuth(rightPasscode)  // moves and records...
        try rig.vault.setMeta("index_auth", nil)                  // ...then the record is lost
        #expect(throws: TPMError.wrongPasscode) {
            try rig.tpm.writeEnrollmentState(index, state: randomState(), passcode: rightPasscode)
        }
        try rig.vault.enrollmentChanged(to: randomState(), passcode: rightPasscode)
        #expect(try rig.vault.meta("index_auth") == Vault.indexAuthScheme)
        try rig.tpm.writeEnrollmentState(index, state: try rig.vault.currentDomainState()!, passcode: derived)
        #expect(string(try rig.vault.secret(service: "s", account: "p", proof: passcode)) == "p")
    }

    @Test("a vault from before whose last change of the old kind was cut after the TPM took the new passcode: rerunning it finishes it")
    func legacyOldChangeInterrupted() throws {
        let rig = try rig()
        let index = try makeLegacy(rig)
        let newPasscode = PasscodeAuth(passcode: SecureBytes.random(count: 16))
        // The old kind of change, cut after its NV_ChangeAuth: the index
        // takes the new passcode, the database still the old one.
        try rig.tpm.changeEnrollmentIndexPasscode(index, from: rightPasscode, to: newPasscode)
        try rig.vault.changePasscode(from: rightPasscode, to: newPasscode)
        #expect(try rig.vault.meta("index_auth") == Vault.indexAuthScheme)
        try rig.vault.enrollmentChanged(to: randomState(), passcode: newPasscode)
        #expect(string(try rig.vault.secret(service: "s", account: "p", proof: VaultProof(passcode: newPasscode))) == "p")
        #expect(throws: VaultError.tpm(.wrongPasscode)) {
            try rig.vault.secret(service: "s", account: "p", proof: passcode)
        }
    }
}

import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs

@Suite("Passcode branch, dictionary-attack protection, passcode change", .offPool)
struct PasscodeTests {
    @Test("a wrong passcode is reported as such and the TPM's DA counter rises")
    func wrongPasscodeCounts() throws {
        try withSwtpm { _, tpm in
            try tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
            let blob = try tpm.seal(randomKey(), policy: .passcodeOnly, passcode: rightPasscode)
            let before = try tpm.dictionaryAttackState()
            #expect(throws: TPMError.wrongPasscode) { try tpm.unseal(blob, via: .passcode(wrongPasscode)) }
            let after = try tpm.dictionaryAttackState()
            #expect(after.failedTries == before.failedTries + 1)
            #expect(after.maxTries == 10)
            #expect(after.lockoutInterval == 600)
        }
    }

    @Test("repeated wrong passcodes put the TPM in lockout, with the recovery time; resetting it restores access")
    func lockoutAndReset() throws {
        try withSwtpm { _, tpm in
            try tpm.setDictionaryAttackParameters(maxTries: 3, recoveryTime: 900, lockoutRecovery: 0)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .passcodeOnly, passcode: rightPasscode)
            for _ in 0..<3 {
                #expect(throws: TPMError.wrongPasscode) { try tpm.unseal(blob, via: .passcode(wrongPasscode)) }
            }
            #expect(try tpm.dictionaryAttackState().isLockedOut)
            // In lockout even the right passcode is refused, and the error says when to retry.
            #expect(throws: TPMError.lockout(retryAfterSeconds: 900)) {
                try tpm.unseal(blob, via: .passcode(rightPasscode))
            }
            try tpm.resetDictionaryAttackLockout()
            #expect(try tpm.dictionaryAttackState().failedTries == 0)
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)) == key)
        }
    }

    @Test("re-sealing for a new passcode: the new one opens, the old one no longer does, the biometric condition is kept")
    func passcodeChange() throws {
        try withSwtpm { _, tpm in
            try tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            let newPasscode = PasscodeAuth(passcodeString: "a new passcode")

            #expect(throws: TPMError.wrongPasscode) {
                try tpm.resealForNewPasscode(blob, from: wrongPasscode, to: newPasscode)
            }
            let resealed = try tpm.resealForNewPasscode(blob, from: rightPasscode, to: newPasscode)
            #expect(resealed.policy == blob.policy)
            #expect(try tpm.unseal(resealed, via: .passcode(newPasscode)) == key)
            #expect(throws: TPMError.wrongPasscode) { try tpm.unseal(resealed, via: .passcode(rightPasscode)) }
            #expect(try tpm.unseal(resealed, via: .biometric) == key)

            // The enrolment index follows the passcode too.
            try tpm.changeEnrollmentIndexPasscode(enrolled.index, from: rightPasscode, to: newPasscode)
            let next = randomState()
            #expect(throws: TPMError.wrongPasscode) {
                try tpm.writeEnrollmentState(enrolled.index, state: next, passcode: rightPasscode)
            }
            try tpm.writeEnrollmentState(enrolled.index, state: next, passcode: newPasscode)
            #expect(try tpm.readEnrollmentState(enrolled.index) == next)
        }
    }

    @Test("changing the index's passcode needs the current passcode")
    func indexChangeNeedsPasscode() throws {
        try withSwtpm { _, tpm in
            try tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
            let enrolled = try Enrolled(tpm)
            #expect(throws: TPMError.wrongPasscode) {
                try tpm.changeEnrollmentIndexPasscode(enrolled.index, from: wrongPasscode, to: wrongPasscode)
            }
            // Still the old passcode.
            try tpm.writeEnrollmentState(enrolled.index, state: randomState(), passcode: rightPasscode)
        }
    }
}

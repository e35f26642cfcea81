import Testing
import TestScopes
import TouchstoneFingerprint
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs

@Suite("The enrolment-state NV index and the biometric branch", .offPool)
struct EnrollmentStateTests {
    @Test("the index holds what was written; reading changes nothing")
    func readWrite() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            #expect(try tpm.enrollmentIndexExists(enrolled.index))
            #expect(try tpm.readEnrollmentState(enrolled.index) == enrolled.state)
            #expect(try tpm.readEnrollmentState(enrolled.index) == enrolled.state)
            #expect(throws: TPMError.nvIndexInUse(handle: enrolled.index)) {
                try tpm.defineEnrollmentIndex(enrolled.index, passcode: rightPasscode, initialState: randomState())
            }
        }
    }

    @Test("after an enrolment change the biometric branch fails as 'enrolment changed'; the passcode branch still opens")
    func stateChanged() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let both = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            let bioOnly = try tpm.seal(key, policy: .biometricOnly(enrolled.condition))
            try tpm.writeEnrollmentState(enrolled.index, state: randomState(), passcode: rightPasscode)
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(both, via: .biometric) }
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(bioOnly, via: .biometric) }
            #expect(try tpm.unseal(both, via: .passcode(rightPasscode)) == key)
        }
    }

    @Test("the same finger set restored after a change does not revive the biometric branch: every change draws a fresh epoch")
    func sameSetRestored() throws {
        let reader = ReaderIdentity(driver: "virtual_device", deviceID: "0")
        let thumb = EnrolledPrint(finger: .leftThumb, reader: reader, data: Array("thumb".utf8))
        let index = EnrolledPrint(finger: .rightIndex, reader: reader, data: Array("index".utf8))
        func state(_ prints: [EnrolledPrint]) -> [UInt8] {
            DomainState.compute(reader: reader, prints: prints, epoch: .random(count: 32)).withUnsafeBytes { Array($0) }
        }
        try withSwtpm { _, tpm in
            let original = state([thumb])
            let enrolled = try Enrolled(tpm, state: original)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            #expect(try tpm.unseal(blob, via: .biometric) == key)

            try tpm.writeEnrollmentState(enrolled.index, state: state([thumb, index]), passcode: rightPasscode)
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(blob, via: .biometric) }

            let restored = state([thumb])  // the same set as at seal time
            #expect(restored != original)
            try tpm.writeEnrollmentState(enrolled.index, state: restored, passcode: rightPasscode)
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(blob, via: .biometric) }
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)) == key)
        }
    }

    @Test("writing the enrolment state without the passcode fails and leaves it unchanged")
    func writeNeedsPasscode() throws {
        try withSwtpm { _, tpm in
            try tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOnly(enrolled.condition))
            #expect(throws: TPMError.wrongPasscode) {
                try tpm.writeEnrollmentState(enrolled.index, state: randomState(), passcode: wrongPasscode)
            }
            #expect(try tpm.readEnrollmentState(enrolled.index) == enrolled.state)
            #expect(try tpm.unseal(blob, via: .biometric) == key)
            #expect(throws: TPMError.invalidArgument("a domain state is 32 bytes, not 31")) {
                try tpm.writeEnrollmentState(enrolled.index, state: Array(repeating: 1, count: 31), passcode: rightPasscode)
            }
        }
    }

    @Test("removing the index (passcode removed) ends the biometric branch, even if an index is defined again")
    func indexRemoved() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            try tpm.undefineEnrollmentIndex(enrolled.index)
            #expect(try !tpm.enrollmentIndexExists(enrolled.index))
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(blob, via: .biometric) }
            try tpm.defineEnrollmentIndex(enrolled.index, passcode: rightPasscode, initialState: randomState())
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(blob, via: .biometric) }
        }
    }
}

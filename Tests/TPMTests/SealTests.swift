import Testing
import TouchstoneSecure
@testable import TouchstoneTPM

@Suite("Sealing and unsealing on swtpm")
struct SealTests {
    @Test("both branches open a key sealed under PolicyOR(biometric, passcode)")
    func bothBranches() throws {
        try withSwtpm { _, tpm in
            let index = try tpm.freeEnrolmentIndex()
            let state = randomState()
            try tpm.defineEnrolmentIndex(index, passcode: rightPasscode, initialState: state)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOrPasscode(.init(nvIndex: index, domainState: state)),
                                    passcode: rightPasscode)
            #expect(try tpm.unseal(blob, via: .biometric) == key)
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)) == key)
        }
    }
}

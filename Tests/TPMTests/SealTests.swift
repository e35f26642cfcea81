import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs

@Suite("Sealing and unsealing on swtpm", .offPool)
struct SealTests {
    @Test("both branches open a key sealed under PolicyOR(biometric, passcode)")
    func bothBranches() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            #expect(try tpm.unseal(blob, via: .biometric) == key)
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)) == key)
            #expect(throws: TPMError.branchNotAvailable("it is not a device-bound key")) {
                try tpm.unseal(blob, via: .device)
            }
        }
    }

    @Test("biometric-only: opens through the biometric branch, has no passcode branch")
    func biometricOnly() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOnly(enrolled.condition))
            #expect(try tpm.unseal(blob, via: .biometric) == key)
            #expect(throws: TPMError.branchNotAvailable("it has no passcode branch")) {
                try tpm.unseal(blob, via: .passcode(rightPasscode))
            }
        }
    }

    @Test("passcode-only: opens with the right passcode, has no biometric branch")
    func passcodeOnly() throws {
        try withSwtpm { _, tpm in
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .passcodeOnly, passcode: rightPasscode)
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)) == key)
            #expect(throws: TPMError.branchNotAvailable("it has no biometric branch")) {
                try tpm.unseal(blob, via: .biometric)
            }
        }
    }

    @Test("device-bound: opens on this TPM with no authentication")
    func deviceBound() throws {
        try withSwtpm { _, tpm in
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .deviceBound)
            #expect(try tpm.unseal(blob, via: .device) == key)
        }
    }

    @Test("a blob survives serialization and opens after it")
    func serializedRoundTrip() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            let parsed = try SealedBlob(serialized: blob.serialized())
            #expect(parsed == blob)
            #expect(try tpm.unseal(parsed, via: .biometric) == key)
        }
    }

    @Test("the passcode is required to seal a key with the passcode branch")
    func passcodeRequiredAtSeal() throws {
        try withSwtpm { _, tpm in
            #expect(throws: TPMError.invalidArgument("the passcode branch needs the passcode at seal time")) {
                try tpm.seal(randomKey(), policy: .passcodeOnly)
            }
            #expect(throws: TPMError.self) { try tpm.seal(SecureBytes(count: 0), policy: .deviceBound) }
            #expect(throws: TPMError.self) { try tpm.seal(SecureBytes(count: 129), policy: .deviceBound) }
        }
    }

    @Test("PCR 7 bound: opens while the boot state holds; after PCR 7 changes the biometric branch reports it and the passcode branch still opens")
    func pcr7Binding() throws {
        try withSwtpm { rig, tpm in
            let enrolled = try Enrolled(tpm)
            var condition = enrolled.condition
            condition.bindPCR7 = true
            let key = randomKey()
            let both = try tpm.seal(key, policy: .biometricOrPasscode(condition), passcode: rightPasscode)
            let bioOnly = try tpm.seal(key, policy: .biometricOnly(condition))
            #expect(try tpm.unseal(both, via: .biometric) == key)
            #expect(try tpm.unseal(bioOnly, via: .biometric) == key)

            let (status, output) = try tpm2Tool(rig, "tpm2_pcrextend",
                                                ["7:sha256=" + String(repeating: "ab", count: 32)], in: rig.directory)
            try #require(status == 0, "tpm2_pcrextend failed: \(output)")

            #expect(throws: TPMError.bootStateChanged) { try tpm.unseal(both, via: .biometric) }
            #expect(throws: TPMError.bootStateChanged) { try tpm.unseal(bioOnly, via: .biometric) }
            #expect(try tpm.unseal(both, via: .passcode(rightPasscode)) == key)
        }
    }
}

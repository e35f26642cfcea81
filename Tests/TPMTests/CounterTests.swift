import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs

/// TPM NV counters, and keys bound to them (scheme 2): what makes an
/// invalidation and a passcode change final, tried with the owner's
/// (empty) authorization, as an attacker on most PCs has it.
@Suite("NV counters and keys bound to them (swtpm)", .offPool)
struct CounterTests {
    static let counterAuth = PasscodeAuth(passcodeString: "counter auth")

    @Test("a counter starts with a value, counts up by one per increment, and needs its authValue to")
    func countsUp() throws {
        try withSwtpm { _, tpm in
            let handle = try tpm.freeCounterIndex()
            let (first, name) = try tpm.defineCounter(handle, auth: Self.counterAuth)
            #expect(first >= 1)
            #expect(try tpm.readCounter(handle) == first)
            #expect(try tpm.incrementCounter(handle, auth: Self.counterAuth, expectedName: name) == first + 1)
            #expect(throws: TPMError.wrongPasscode) { try tpm.incrementCounter(handle, auth: wrongPasscode) }
            #expect(try tpm.readCounter(handle) == first + 1)
            // The name is the one recorded at its definition, increments or not.
            #expect(try tpm.nvName(handle) == name)
        }
    }

    @Test("undefined and defined again by someone else, a counter never shows an old value")
    func neverGoesBack() throws {
        try withSwtpm { _, tpm in
            let handle = try tpm.freeCounterIndex()
            var (value, name) = try tpm.defineCounter(handle, auth: Self.counterAuth)
            for _ in 0..<3 { value = try tpm.incrementCounter(handle, auth: Self.counterAuth) }
            try tpm.undefineNVIndex(handle)
            // The attacker's counter: same handle, same attributes, their own authValue.
            let (again, sameName) = try tpm.defineCounter(handle, auth: wrongPasscode)
            #expect(again > value)
            #expect(sameName == name)  // the name cannot tell: the value does
        }
    }

    @Test("a key bound to counter <= n opens while it holds and never after the increment, whatever is done to the counter")
    func biometricBranchOnTheCounter() throws {
        try withSwtpm { _, tpm in
            let handle = try tpm.freeCounterIndex()
            let (n, name) = try tpm.defineCounter(handle, auth: Self.counterAuth)
            let key = randomKey(), next = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOnly(BiometricCondition(counter: handle, atMost: n)),
                                    expectedNames: [handle: name])
            #expect(try tpm.unseal(blob, via: .biometric) == key)
            // The next generation's key, sealed before the increment, opens before and after it.
            let nextBlob = try tpm.seal(next, policy: .biometricOnly(BiometricCondition(counter: handle, atMost: n + 1)))
            #expect(try tpm.unseal(nextBlob, via: .biometric) == next)
            _ = try tpm.incrementCounter(handle, auth: Self.counterAuth)
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(blob, via: .biometric) }
            #expect(try tpm.unseal(nextBlob, via: .biometric) == next)
            // The rollback: undefine the counter, define it again (same public
            // area, so the same name) with the attacker's authValue: it starts
            // past every value it had, and the old key stays closed.
            try tpm.undefineNVIndex(handle)
            _ = try tpm.defineCounter(handle, auth: wrongPasscode)
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(blob, via: .biometric) }
        }
    }

    @Test("the first release's index, rewound the same way, opens the old key again: the attack the counter ends")
    func theFirstReleasesIndexRewinds() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            let old = enrolled.state
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOnly(enrolled.condition))
            try tpm.writeEnrollmentState(enrolled.index, state: randomState(), passcode: rightPasscode)
            #expect(throws: TPMError.enrollmentChanged) { try tpm.unseal(blob, via: .biometric) }
            try tpm.undefineEnrollmentIndex(enrolled.index)
            try tpm.defineEnrollmentIndex(enrolled.index, passcode: wrongPasscode, initialState: old)
            #expect(try tpm.unseal(blob, via: .biometric) == key)
        }
    }

    @Test("a passcode key bound to the passcode counter: the right passcode opens it until the counter moves past it")
    func passcodeBranchOnTheCounter() throws {
        try withSwtpm { _, tpm in
            let handle = try tpm.freeCounterIndex()
            let (m, _) = try tpm.defineCounter(handle, auth: Self.counterAuth)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .passcode(counter: CounterCondition(counter: handle, atMost: m)),
                                    passcode: rightPasscode)
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)) == key)
            #expect(throws: TPMError.wrongPasscode) { try tpm.unseal(blob, via: .passcode(wrongPasscode)) }
            _ = try tpm.incrementCounter(handle, auth: Self.counterAuth)
            #expect(throws: TPMError.passcodeChanged) { try tpm.unseal(blob, via: .passcode(rightPasscode)) }
        }
    }

    @Test("sealing to an index whose name is not the one recorded is refused: nothing is sealed to a replaced index")
    func replacedIndexIsRefused() throws {
        try withSwtpm { _, tpm in
            let handle = try tpm.freeCounterIndex()
            let (n, name) = try tpm.defineCounter(handle, auth: Self.counterAuth)
            let condition = BiometricCondition(counter: handle, atMost: n)
            _ = try tpm.seal(randomKey(), policy: .biometricOnly(condition), expectedNames: [handle: name])
            var other = name
            other[other.count - 1] ^= 1
            #expect(throws: TPMError.nvIndexReplaced(handle: handle)) {
                try tpm.seal(randomKey(), policy: .biometricOnly(condition), expectedNames: [handle: other])
            }
            #expect(throws: TPMError.nvIndexReplaced(handle: handle)) {
                try tpm.incrementCounter(handle, auth: Self.counterAuth, expectedName: other)
            }
        }
    }

    @Test("scheme 2 blobs survive serialization; first-release blobs still parse as they were")
    func blobFormats() throws {
        try withSwtpm { _, tpm in
            let bio = try tpm.freeCounterIndex()
            let (n, _) = try tpm.defineCounter(bio, auth: Self.counterAuth)
            let pass = try tpm.freeCounterIndex()
            let (m, _) = try tpm.defineCounter(pass, auth: Self.counterAuth)
            let key = randomKey()
            let policy = SealPolicy(biometric: BiometricCondition(counter: bio, atMost: n), passcode: true,
                                    passcodeCounter: CounterCondition(counter: pass, atMost: m))
            let blob = try tpm.seal(key, policy: policy, passcode: rightPasscode)
            let bytes = blob.serialized()
            #expect(bytes[6] == 2)  // the version byte after "TSBLOB"
            let parsed = try SealedBlob(serialized: bytes)
            #expect(parsed == blob)
            #expect(try tpm.unseal(parsed, via: .biometric) == key)
            #expect(try tpm.unseal(parsed, via: .passcode(rightPasscode)) == key)
            let enrolled = try Enrolled(tpm)
            let first = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            #expect(first.serialized()[6] == 1)
            #expect(try SealedBlob(serialized: first.serialized()) == first)
        }
    }
}

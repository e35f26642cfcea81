import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs
import CTSS2

/// The daemon's gate (TPM+Gate.swift), attacked with what a program running
/// as the user has: the blobs and the TPM, not the gate's authValue.
@Suite("The daemon's gate: PolicySecret on a per-user object, a peppered passcode", .offPool)
struct GateTests {
    /// A TPM instance with a new gate installed, beside the rig's plain one.
    private static func gated(_ rig: SwtpmRig, _ tpm: TPM) throws -> (TPM, TPMGate) {
        let gate = try tpm.createGate()
        return (try TPM(tcti: rig.swtpm.tcti, gate: gate), gate)
    }

    @Test("every kind of key sealed through the gate opens with it, and without it opens nothing: not as recorded, not with the gate stripped from the blob, not with another gate")
    func withoutTheGateNothingOpens() throws {
        try withSwtpm { rig, tpm in
            let (daemon, _) = try Self.gated(rig, tpm)
            let (other, _) = try Self.gated(rig, tpm)
            let counter = try tpm.freeCounterIndex()
            let defined = try tpm.defineCounter(counter, auth: rightPasscode)
            let generation = defined.value
            let key = randomKey()
            let cases: [(String, SealPolicy, PasscodeAuth?, UnsealBranch)] = [
                ("device-bound", .deviceBound, nil, .device),
                ("biometric", .biometricOnly(BiometricCondition(counter: counter, atMost: generation)), nil, .biometric),
                ("passcode", .passcode(counter: CounterCondition(counter: counter, atMost: generation)), rightPasscode,
                 .passcode(rightPasscode)),
                ("biometric or passcode", .biometricOrPasscode(BiometricCondition(counter: counter, atMost: generation)),
                 rightPasscode, .biometric),
            ]
            for (what, policy, passcode, branch) in cases {
                let blob = try daemon.seal(key, policy: policy, passcode: passcode)
                #expect(blob.policy.gateName != nil, "\(what)")
                #expect(try daemon.unseal(blob, via: branch) == key, "\(what): the daemon opens it")
                let stored = try SealedBlob(serialized: blob.serialized())
                #expect(stored.policy.gateName == blob.policy.gateName, "\(what): the gate survives serialization")

                // Without the gate: refused before any TPM command.
                #expect(throws: TPMError.self, "\(what): a TPM without the gate") { try tpm.unseal(stored, via: branch) }
                #expect(throws: TPMError.self, "\(what): another gate") { try other.unseal(stored, via: branch) }
                // The gate stripped from the record (checksum recomputed, as anyone can):
                // the object's authPolicy, inside its public area, is the gated digest,
                // which no policy session reaches without PolicySecret on the gate.
                var inPublic = TPM2B_PUBLIC()
                try tpm.unmarshal(blob.publicArea, into: &inPublic, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
                let objectPolicy = tupleBytes(inPublic.publicArea.authPolicy.buffer, size: inPublic.publicArea.authPolicy.size)
                #expect(objectPolicy == TPM.authPolicy(of: blob).bytes, "\(what)")
                var ungated = blob
                ungated.policy.gateName = nil
                #expect(objectPolicy != TPM.authPolicy(of: ungated).bytes, "\(what): the gate is in the object's policy")
                var stripped = stored
                stripped.policy.gateName = nil
                let rewritten = try SealedBlob(serialized: stripped.serialized())
                #expect(throws: TPMError.self, "\(what): stripped") { try tpm.unseal(rewritten, via: branch) }
                #expect(throws: TPMError.self, "\(what): stripped, daemon") { try daemon.unseal(rewritten, via: branch) }
            }
        }
    }

    @Test("the passcode's authValue is peppered: with the gate's PolicySecret satisfied, the right passcode without the pepper is a wrong passcode")
    func pepperedPasscode() throws {
        try withSwtpm { rig, tpm in
            let (daemon, gate) = try Self.gated(rig, tpm)
            let key = randomKey()
            let blob = try daemon.seal(key, policy: .passcodeOnly, passcode: rightPasscode)
            #expect(try daemon.unseal(blob, via: .passcode(rightPasscode)) == key)
            // Another TPM instance holding the same gate object but a
            // different pepper: PolicySecret holds, the authValue does not.
            let wrongPepper = TPMGate(publicArea: gate.publicArea, privateArea: gate.privateArea, name: gate.name,
                                      authValue: gate.authValue, pepper: SecureBytes.random(count: 32))
            let unpeppered = try TPM(tcti: rig.swtpm.tcti, gate: wrongPepper)
            #expect(throws: TPMError.wrongPasscode) { try unpeppered.unseal(blob, via: .passcode(rightPasscode)) }
            #expect(try daemon.unseal(blob, via: .passcode(rightPasscode)) == key, "the right one still opens")
        }
    }

    @Test("a gate whose authValue is not the object's satisfies no PolicySecret")
    func wrongGateAuth() throws {
        try withSwtpm { rig, tpm in
            let (daemon, gate) = try Self.gated(rig, tpm)
            let key = randomKey()
            let blob = try daemon.seal(key, policy: .deviceBound)
            let guessed = TPMGate(publicArea: gate.publicArea, privateArea: gate.privateArea, name: gate.name,
                                  authValue: SecureBytes.random(count: 32), pepper: gate.pepper)
            #expect(throws: TPMError.self) { try TPM(tcti: rig.swtpm.tcti, gate: guessed).unseal(blob, via: .device) }
            #expect(try daemon.unseal(blob, via: .device) == key)
        }
    }
}

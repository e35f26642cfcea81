import TouchstoneSecure
import TouchstoneTPM

/// What the benchmark unseals: a random 32-byte key sealed on the private
/// swtpm under PolicyOR(biometric, passcode), once without and once with
/// PCR 7 in the biometric branch, bound to a freshly defined enrolment index.
struct BenchFixture {
    /// The sealed key: compared with every unseal's result, never printed.
    let key: SecureBytes
    /// A random passcode's authValue (a throwaway, made for this run).
    let passcode: PasscodeAuth
    let nvIndex: UInt32
    let domainState: [UInt8]
    /// The SRK's name, pinned by every later `TPM` instance and given to
    /// tpm2-tools (`-n`) so their salted sessions check the same key.
    let srkName: [UInt8]
    /// biometricOrPasscode, biometric branch = PolicyNV.
    let sealed: SealedBlob
    /// biometricOrPasscode, biometric branch = PolicyPCR(7) + PolicyNV.
    let sealedWithPCR7: SealedBlob

    /// Creates (or finds) the SRK, defines an enrolment index holding a
    /// random domain state, and seals the key twice. Its `TPM` connection is
    /// closed on return.
    static func make(tcti: String) throws -> BenchFixture {
        let tpm = try TPM(tcti: tcti)
        let srkName = try tpm.storageKeyName()
        let index = try tpm.freeEnrollmentIndex()
        let passcode = PasscodeAuth(passcode: SecureBytes.random(count: 16))
        let state = SecureBytes.random(count: TPM.enrollmentStateSize).withUnsafeBytes { Array($0) }
        try tpm.defineEnrollmentIndex(index, passcode: passcode, initialState: state)
        let key = SecureBytes.random(count: 32)
        let sealed = try tpm.seal(key, policy: .biometricOrPasscode(
            BiometricCondition(nvIndex: index, domainState: state, bindPCR7: false)), passcode: passcode)
        let sealedWithPCR7 = try tpm.seal(key, policy: .biometricOrPasscode(
            BiometricCondition(nvIndex: index, domainState: state, bindPCR7: true)), passcode: passcode)
        return BenchFixture(key: key, passcode: passcode, nvIndex: index, domainState: state, srkName: srkName,
                            sealed: sealed, sealedWithPCR7: sealedWithPCR7)
    }

    /// The three measured cases. The command-count targets are issue 2's:
    /// at most 8 per biometric unseal, at most 7 per passcode unseal.
    var scenarios: [UnsealScenario] {
        [
            UnsealScenario(name: "biometric", fileStem: "bio", blob: sealed, branch: .biometric, commandTarget: 8),
            UnsealScenario(name: "biometric + PCR 7", fileStem: "pcr", blob: sealedWithPCR7, branch: .biometric,
                           commandTarget: 8),
            UnsealScenario(name: "passcode", fileStem: "pin", blob: sealed, branch: .passcode(passcode),
                           commandTarget: 7),
        ]
    }
}

/// One measured case: a sealed blob opened through one branch.
struct UnsealScenario {
    let name: String
    /// Prefix of this case's files in the tool folder.
    let fileStem: String
    let blob: SealedBlob
    let branch: UnsealBranch
    /// Most TPM commands one steady-state unseal may take.
    let commandTarget: Int

    var isBiometric: Bool {
        if case .biometric = branch { return true }
        return false
    }
}

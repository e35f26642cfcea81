import TouchstoneSecure
import TouchstoneTPM

/// What the benchmark unseals: one random 32-byte key sealed on the private
/// swtpm the ways scheme 2 seals class keys (docs/tpm.md), plus, as a
/// comparison row, the first release's blob (PolicyOR over an enrolment
/// index), all in one run.
///
/// - biometric: biometric only, the enrolment counter at most its value
///   (PolicyNV, UNSIGNED_LE), as biometry-current-set and biometry-any keys;
/// - biometric + PCR 7: the same with PolicyPCR(7) first;
/// - passcode: PolicyAuthValue, then the passcode counter at most its value
///   (`SealPolicy.passcode(counter:)`), with a salted authValue, as the
///   passcode key and biometry-any's passcode blob;
/// - first release: biometricOrPasscode with the biometric branch on an
///   enrolment-state index (PolicyNV, EQ), opened through each branch.
struct BenchFixture {
    /// The sealed key: compared with every unseal's result, never printed.
    let key: SecureBytes
    /// Scheme 2's passcode authValue: a random passcode's, salted with a
    /// random per-"vault" salt (throwaways, made for this run).
    let saltedPasscode: PasscodeAuth
    /// The first release's (unsalted) authValue of the same passcode.
    let firstReleasePasscode: PasscodeAuth
    /// The SRK's name, pinned by every later `TPM` instance and given to
    /// tpm2-tools (`-n`) so their salted sessions check the same key.
    let srkName: [UInt8]
    /// The enrolment counter and the generation the biometric blobs are
    /// sealed for (its value).
    let enrollmentCounter: UInt32
    let enrollmentGeneration: UInt64
    /// The passcode counter, its generation, and ESYS's record of it (the
    /// vault keeps one, so a passcode unseal needs no NV_ReadPublic).
    let passcodeCounter: UInt32
    let passcodeGeneration: UInt64
    let passcodeCounterRecord: [UInt8]
    /// The first release's enrolment index and the domain state it holds.
    let firstReleaseIndex: UInt32
    let domainState: [UInt8]
    let biometric: SealedBlob
    let biometricWithPCR7: SealedBlob
    let passcode: SealedBlob
    let firstRelease: SealedBlob

    /// Creates (or finds) the SRK, defines the two counters (random
    /// authValues, in `TPM.counterRange`) and the first release's index,
    /// and seals the key four times. Its `TPM` connection is closed on
    /// return.
    static func make(tcti: String) throws -> BenchFixture {
        let tpm = try TPM(tcti: tcti)
        let srkName = try tpm.storageKeyName()

        let enrollment = try tpm.freeCounterIndex()
        let (enrollmentValue, _) = try tpm.defineCounter(enrollment, auth: PasscodeAuth(authValue: .random(count: PasscodeAuth.size)))
        let pin = try tpm.freeCounterIndex()
        let (pinValue, _) = try tpm.defineCounter(pin, auth: PasscodeAuth(authValue: .random(count: PasscodeAuth.size)))
        let record = try tpm.nvIndexRecord(pin)

        let typed = PasscodeAuth(passcode: SecureBytes.random(count: 16))
        var salt = SecureBytes.random(count: PasscodeAuth.saltSize).withUnsafeBytes { Array($0) }
        defer { secureWipe(&salt) }
        let salted = typed.salted(with: salt)

        let key = SecureBytes.random(count: 32)
        let condition = BiometricCondition(counter: enrollment, atMost: enrollmentValue)
        var withPCR7 = condition
        withPCR7.bindPCR7 = true
        let biometric = try tpm.seal(key, policy: .biometricOnly(condition))
        let biometricWithPCR7 = try tpm.seal(key, policy: .biometricOnly(withPCR7))
        let passcode = try tpm.seal(key, policy: .passcode(counter: CounterCondition(counter: pin, atMost: pinValue)),
                                    passcode: salted)

        let index = try tpm.freeEnrollmentIndex()
        let state = SecureBytes.random(count: TPM.enrollmentStateSize).withUnsafeBytes { Array($0) }
        try tpm.defineEnrollmentIndex(index, passcode: typed, initialState: state)
        let firstRelease = try tpm.seal(key, policy: .biometricOrPasscode(
            BiometricCondition(nvIndex: index, domainState: state, bindPCR7: false)), passcode: typed)

        return BenchFixture(key: key, saltedPasscode: salted, firstReleasePasscode: typed, srkName: srkName,
                            enrollmentCounter: enrollment, enrollmentGeneration: enrollmentValue,
                            passcodeCounter: pin, passcodeGeneration: pinValue, passcodeCounterRecord: record,
                            firstReleaseIndex: index, domainState: state,
                            biometric: biometric, biometricWithPCR7: biometricWithPCR7, passcode: passcode,
                            firstRelease: firstRelease)
    }

    /// The measured cases. Issue 12's targets: at most one TPM command more
    /// per unlock than the first release, whose figures (this benchmark,
    /// docs/performance.md) were 7 / 8 / 6 per steady-state unseal and
    /// 9 / 10 / 7 for the first unseal on a new connection. The first
    /// release's rows are measured again here, for comparison, against
    /// the same figures.
    var scenarios: [UnsealScenario] {
        [
            UnsealScenario(name: "biometric", fileStem: "bio", blob: biometric, branch: .biometric,
                           firstRelease: (steady: 7, first: 9)),
            UnsealScenario(name: "biometric + PCR 7", fileStem: "pcr", blob: biometricWithPCR7, branch: .biometric,
                           firstRelease: (steady: 8, first: 10)),
            UnsealScenario(name: "passcode", fileStem: "pin", blob: passcode, branch: .passcode(saltedPasscode),
                           firstRelease: (steady: 6, first: 7),
                           adopted: (passcodeCounter, passcodeCounterRecord)),
            UnsealScenario(name: "1st release: biometric", fileStem: "old-bio", blob: firstRelease, branch: .biometric,
                           firstRelease: (steady: 7, first: 9), isFirstReleaseBlob: true),
            UnsealScenario(name: "1st release: passcode", fileStem: "old-pin", blob: firstRelease,
                           branch: .passcode(firstReleasePasscode), firstRelease: (steady: 6, first: 7),
                           isFirstReleaseBlob: true),
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
    /// The first release's command counts for this branch (steady state,
    /// first unseal on a new connection).
    let firstRelease: (steady: Int, first: Int)
    /// An NV index the first unseal's new `TPM` instance takes from a
    /// record, as the vault does with its passcode counter.
    var adopted: (handle: UInt32, record: [UInt8])? = nil
    /// The first release's blob, measured for comparison.
    var isFirstReleaseBlob = false

    /// Most TPM commands one steady-state unseal may take: one more than
    /// the first release's (nil for the first release's own blob, a
    /// comparison row).
    var commandTarget: Int? { isFirstReleaseBlob ? nil : firstRelease.steady + 1 }
    /// The same for the first unseal on a new connection.
    var firstUnsealTarget: Int? { isFirstReleaseBlob ? nil : firstRelease.first + 1 }

    var isBiometric: Bool {
        if case .biometric = branch { return true }
        return false
    }
}

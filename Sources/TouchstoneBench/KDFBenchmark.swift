import CSodium
import TestRigs
import TouchstoneSecure
import TouchstoneTPM

/// One way of turning a passcode into the TPM authValue.
struct PasscodeKDF {
    let name: String
    /// crypto_pwhash's opslimit and memlimit (bytes); nil for the shipped
    /// BLAKE2b.
    let limits: (ops: UInt64, memory: Int)?

    /// As shipped: PasscodeAuth(passcode:) (keyed BLAKE2b-256 under a fixed
    /// domain key), then .salted(with:) (keyed BLAKE2b-256 with the vault's
    /// 32-byte salt).
    static let saltedBLAKE2b = PasscodeKDF(name: "salted BLAKE2b-256 (shipped)", limits: nil)

    /// libsodium's crypto_pwhash, Argon2id v1.3, at its named limits.
    static let argon2idLevels = [
        PasscodeKDF(name: "Argon2id13 MIN", limits: (UInt64(crypto_pwhash_argon2id_opslimit_min()),
                                                     crypto_pwhash_argon2id_memlimit_min())),
        PasscodeKDF(name: "Argon2id13 INTERACTIVE", limits: (UInt64(crypto_pwhash_argon2id_opslimit_interactive()),
                                                             crypto_pwhash_argon2id_memlimit_interactive())),
        PasscodeKDF(name: "Argon2id13 MODERATE", limits: (UInt64(crypto_pwhash_argon2id_opslimit_moderate()),
                                                          crypto_pwhash_argon2id_memlimit_moderate())),
    ]

    /// Argon2id13 with limits given on the command line (`--argon2id OPS,MIB`).
    static func argon2id(ops: Int, mebibytes: Int) -> PasscodeKDF {
        PasscodeKDF(name: "Argon2id13 ops \(ops), \(mebibytes) MiB", limits: (UInt64(ops), mebibytes << 20))
    }

    var isShipped: Bool { limits == nil }
}

/// The inputs of one run: a random passcode, a 32-byte salt for the
/// shipped derivation and a 16-byte one (crypto_pwhash_SALTBYTES) for
/// Argon2id. Throwaways, never printed.
struct KDFInputs {
    let passcode = SecureBytes.random(count: 16)
    let salt = SecureBytes.random(count: PasscodeAuth.saltSize).withUnsafeBytes { Array($0) }
    let argonSalt = SecureBytes.random(count: Int(crypto_pwhash_argon2id_saltbytes())).withUnsafeBytes { Array($0) }

    /// One derivation's 32-byte authValue.
    func derive(_ kdf: PasscodeKDF) throws -> SecureBytes {
        guard let limits = kdf.limits else {
            return PasscodeAuth(passcode: passcode).salted(with: salt).value
        }
        let out = SecureBytes(count: PasscodeAuth.size)
        let rc = out.withUnsafeMutableBytes { dst in
            passcode.withUnsafeBytes { src in
                crypto_pwhash(dst.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(dst.count),
                              src.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(src.count),
                              argonSalt, limits.ops, limits.memory, crypto_pwhash_alg_argon2id13())
            }
        }
        guard rc == 0 else { throw BenchError.setup("crypto_pwhash (\(kdf.name)) failed: out of memory?") }
        return out
    }
}

/// Runs `TouchstoneBench kdf`: rounds in which every KDF and a block of TPM
/// passcode unseals take turns (the order rotating each round), so all of
/// them see the same machine. Each KDF's output must equal its first one
/// (they are deterministic), and every unsealed key the sealed one.
func runKDFBenchmark(_ options: KDFOptions, on rig: SwtpmRig) throws -> KDFReport {
    guard sodium_init() >= 0 else { throw BenchError.setup("sodium_init failed") }
    let loadAverage = MachineInfo.loadAverage()
    let inputs = KDFInputs()
    let kdfs = [PasscodeKDF.saltedBLAKE2b] + PasscodeKDF.argon2idLevels
        + options.extraArgon2id.map { PasscodeKDF.argon2id(ops: $0.ops, mebibytes: $0.mebibytes) }
    let reference = try kdfs.map { try inputs.derive($0) }

    // The TPM side: scheme 2's passcode blob (PolicyAuthValue, passcode
    // counter <= m, salted authValue), on a connection that has the counter
    // from its record, as the vault's has.
    let fixture = try BenchFixture.make(tcti: rig.swtpm.tcti)
    let tpm = try TPM(tcti: rig.swtpm.tcti, expectedSRKName: fixture.srkName)
    tpm.adoptNVIndex(fixture.passcodeCounter, record: fixture.passcodeCounterRecord)
    let unseal = { () throws -> SecureBytes in try tpm.unseal(fixture.passcode, via: .passcode(fixture.saltedPasscode)) }

    enum Turn { case kdf(Int), tpm }
    let turns = kdfs.indices.map(Turn.kdf) + [.tpm]
    var samples = kdfs.map { _ in [UInt64]() }
    var added = kdfs.map { _ in 0.0 }
    var tpmSamples: [UInt64] = []
    var tpmCommands = 0

    for round in 0..<(options.warmup + options.rounds) {
        let timedRound = round >= options.warmup
        for i in turns.indices {
            try Interruption.check()
            switch turns[(i + round) % turns.count] {
            case .kdf(let k):
                let kdf = kdfs[k]
                let count = kdf.isShipped ? options.batch : 1
                PeakMemory.resetPeak()
                let before = PeakMemory.currentMiB() ?? PeakMemory.peakMiB()
                for _ in 0..<count {
                    let run = try timed { try inputs.derive(kdf) }
                    guard run.result == reference[k] else { throw BenchError.wrongResult("\(kdf.name) gave another authValue") }
                    if timedRound { samples[k].append(run.nanoseconds) }
                }
                if timedRound { added[k] = max(added[k], PeakMemory.peakMiB() - before) }
            case .tpm:
                let commandsBefore = tpm.commandCount
                for _ in 0..<options.tpmBatch {
                    let run = try timed(unseal)
                    guard run.result == fixture.key else { throw BenchError.wrongKey("TPM.unseal via passcode") }
                    if timedRound { tpmSamples.append(run.nanoseconds) }
                }
                if timedRound { tpmCommands += tpm.commandCount - commandsBefore }
            }
        }
    }

    let tpmStats = KDFReport.Stats(nanoseconds: tpmSamples)
    let rows = kdfs.indices.map { k in
        KDFReport.Row(name: kdfs[k].name, opslimit: kdfs[k].limits.map { Int($0.ops) }, memlimitBytes: kdfs[k].limits?.memory,
                      stats: KDFReport.Stats(nanoseconds: samples[k]), addedPeakMiB: added[k])
    }
    return KDFReport(machine: MachineInfo.current(tpm2ToolsVersion: nil, loadAverage: loadAverage),
                     sodiumVersion: String(cString: sodium_version_string()),
                     rounds: options.rounds, warmup: options.warmup, batch: options.batch, tpmBatch: options.tpmBatch,
                     kdfs: rows, tpmUnseal: tpmStats,
                     tpmCommandsPerUnseal: Double(tpmCommands) / Double(max(1, tpmSamples.count)))
}

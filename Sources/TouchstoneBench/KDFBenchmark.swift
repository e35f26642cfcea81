import CSodium
import TestRigs
import TouchstoneSecure
import TouchstoneTPM

/// One way of turning a passcode into the TPM authValue.
enum PasscodeKDF: CaseIterable {
    /// As shipped: PasscodeAuth(passcode:) (keyed BLAKE2b-256 under a fixed
    /// domain key), then .salted(with:) (keyed BLAKE2b-256 with the vault's
    /// 32-byte salt).
    case saltedBLAKE2b
    /// libsodium's crypto_pwhash, Argon2id v1.3, at its named limits.
    case argon2idMin
    case argon2idInteractive
    case argon2idModerate

    var name: String {
        switch self {
        case .saltedBLAKE2b: return "salted BLAKE2b-256 (shipped)"
        case .argon2idMin: return "Argon2id13 MIN"
        case .argon2idInteractive: return "Argon2id13 INTERACTIVE"
        case .argon2idModerate: return "Argon2id13 MODERATE"
        }
    }

    /// crypto_pwhash's opslimit and memlimit (bytes); nil for BLAKE2b.
    var limits: (ops: UInt64, memory: Int)? {
        switch self {
        case .saltedBLAKE2b: return nil
        case .argon2idMin:
            return (UInt64(crypto_pwhash_argon2id_opslimit_min()), crypto_pwhash_argon2id_memlimit_min())
        case .argon2idInteractive:
            return (UInt64(crypto_pwhash_argon2id_opslimit_interactive()), crypto_pwhash_argon2id_memlimit_interactive())
        case .argon2idModerate:
            return (UInt64(crypto_pwhash_argon2id_opslimit_moderate()), crypto_pwhash_argon2id_memlimit_moderate())
        }
    }
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
    var reference: [PasscodeKDF: SecureBytes] = [:]
    for kdf in PasscodeKDF.allCases { reference[kdf] = try inputs.derive(kdf) }

    // The TPM side: scheme 2's passcode blob (PolicyAuthValue, passcode
    // counter <= m, salted authValue), on a connection that has the counter
    // from its record, as the vault's has.
    let fixture = try BenchFixture.make(tcti: rig.swtpm.tcti)
    let tpm = try TPM(tcti: rig.swtpm.tcti, expectedSRKName: fixture.srkName)
    tpm.adoptNVIndex(fixture.passcodeCounter, record: fixture.passcodeCounterRecord)
    let unseal = { () throws -> SecureBytes in try tpm.unseal(fixture.passcode, via: .passcode(fixture.saltedPasscode)) }

    enum Turn { case kdf(PasscodeKDF), tpm }
    let turns = PasscodeKDF.allCases.map(Turn.kdf) + [.tpm]
    var samples: [PasscodeKDF: [UInt64]] = [:]
    var added: [PasscodeKDF: Double] = [:]
    var tpmSamples: [UInt64] = []
    var tpmCommands = 0

    for round in 0..<(options.warmup + options.rounds) {
        let timedRound = round >= options.warmup
        for i in turns.indices {
            try Interruption.check()
            switch turns[(i + round) % turns.count] {
            case .kdf(let kdf):
                let count = kdf == .saltedBLAKE2b ? options.batch : 1
                PeakMemory.resetPeak()
                let before = PeakMemory.currentMiB() ?? PeakMemory.peakMiB()
                for _ in 0..<count {
                    let run = try timed { try inputs.derive(kdf) }
                    guard run.result == reference[kdf]! else { throw BenchError.wrongResult("\(kdf.name) gave another authValue") }
                    if timedRound { samples[kdf, default: []].append(run.nanoseconds) }
                }
                if timedRound { added[kdf] = max(added[kdf] ?? 0, PeakMemory.peakMiB() - before) }
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
    let rows = PasscodeKDF.allCases.map { kdf in
        KDFReport.Row(name: kdf.name, opslimit: kdf.limits.map { Int($0.ops) }, memlimitBytes: kdf.limits?.memory,
                      stats: KDFReport.Stats(nanoseconds: samples[kdf] ?? []), addedPeakMiB: added[kdf] ?? 0)
    }
    return KDFReport(machine: MachineInfo.current(tpm2ToolsVersion: nil, loadAverage: loadAverage),
                     sodiumVersion: String(cString: sodium_version_string()),
                     rounds: options.rounds, warmup: options.warmup, batch: options.batch, tpmBatch: options.tpmBatch,
                     kdfs: rows, tpmUnseal: tpmStats,
                     tpmCommandsPerUnseal: Double(tpmCommands) / Double(max(1, tpmSamples.count)))
}

import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// The same unseal as `TPM.unseal`, done as a shell script would do it:
/// one tpm2-tools process per step, session state passed through context
/// files, and the same protections as the module (the SRK pinned by name,
/// salted sessions that encrypt the key on its way out).
///
/// swtpm has no resource manager, so the script must flush what the tools
/// leave behind: its sessions (saved back to their files after each use)
/// and the transient objects (tpm2_load's object and the copy tpm2_unseal
/// loads from item.ctx). On /dev/tpmrm0 the kernel would flush them; the
/// flushes are part of the measured sequence, as they are part of the
/// script.
struct ToolSequence {
    let scenario: UnsealScenario
    /// Where its files are.
    let directory: String
    let steps: [ToolStep]

    /// The steps as a reader would type them in `directory` (secrets redacted).
    var shownSteps: [String] {
        steps.map { $0.shown.replacingOccurrences(of: directory + "/", with: "") }
    }

    /// Writes the files the tools read, in `directory` (mode 0600): the
    /// marshalled TPM2B_PUBLIC / TPM2B_PRIVATE (tpm2-tools' default "tss"
    /// format), PolicyNV's operandB (a counter's generation as 8 bytes
    /// big-endian, or the first release's domain state), for a PolicyOR
    /// blob the two branch digests, and the SRK's name. No secret goes to
    /// disk; the passcode's authValue is passed as `hex:` on the command
    /// line, as tpm2-tools expect (it is this run's throwaway passcode).
    static func prepare(_ scenario: UnsealScenario, fixture: BenchFixture, directory: String) throws -> ToolSequence {
        let stem = scenario.fileStem
        let blob = scenario.blob
        let d = directory + "/"
        try write(blob.publicArea, to: d + "\(stem).pub")
        try write(blob.privateArea, to: d + "\(stem).priv")
        try write(fixture.srkName, to: d + "srk.name")
        let orList = "sha256:\(d)\(stem)-a.pol,\(d)\(stem)-b.pol"
        if let biometric = blob.policy.biometric, blob.policy.passcode {
            let branchA = TPM.authPolicy(.biometricOnly(biometric), nvName: blob.nvName, pcr7: blob.pcr7Value)
            let branchB = TPM.authPolicy(SealPolicy(biometric: nil, passcode: true, passcodeCounter: blob.policy.passcodeCounter),
                                         nvName: [], pcr7: [], passcodeNVName: blob.passcodeNVName)
            try write(branchA.bytes, to: d + "\(stem)-a.pol")
            try write(branchB.bytes, to: d + "\(stem)-b.pol")
        }

        let srk = "0x" + String(TPM.srkHandle, radix: 16)
        let item = d + "\(stem)-item.ctx"
        let policy = d + "\(stem)-policy.ctx"
        /// tpm2_policynv: operandB from `operand`, compared with `operation`
        /// ("ule" for a counter, "eq" for the first release's index) from
        /// offset 0, the owner authorizing the read (OWNERREAD).
        func policyNV(_ index: UInt32, operand: [UInt8], file: String, operation: String) throws -> ToolStep {
            try write(operand, to: d + file)
            return ToolStep(["tpm2_policynv", "-Q", "-S", policy, "-C", "o", "-i", d + file, "--offset", "0",
                             "0x" + String(index, radix: 16), operation])
        }
        var steps = [ToolStep(["tpm2_load", "-Q", "-C", srk, "-u", d + "\(stem).pub", "-r", d + "\(stem).priv", "-c", item])]
        switch scenario.branch {
        case .biometric:
            guard let biometric = blob.policy.biometric else {
                throw BenchError.setup("\(scenario.name): the blob has no biometric branch")
            }
            let encrypt = d + "\(stem)-encrypt.ctx"
            // Unsalted policy session for the NV condition, and a separate
            // salted HMAC session (encrypt+decrypt) for the response, like
            // the module (design.md section 3, gotcha 1).
            steps.append(ToolStep(["tpm2_startauthsession", "--policy-session", "-S", policy]))
            if biometric.bindPCR7 {
                steps.append(ToolStep(["tpm2_policypcr", "-Q", "-S", policy, "-l", "sha256:7"]))
            }
            if let generation = biometric.counterAtMost {
                steps.append(try policyNV(biometric.nvIndex, operand: counterBytes(generation),
                                          file: "\(stem)-generation.bin", operation: "ule"))
            } else {
                steps.append(try policyNV(biometric.nvIndex, operand: biometric.domainState,
                                          file: "\(stem)-state.bin", operation: "eq"))
            }
            if blob.policy.passcode {
                steps.append(ToolStep(["tpm2_policyor", "-Q", "-S", policy, "-l", orList]))
            }
            steps += [
                ToolStep(["tpm2_startauthsession", "--hmac-session", "-c", srk, "-n", d + "srk.name", "-S", encrypt]),
                ToolStep(["tpm2_unseal", "-c", item, "-p", "session:\(policy)", "-S", encrypt], yieldsKey: true),
                ToolStep(["tpm2_flushcontext", policy]),
                ToolStep(["tpm2_flushcontext", encrypt]),
            ]
        case .passcode(let passcode):
            guard blob.policy.passcode else { throw BenchError.setup("\(scenario.name): the blob has no passcode branch") }
            let auth = passcode.value.withUnsafeBytes { hexString(Array($0)) }
            // One policy session, salted with the pinned SRK (and bound to
            // it: -c), parameter encryption on.
            steps += [
                ToolStep(["tpm2_startauthsession", "--policy-session", "-c", srk, "-n", d + "srk.name", "-S", policy]),
                ToolStep(["tpm2_policyauthvalue", "-Q", "-S", policy]),
            ]
            if let counter = blob.policy.passcodeCounter {
                steps.append(try policyNV(counter.nvIndex, operand: counterBytes(counter.atMost),
                                          file: "\(stem)-generation.bin", operation: "ule"))
            }
            if blob.policy.biometric != nil {
                steps.append(ToolStep(["tpm2_policyor", "-Q", "-S", policy, "-l", orList]))
            }
            steps += [
                ToolStep(["tpm2_unseal", "-c", item, "-p", "session:\(policy)+hex:\(auth)"], yieldsKey: true),
                ToolStep(["tpm2_flushcontext", policy]),
            ]
        case .device:
            throw BenchError.setup("the device-bound form is not benchmarked")
        }
        steps.append(ToolStep(["tpm2_flushcontext", "-t"]))
        return ToolSequence(scenario: scenario, directory: directory, steps: steps)
    }

    /// A counter value as PolicyNV's operandB: 8 bytes, big-endian (the
    /// TPM compares a counter's bytes as an unsigned big-endian number).
    private static func counterBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    /// Runs every step once and returns what tpm2_unseal printed.
    func runOnce(_ runner: ToolRunner) throws -> ToolOutput {
        var unsealed: ToolOutput?
        for step in steps {
            let out = try runner.run(step)
            if step.yieldsKey { unsealed = out } else { out.wipe() }
        }
        guard let unsealed else { throw BenchError.setup("the tool sequence has no tpm2_unseal step") }
        return unsealed
    }

    /// Compares a run's output with `key` and wipes it; a mismatch throws.
    func check(_ output: ToolOutput, _ key: SecureBytes) throws {
        defer { output.wipe() }
        let same = output.bytes.withUnsafeBytes { SecureBytes(copying: $0) } == key
        guard same else {
            throw BenchError.wrongKey("the tpm2-tools sequence for \(scenario.name) (\(output.bytes.count) bytes)")
        }
    }

    private static func write(_ bytes: [UInt8], to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw BenchError.setup("cannot write \(path)")
        }
    }
}

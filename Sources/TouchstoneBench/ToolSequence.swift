import Foundation
import TouchstoneSimulator
import TouchstoneSecure
import TouchstoneTPM

/// The same unseal as `TPM.unseal`, done as a shell script would do it:
/// one tpm2-tools process per step, session state passed through context
/// files, and the same protections as the module (the SRK pinned by name,
/// salted sessions that encrypt the key on its way out).
///
/// The steps themselves are written once, in scripts/lib/tpm2_unseal.py,
/// which scripts/bench-cli uses too: `prepare` writes the files the tools
/// read and asks that script (once, before anything is timed) for the
/// steps of its case; the benchmark then runs and times them itself.
struct ToolSequence {
    let scenario: UnsealScenario
    /// Where its files are.
    let directory: String
    let steps: [ToolStep]

    /// The script that lists the steps: scripts/lib/tpm2_unseal.py in the
    /// checkout this benchmark was built from.
    static let sequenceScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/lib/tpm2_unseal.py").path

    /// The steps as a reader would type them in `directory` (secrets redacted).
    var shownSteps: [String] {
        steps.map { $0.shown.replacingOccurrences(of: directory + "/", with: "") }
    }

    /// Writes the files the tools read, in `directory` (mode 0600): the
    /// marshalled TPM2B_PUBLIC / TPM2B_PRIVATE (tpm2-tools' default "tss"
    /// format), PolicyNV's operandB (a counter's generation as 8 bytes
    /// big-endian, or the first release's domain state), for a PolicyOR
    /// blob the two branch digests, and the SRK's name; then gets the steps
    /// from scripts/lib/tpm2_unseal.py. No secret goes to disk; the
    /// passcode's authValue is passed as `hex:` on tpm2_unseal's command
    /// line, as tpm2-tools expect (it is this run's throwaway passcode).
    static func prepare(_ scenario: UnsealScenario, fixture: BenchFixture, directory: String) throws -> ToolSequence {
        let stem = scenario.fileStem
        let blob = scenario.blob
        let d = directory + "/"
        try write(blob.publicArea, to: d + "\(stem).pub")
        try write(blob.privateArea, to: d + "\(stem).priv")
        try write(fixture.srkName, to: d + "srk.name")
        let policyOR = blob.policy.biometric != nil && blob.policy.passcode
        if let biometric = blob.policy.biometric, blob.policy.passcode {
            let branchA = TPM.authPolicy(.biometricOnly(biometric), nvName: blob.nvName, pcr7: blob.pcr7Value)
            let branchB = TPM.authPolicy(SealPolicy(biometric: nil, passcode: true, passcodeCounter: blob.policy.passcodeCounter),
                                         nvName: [], pcr7: [], passcodeNVName: blob.passcodeNVName)
            try write(branchA.bytes, to: d + "\(stem)-a.pol")
            try write(branchB.bytes, to: d + "\(stem)-b.pol")
        }

        var arguments = ["--folder", directory, "--stem", stem, "--srk", "0x" + String(TPM.srkHandle, radix: 16)]
        if policyOR { arguments.append("--policy-or") }
        /// PolicyNV on `index`: operandB written where the script reads it,
        /// compared with `operation` ("ule" for a counter, "eq" for the
        /// first release's index).
        func policyNV(_ index: UInt32, operand: [UInt8], operation: String) throws {
            try write(operand, to: d + "\(stem)-\(operation == "ule" ? "generation" : "state").bin")
            arguments += ["--nv-index", "0x" + String(index, radix: 16), "--nv-operation", operation]
        }
        var password: String?
        switch scenario.branch {
        case .biometric:
            guard let biometric = blob.policy.biometric else {
                throw BenchError.setup("\(scenario.name): the blob has no biometric branch")
            }
            arguments += ["--branch", "biometric"]
            if biometric.bindPCR7 { arguments.append("--pcr7") }
            if let generation = biometric.counterAtMost {
                try policyNV(biometric.nvIndex, operand: counterBytes(generation), operation: "ule")
            } else {
                try policyNV(biometric.nvIndex, operand: biometric.domainState, operation: "eq")
            }
        case .passcode(let passcode):
            guard blob.policy.passcode else { throw BenchError.setup("\(scenario.name): the blob has no passcode branch") }
            arguments += ["--branch", "passcode"]
            if let counter = blob.policy.passcodeCounter {
                try policyNV(counter.nvIndex, operand: counterBytes(counter.atMost), operation: "ule")
            }
            password = "hex:" + passcode.value.withUnsafeBytes { hexString(Array($0)) }
        case .device:
            throw BenchError.setup("the device-bound form is not benchmarked")
        }
        let steps = try listSteps(arguments).map { command in
            ToolStep(command.map { argument in
                password.map { argument.replacingOccurrences(of: authPlaceholder, with: $0) } ?? argument
            }, yieldsKey: command.first == "tpm2_unseal")
        }
        return ToolSequence(scenario: scenario, directory: directory, steps: steps)
    }

    /// The placeholder scripts/lib/tpm2_unseal.py puts where tpm2_unseal's
    /// password goes (its AUTH).
    private static let authPlaceholder = "@AUTH@"

    /// Runs scripts/lib/tpm2_unseal.py with `arguments`: the steps, each a
    /// command line.
    private static func listSteps(_ arguments: [String]) throws -> [[String]] {
        guard let python = Swtpm.which("python3") else { throw BenchError.missingTool(name: "python3", package: "python3") }
        guard FileManager.default.fileExists(atPath: sequenceScript) else {
            throw BenchError.setup("\(sequenceScript) not found: run the benchmark from its checkout")
        }
        let outcome = try ChildProcess.run(python, [sequenceScript] + arguments, environment: ProcessInfo.processInfo.environment)
        guard outcome.status == 0, let steps = try? JSONDecoder().decode([[String]].self, from: Data(outcome.stdout)),
              !steps.isEmpty, steps.allSatisfy({ !$0.isEmpty }) else {
            throw BenchError.setup("\(sequenceScript) gave no steps (exit \(outcome.status)): "
                                   + String(decoding: outcome.stderr, as: UTF8.self))
        }
        return steps
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

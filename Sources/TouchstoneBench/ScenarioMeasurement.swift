import TouchstoneSecure
import TouchstoneTPM

/// One scenario measured both ways, interleaved: blocks of module unseals
/// alternate with single tool sequences, so that both see the same machine
/// (a shared VM's speed drifts over seconds; measuring one after the other
/// would fold that drift into the speed-up).
struct ScenarioMeasurement {
    /// The first unseal on a new `TPM` instance (new ESYS context, SRK
    /// pinned by name): it also looks up the SRK's handle and that of an NV
    /// index the instance has no record of.
    var firstUnsealCommands: Int
    var firstUnsealNanoseconds: UInt64
    /// Steady state: commands sent during the timed unseals / their number.
    var commandsPerUnseal: Double
    var module: LatencyStats
    /// CPU time of this process per timed unseal (ESYS, OpenSSL, the module).
    var clientCPUMs: Double
    /// Run time of the swtpm process per timed unseal; nil if unreadable.
    var swtpmCPUMs: Double?
    var tools: LatencyStats

    /// Opens a new connection (given the scenario's NV record, if any, as
    /// the vault gives its passcode counter's) and unseals once (the first
    /// unseal); then
    /// warms up (`warmup` unseals, `toolWarmup` tool sequences); then runs
    /// `toolIterations` rounds of (a block of module unseals, one tool
    /// sequence), `iterations` module unseals in all. Every unsealed key is
    /// compared with `key`, outside the timing; a mismatch throws. The
    /// connection is closed on return. (The tss2 swtpm TCTI connects per
    /// command, so the tools can use the simulator between our commands.)
    static func measure(_ scenario: UnsealScenario, tools sequence: ToolSequence, runner: ToolRunner,
                        key: SecureBytes, tcti: String, srkName: [UInt8], swtpmPID: Int32?,
                        warmup: Int, iterations: Int, toolWarmup: Int, toolIterations: Int) throws -> ScenarioMeasurement {
        let tpm = try TPM(tcti: tcti, expectedSRKName: srkName)
        if let adopted = scenario.adopted { tpm.adoptNVIndex(adopted.handle, record: adopted.record) }
        let unseal = { () throws -> SecureBytes in try tpm.unseal(scenario.blob, via: scenario.branch) }
        let first = try timed(unseal)
        try check(first.result, key, scenario)
        let firstCommands = tpm.commandCount

        for _ in 0..<warmup { try check(unseal(), key, scenario) }
        for _ in 0..<toolWarmup { try sequence.check(sequence.runOnce(runner), key) }

        var moduleSamples: [UInt64] = []
        var toolSamples: [UInt64] = []
        var commands = 0
        var clientCPU: UInt64 = 0
        var swtpmCPU: UInt64? = 0
        for round in 0..<toolIterations {
            // Spread `iterations` over the rounds as evenly as possible.
            let block = iterations * (round + 1) / toolIterations - iterations * round / toolIterations
            let commandsBefore = tpm.commandCount
            let cpuBefore = CPUTime.ofThisProcess()
            let swtpmBefore = swtpmPID.flatMap(CPUTime.ofProcess)
            for _ in 0..<block {
                try Interruption.check()
                let run = try timed(unseal)
                moduleSamples.append(run.nanoseconds)
                try check(run.result, key, scenario)
            }
            let swtpmAfter = swtpmPID.flatMap(CPUTime.ofProcess)
            clientCPU += CPUTime.ofThisProcess() - cpuBefore
            commands += tpm.commandCount - commandsBefore
            if let before = swtpmBefore, let after = swtpmAfter, let sum = swtpmCPU {
                swtpmCPU = sum + (after - before)
            } else {
                swtpmCPU = nil
            }

            try Interruption.check()
            let run = try timed { try sequence.runOnce(runner) }
            toolSamples.append(run.nanoseconds)
            try sequence.check(run.result, key)
        }
        let perUnseal = { (nanoseconds: UInt64) in Double(nanoseconds) / 1_000_000 / Double(iterations) }
        return ScenarioMeasurement(firstUnsealCommands: firstCommands, firstUnsealNanoseconds: first.nanoseconds,
                                   commandsPerUnseal: Double(commands) / Double(iterations),
                                   module: LatencyStats(nanoseconds: moduleSamples),
                                   clientCPUMs: perUnseal(clientCPU),
                                   swtpmCPUMs: swtpmCPU.map(perUnseal),
                                   tools: LatencyStats(nanoseconds: toolSamples))
    }

    private static func check(_ unsealed: SecureBytes, _ key: SecureBytes, _ scenario: UnsealScenario) throws {
        guard unsealed == key else { throw BenchError.wrongKey("TPM.unseal via \(scenario.name)") }
    }
}

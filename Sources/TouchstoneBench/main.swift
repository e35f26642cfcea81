// TouchstoneBench (`swift run -c release TouchstoneBench`): three suites, each
// on a private swtpm.
// - `TouchstoneBench [tpm]`: latency and TPM command count of an unseal
//   of each kind of sealed key, against the same unseal done with tpm2-tools.
// - `TouchstoneBench vault`: the vault's add, keyed get and list at several
//   sizes, TPM excluded and included, against plain SQLite with the same rows.
// - `TouchstoneBench kdf`: the passcode KDF as shipped (salted BLAKE2b)
//   against Argon2id at libsodium's limits, beside a TPM passcode unseal.
// - `TouchstoneBench fingers`: the simulator's synthetic fingerprints (a
//   master print, an impression, its PNG).
// - `TouchstoneBench matching`: libfprint's image pipeline on synthetic
//   fingers: genuine and impostor matches, scores, touch-to-answer time.
// See docs/performance.md for the figures and how to read them.
import TouchstoneSimulator
import Foundation
import TestRigs
import TouchstoneSecure
import TouchstoneTPM

/// Seals the key, then measures each scenario (module and tools
/// interleaved). The `TPM` instances it opens are closed before it returns,
/// so the simulator can be shut down.
func runBenchmark(_ options: BenchOptions, on rig: SwtpmRig, environment: [String: String]) throws -> BenchReport {
    let loadAverage = MachineInfo.loadAverage()
    let fixture = try BenchFixture.make(tcti: rig.swtpm.tcti)
    let runner = try ToolRunner(directory: try rig.subdirectory("tools"), tcti: rig.swtpm.tcti, baseEnvironment: environment)
    let toolWarmup = max(1, options.warmup / 10)
    var branches: [BenchReport.Branch] = []
    for scenario in fixture.scenarios {
        let sequence = try ToolSequence.prepare(scenario, fixture: fixture, directory: runner.directory)
        let measured = try ScenarioMeasurement.measure(
            scenario, tools: sequence, runner: runner, key: fixture.key, tcti: rig.swtpm.tcti, srkName: fixture.srkName,
            swtpmPID: rig.swtpm.pid, warmup: options.warmup, iterations: options.iterations,
            toolWarmup: toolWarmup, toolIterations: options.toolIterations)
        let speedup = measured.tools.median / measured.module.median
        branches.append(BenchReport.Branch(
            name: scenario.name,
            isFirstReleaseBlob: scenario.isFirstReleaseBlob,
            touchstone: measured.module,
            commandsPerUnseal: measured.commandsPerUnseal,
            firstReleaseCommands: scenario.firstRelease.steady,
            firstReleaseFirstUnsealCommands: scenario.firstRelease.first,
            commandTarget: scenario.commandTarget,
            commandTargetMet: scenario.commandTarget.map { measured.commandsPerUnseal <= Double($0) },
            firstUnsealCommands: measured.firstUnsealCommands,
            firstUnsealTarget: scenario.firstUnsealTarget,
            firstUnsealTargetMet: scenario.firstUnsealTarget.map { measured.firstUnsealCommands <= $0 },
            firstUnsealMs: Double(measured.firstUnsealNanoseconds) / 1_000_000,
            clientCPUMs: measured.clientCPUMs,
            swtpmCPUMs: measured.swtpmCPUMs,
            tools: measured.tools,
            toolProcesses: sequence.steps.count,
            toolCommands: sequence.shownSteps,
            speedup: speedup,
            speedupTargetMet: speedup >= BenchReport.speedupTarget))
    }
    return BenchReport(machine: MachineInfo.current(tpm2ToolsVersion: runner.version(), loadAverage: loadAverage),
                       iterations: options.iterations, warmup: options.warmup,
                       toolIterations: options.toolIterations, toolWarmup: toolWarmup, branches: branches)
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("touchstone-bench: \(message)\n".utf8))
    exit(status)
}

// Taken before the TPM module sets TSS2_LOG for this process, so the tools
// log their errors (to the stderr we capture) as they normally would.
let startEnvironment = ProcessInfo.processInfo.environment

/// The suite chosen by the first argument, with its options.
enum BenchCommand {
    case tpm(BenchOptions)
    case vault(VaultBenchOptions)
    case kdf(KDFOptions)
    case fingers(SyntheticFingerOptions)
    case matching(MatchingOptions)

    init(arguments: [String]) throws {
        switch arguments.first {
        case "vault": self = .vault(try VaultBenchOptions(arguments: Array(arguments.dropFirst())))
        case "kdf": self = .kdf(try KDFOptions(arguments: Array(arguments.dropFirst())))
        case "fingers": self = .fingers(try SyntheticFingerOptions(arguments: Array(arguments.dropFirst())))
        case "matching": self = .matching(try MatchingOptions(arguments: Array(arguments.dropFirst())))
        case "tpm": self = .tpm(try BenchOptions(arguments: Array(arguments.dropFirst())))
        default: self = .tpm(try BenchOptions(arguments: arguments))
        }
    }

    static let usage = BenchOptions.usage + "\n\n" + VaultBenchOptions.usage + "\n\n" + KDFOptions.usage + "\n\n" + SyntheticFingerOptions.usage + "\n\n" + MatchingOptions.usage
}

let command: BenchCommand
do {
    command = try BenchCommand(arguments: Array(CommandLine.arguments.dropFirst()))
} catch BenchError.usage(nil) {
    print(BenchCommand.usage)
    exit(0)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}

do {
    switch command {
    case .tpm(let options):
        // Fail before starting anything when a tool is missing.
        for program in ToolRunner.programs where Swtpm.which(program) == nil {
            throw BenchError.missingTool(name: program, package: "tpm2-tools")
        }
        Interruption.install()
        let rig = try SwtpmRig.forBenchmark()
        let outcome = Result { try runBenchmark(options, on: rig, environment: startEnvironment) }
        rig.stopReporting()
        let report = try outcome.get()
        print(options.json ? try report.json() : report.table())
    case .vault(let options):
        Interruption.install()
        let rig = try SwtpmRig.forBenchmark()
        let outcome = Result { try runVaultBenchmark(options, on: rig) }
        rig.stopReporting()
        let report = try outcome.get()
        print(options.json ? try report.json() : report.table())
    case .kdf(let options):
        Interruption.install()
        let rig = try SwtpmRig.forBenchmark()
        let outcome = Result { try runKDFBenchmark(options, on: rig) }
        rig.stopReporting()
        let report = try outcome.get()
        print(options.json ? try report.json() : report.table())
    case .fingers(let options):
        print(try runSyntheticFingerBenchmark(options))
    case .matching(let options):
        print(try await runMatchingBenchmark(options))
    }
} catch BenchError.interrupted {
    fail("\(BenchError.interrupted)", status: 130)
} catch {
    fail("\(error)", status: 1)
}

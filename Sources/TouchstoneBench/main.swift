// touchstone-bench: latency and TPM command count of an unseal through each
// branch on a private swtpm, against the same unseal done with tpm2-tools.
// See docs/performance.md for the figures and how to read them.
import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// Seals the key, then measures each scenario (module and tools
/// interleaved). The `TPM` instances it opens are closed before it returns,
/// so the simulator can be shut down.
func runBenchmark(_ options: BenchOptions, on rig: PrivateSwtpm, environment: [String: String]) throws -> BenchReport {
    let loadAverage = MachineInfo.loadAverage()
    let fixture = try BenchFixture.make(tcti: rig.tcti)
    let runner = try ToolRunner(directory: try rig.subdirectory("tools"), tcti: rig.tcti, baseEnvironment: environment)
    let toolWarmup = max(1, options.warmup / 10)
    var branches: [BenchReport.Branch] = []
    for scenario in fixture.scenarios {
        let sequence = try ToolSequence.prepare(scenario, fixture: fixture, directory: runner.directory)
        let measured = try ScenarioMeasurement.measure(
            scenario, tools: sequence, runner: runner, key: fixture.key, tcti: rig.tcti, srkName: fixture.srkName,
            swtpmPID: rig.swtpm.pid, warmup: options.warmup, iterations: options.iterations,
            toolWarmup: toolWarmup, toolIterations: options.toolIterations)
        let speedup = measured.tools.median / measured.module.median
        branches.append(BenchReport.Branch(
            name: scenario.name,
            touchstone: measured.module,
            commandsPerUnseal: measured.commandsPerUnseal,
            commandTarget: scenario.commandTarget,
            commandTargetMet: measured.commandsPerUnseal <= Double(scenario.commandTarget),
            firstUnsealCommands: measured.firstUnsealCommands,
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

let options: BenchOptions
do {
    options = try BenchOptions(arguments: Array(CommandLine.arguments.dropFirst()))
} catch BenchError.usage(nil) {
    print(BenchOptions.usage)
    exit(0)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}

do {
    // Fail before starting anything when a tool is missing.
    for program in ToolRunner.programs where Swtpm.which(program) == nil {
        throw BenchError.missingTool(name: program, package: "tpm2-tools")
    }
    Interruption.install()
    let rig = try PrivateSwtpm()
    let outcome = Result { try runBenchmark(options, on: rig, environment: startEnvironment) }
    rig.stopAndRemove()
    let report = try outcome.get()
    print(options.json ? try report.json() : report.table())
} catch BenchError.interrupted {
    fail("\(BenchError.interrupted)", status: 130)
} catch {
    fail("\(error)", status: 1)
}

import Foundation

/// Everything one run measured, with the targets checked against it: issue
/// 12's (at most one TPM command more per unseal than the first release)
/// and the speed-up over tpm2-tools. Printed as a table, or as JSON with `--json`.
struct BenchReport: Codable {
    /// Tool sequence time / module time, at the median.
    static let speedupTarget = 5.0

    struct Branch: Codable {
        var name: String
        /// The first release's blob (enrolment index + PolicyOR), measured
        /// for comparison: no target is checked on it.
        var isFirstReleaseBlob: Bool
        /// `TPM.unseal`, steady state.
        var touchstone: LatencyStats
        var commandsPerUnseal: Double
        /// The first release's figures for this branch (docs/performance.md).
        var firstReleaseCommands: Int
        var firstReleaseFirstUnsealCommands: Int
        /// One more than the first release's; nil on a comparison row.
        var commandTarget: Int?
        var commandTargetMet: Bool?
        /// The first unseal on a new connection (includes handle lookups).
        var firstUnsealCommands: Int
        var firstUnsealTarget: Int?
        var firstUnsealTargetMet: Bool?
        var firstUnsealMs: Double
        /// CPU per steady-state unseal: this process / the swtpm process.
        var clientCPUMs: Double
        var swtpmCPUMs: Double?
        /// The tpm2-tools sequence, one process per step.
        var tools: LatencyStats
        var toolProcesses: Int
        var toolCommands: [String]
        var speedup: Double
        var speedupTargetMet: Bool

        var targetsMet: Bool {
            isFirstReleaseBlob || (commandTargetMet == true && firstUnsealTargetMet == true && speedupTargetMet)
        }
    }

    var machine: MachineInfo
    var iterations: Int
    var warmup: Int
    var toolIterations: Int
    var toolWarmup: Int
    var branches: [Branch]

    var allTargetsMet: Bool { branches.allSatisfy(\.targetsMet) }

    func json() throws -> String {
        try prettyJSON(self)
    }

    func table() -> String {
        var lines: [String] = []
        lines.append("TPM unseal on a private swtpm \(machine.swtpmVersion): TPM module (in process) vs tpm2-tools \(machine.tpm2ToolsVersion) (one process per step)")
        lines.append(machine.reportLine)
        lines.append("per branch: \(iterations) timed module unseals (after \(warmup) warm-up) interleaved with \(toolIterations) timed tool sequences (after \(toolWarmup) warm-up)")
        lines.append("")
        let header = ["branch", "median ms", "p90 ms", "mean ms", "cmds/unseal", "1st: cmds", "1st: ms",
                      "tools median ms", "tools p90 ms", "tool procs", "speed-up"]
        var rows = [header]
        for b in branches {
            rows.append([b.name, format(b.touchstone.median), format(b.touchstone.p90), format(b.touchstone.mean),
                         format(b.commandsPerUnseal), "\(b.firstUnsealCommands)", format(b.firstUnsealMs),
                         format(b.tools.median, 1), format(b.tools.p90, 1), "\(b.toolProcesses)",
                         format(b.speedup, 1) + "x"])
        }
        let nameWidth = branches.map(\.name.count).max() ?? 0
        lines += alignedTable(rows)
        lines.append("")
        lines.append("cmds/unseal: steady state on one connection. 1st: the first unseal on a new connection (adds the SRK/NV handle lookups;")
        lines.append("the passcode counter is taken from its record, as the vault does). \"1st release\" rows: the first release's blob")
        lines.append("(enrolment index + PolicyOR), measured for comparison.")
        lines.append("Every unseal's bytes (module and tools) were compared with the sealed key.")
        lines.append("")
        lines.append("where a steady-state module unseal's time goes, CPU ms per unseal: this process (module + ESYS + OpenSSL) / swtpm")
        for b in branches {
            lines.append("  " + b.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
                         + "  \(format(b.clientCPUMs)) / \(b.swtpmCPUMs.map { format($0) } ?? "n/a")   (wall median \(format(b.touchstone.median)))")
        }
        lines.append("")
        lines.append("targets: TPM commands at most one more than the first release's, steady state and first unseal;")
        lines.append("module >= \(format(Self.speedupTarget, 0))x faster than tpm2-tools, medians")
        for b in branches {
            let name = "  " + b.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            guard let target = b.commandTarget, let firstTarget = b.firstUnsealTarget else {
                lines.append(name + "  commands \(format(b.commandsPerUnseal)), 1st unseal \(b.firstUnsealCommands)"
                             + " (the first release's figures: \(b.firstReleaseCommands), \(b.firstReleaseFirstUnsealCommands)): comparison, no target")
                continue
            }
            lines.append(name + "  commands \(format(b.commandsPerUnseal)) <= \(target) (\(b.firstReleaseCommands) + 1): \(verdict(b.commandTargetMet))"
                         + "   1st unseal \(b.firstUnsealCommands) <= \(firstTarget) (\(b.firstReleaseFirstUnsealCommands) + 1): \(verdict(b.firstUnsealTargetMet))"
                         + "   speed-up \(format(b.speedup, 1))x >= \(format(Self.speedupTarget, 0))x: \(verdict(b.speedupTargetMet))")
        }
        lines.append(allTargetsMet ? "all targets met" : "SOME TARGETS MISSED")
        return lines.joined(separator: "\n")
    }

    private func verdict(_ met: Bool?) -> String { met == true ? "met" : "MISSED" }
}

import Foundation

/// Everything one run measured, with the targets of issue 2 checked against
/// it. Printed as a table, or as JSON with `--json`.
struct BenchReport: Codable {
    /// Tool sequence time / module time, at the median.
    static let speedupTarget = 5.0

    struct Branch: Codable {
        var name: String
        /// `TPM.unseal`, steady state.
        var touchstone: LatencyStats
        var commandsPerUnseal: Double
        var commandTarget: Int
        var commandTargetMet: Bool
        /// The first unseal on a new connection (includes handle lookups).
        var firstUnsealCommands: Int
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
    }

    var machine: MachineInfo
    var iterations: Int
    var warmup: Int
    var toolIterations: Int
    var toolWarmup: Int
    var branches: [Branch]

    var allTargetsMet: Bool { branches.allSatisfy { $0.commandTargetMet && $0.speedupTargetMet } }

    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    func table() -> String {
        var lines: [String] = []
        lines.append("TPM unseal on a private swtpm \(machine.swtpmVersion): TPM module (in process) vs tpm2-tools \(machine.tpm2ToolsVersion) (one process per step)")
        lines.append("machine: \(machine.cpuModel), \(machine.logicalCPUs) CPUs, \(format(machine.memoryGiB, 1)) GiB, \(machine.operatingSystem), load average \(format(machine.loadAverage))")
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
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.indices.map { column in
                column == 0 ? row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
                            : String(repeating: " ", count: widths[column] - row[column].count) + row[column]
            }
            lines.append(cells.joined(separator: "  "))
        }
        lines.append("")
        lines.append("cmds/unseal: steady state on one connection. 1st: the first unseal on a new connection (adds the SRK/NV handle lookups).")
        lines.append("Every unseal's bytes (module and tools) were compared with the sealed key.")
        lines.append("")
        lines.append("where a steady-state module unseal's time goes, CPU ms per unseal: this process (module + ESYS + OpenSSL) / swtpm")
        for b in branches {
            lines.append("  " + b.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
                         + "  \(format(b.clientCPUMs)) / \(b.swtpmCPUMs.map { format($0) } ?? "n/a")   (wall median \(format(b.touchstone.median)))")
        }
        lines.append("")
        lines.append("targets (issue 2): TPM commands per steady-state unseal; module >= \(format(Self.speedupTarget, 0))x faster than tpm2-tools (medians)")
        for b in branches {
            lines.append("  " + b.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
                         + "  commands \(format(b.commandsPerUnseal)) <= \(b.commandTarget): \(b.commandTargetMet ? "met" : "MISSED")"
                         + "   speed-up \(format(b.speedup, 1))x >= \(format(Self.speedupTarget, 0))x: \(b.speedupTargetMet ? "met" : "MISSED")")
        }
        lines.append(allTargetsMet ? "all targets met" : "SOME TARGETS MISSED")
        return lines.joined(separator: "\n")
    }

    private func format(_ value: Double, _ decimals: Int = 2) -> String {
        String(format: "%.\(decimals)f", value)
    }
}

import Foundation

/// One operation measured on both sides.
struct OperationComparison: Codable {
    var vault: ThroughputFigures
    var plain: ThroughputFigures
    /// TPM commands the vault sent, per operation (for a listing: for the
    /// whole listing).
    var tpmCommandsPerOperation: Double
    /// Peak RSS of the benchmark process during this phase (both sides, and
    /// the benchmark's own copies of the rows and secrets).
    var peakRSSMiB: Double

    /// Vault throughput / plain SQLite throughput.
    var ratio: Double { plain.perSecond > 0 ? vault.perSecond / plain.perSecond : 0 }
}

/// One vault size in one mode.
struct VaultCaseResult: Codable {
    var size: Int
    var mode: VaultMode
    var access: String
    /// `Vault(home:tpm:)` on a new folder: schema, root key sealed and
    /// unsealed (not part of any operation below).
    var openMilliseconds: Double
    /// Average stored sizes per item, read from the vault's file.
    var lookupBytes: Double
    var metadataBytes: Double
    var secretBytes: Double
    /// The vault's `keys` column (the wrapped item key and its class key
    /// ids); the baseline has no such column.
    var wrapBytes: Double
    /// The baseline's settings as SQLite reports them.
    var plainJournalMode: String
    var plainSynchronous: String
    var add: OperationComparison
    var get: OperationComparison
    var list: OperationComparison
}

/// Everything a `TouchstoneBench vault` run measured, with its target
/// checked: add and keyed get with the TPM excluded at least half of plain
/// SQLite's throughput.
struct VaultBenchReport: Codable {
    static let targetRatio = 0.5

    var machine: MachineInfo
    var sqliteVersion: String
    var sizes: [Int]
    var tpmSample: Int
    var block: Int
    var peakIsPerPhase: Bool
    var cases: [VaultCaseResult]

    struct TargetCheck: Codable {
        var size: Int
        var operation: String
        var ratio: Double
        var met: Bool
    }

    var targetChecks: [TargetCheck] {
        cases.filter { $0.mode == .tpmExcluded }.flatMap { c in
            [("add", c.add), ("get", c.get)].map { name, op in
                TargetCheck(size: c.size, operation: name, ratio: op.ratio, met: op.ratio >= Self.targetRatio)
            }
        }
    }

    func json() throws -> String {
        struct Document: Encodable {
            var report: VaultBenchReport
            var targets: [TargetCheck]
        }
        return try prettyJSON(Document(report: self, targets: targetChecks))
    }

    func table() -> String {
        var lines: [String] = []
        lines.append("Vault (SQLite + libsodium, TPM on a private swtpm \(machine.swtpmVersion)) vs plain SQLite \(sqliteVersion), same rows")
        lines.append(machine.reportLine)
        if let c = cases.first {
            lines.append("rows: lookup \(format(c.lookupBytes, 0)) B, metadata \(format(c.metadataBytes, 0)) B, secret \(format(c.secretBytes, 0)) B"
                         + " (the vault's stored blobs, inserted byte for byte into the plain table); each vault row also holds its keys record (keys column: the ways in, and wrapped item keys where there are any) of \(format(c.wrapBytes, 0)) B")
            lines.append("plain SQLite: journal_mode=\(c.plainJournalMode), synchronous=\(c.plainSynchronous) (1 = NORMAL), one transaction per insert, statements prepared once")
        }
        lines.append("")
        let header = ["items", "mode", "operation", "timed", "vault ops/s", "vault median", "SQLite ops/s", "SQLite median",
                      "vault/SQLite", "TPM cmds", "peak RSS MiB"]
        var rows = [header]
        for c in cases {
            let getName = c.mode == .tpmIncluded && c.get.vault.operations < c.size ? "get (sample)" : "get"
            for (name, op) in [("add", c.add), (getName, c.get), ("list (1 listing)", c.list)] {
                let isList = name.hasPrefix("list")
                rows.append([
                    "\(c.size)", c.mode.rawValue, name, "\(op.vault.operations)",
                    format(op.vault.perSecond, 0), isList ? format(op.vault.seconds * 1000, 1) + " ms" : micro(op.vault),
                    format(op.plain.perSecond, 0), isList ? format(op.plain.seconds * 1000, 1) + " ms" : micro(op.plain),
                    format(op.ratio, 3), format(op.tpmCommandsPerOperation, 2) + (isList ? "/list" : "/op"),
                    format(op.peakRSSMiB, 1),
                ])
            }
        }
        for (n, line) in alignedTable(rows, leftAligned: 3).enumerated() {
            lines.append(line)
            if n > 0, n % 3 == 0, n < rows.count - 1 { lines.append("") }  // a blank line after each case's three rows
        }
        lines.append("")
        lines.append("ops/s: operations / their summed wall-clock times (checking each result is done outside the timing); median: per operation.")
        lines.append("list: one call listing every item (vault: attributes decrypted and checked, no secret; SQLite: every row); ops/s = items/s, median column = the whole listing.")
        lines.append("get (TPM included): a random sample of \(tpmSample) items per size, each get unsealing the passcode class key; TPM excluded: every item, random order.")
        lines.append("both sides interleaved in blocks of \(block) operations. peak RSS: "
                     + (peakIsPerPhase ? "per phase (VmHWM reset before each)" : "process peak so far (VmHWM reset refused)")
                     + ", both sides plus the benchmark's own copy of the rows.")
        lines.append("")
        lines.append("target: add and keyed get with the TPM excluded >= \(format(Self.targetRatio, 1))x plain SQLite's throughput")
        for check in targetChecks {
            lines.append("  \(String(check.size).padding(toLength: 7, withPad: " ", startingAt: 0)) \(check.operation.padding(toLength: 4, withPad: " ", startingAt: 0))"
                         + " \(format(check.ratio, 3)) >= \(format(Self.targetRatio, 1)): \(check.met ? "met" : "MISSED")")
        }
        lines.append(targetChecks.allSatisfy(\.met) ? "target met" : "TARGET MISSED")
        return lines.joined(separator: "\n")
    }

    private func micro(_ figures: ThroughputFigures) -> String {
        guard let median = figures.medianMicroseconds else { return "-" }
        return median >= 1000 ? format(median / 1000, 2) + " ms" : format(median, 1) + " us"
    }
}

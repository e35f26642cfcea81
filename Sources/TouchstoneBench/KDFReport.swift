import Foundation

/// What `TouchstoneBench kdf` measured. Printed as a table, or as JSON
/// with `--json`.
struct KDFReport: Codable {
    /// Wall-time summary of one derivation (or one unseal), in milliseconds.
    struct Stats: Codable {
        var samples: Int
        var median: Double
        /// 95th percentile, nearest rank.
        var p95: Double
        var mean: Double
        var min: Double
        var max: Double

        init(nanoseconds: [UInt64]) {
            let ms = nanoseconds.map { Double($0) / 1_000_000 }.sorted()
            let n = ms.count
            samples = n
            guard n > 0 else { median = 0; p95 = 0; mean = 0; min = 0; max = 0; return }
            median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2
            p95 = ms[Swift.max(Int((0.95 * Double(n)).rounded(.up)), 1) - 1]
            mean = ms.reduce(0, +) / Double(n)
            min = ms[0]
            max = ms[n - 1]
        }
    }

    struct Row: Codable {
        var name: String
        /// crypto_pwhash's limits; nil for the shipped BLAKE2b.
        var opslimit: Int?
        var memlimitBytes: Int?
        var stats: Stats
        /// The most one derivation (BLAKE2b: one round's batch) raised the
        /// resident set above what it was before: VmHWM after minus VmRSS
        /// before, the high-water mark reset first.
        var addedPeakMiB: Double
    }

    var machine: MachineInfo
    var sodiumVersion: String
    var rounds: Int
    var warmup: Int
    var batch: Int
    var tpmBatch: Int
    var kdfs: [Row]
    /// One TPM passcode unseal of a scheme 2 blob, steady state.
    var tpmUnseal: Stats
    var tpmCommandsPerUnseal: Double

    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    func table() -> String {
        var lines: [String] = []
        lines.append("Passcode KDF: the shipped salted BLAKE2b-256 vs libsodium \(sodiumVersion) Argon2id13 (crypto_pwhash), beside a TPM passcode unseal (private swtpm \(machine.swtpmVersion))")
        lines.append("machine: \(machine.cpuModel), \(machine.logicalCPUs) CPUs, \(format(machine.memoryGiB, 1)) GiB, \(machine.operatingSystem), load average \(format(machine.loadAverage))")
        lines.append("\(rounds) timed rounds (after \(warmup) warm-up), each: \(batch) shipped derivations, one Argon2id derivation per level, \(tpmBatch) TPM passcode unseals; order rotating")
        lines.append("")
        let header = ["derivation", "opslimit", "memlimit", "samples", "median", "p95", "max", "added peak", "median / TPM unseal"]
        var rows = [header]
        for k in kdfs {
            rows.append([k.name, k.opslimit.map(String.init) ?? "-", k.memlimitBytes.map(bytes) ?? "-", "\(k.stats.samples)",
                         duration(k.stats.median), duration(k.stats.p95), duration(k.stats.max), mebibytes(k.addedPeakMiB),
                         format(k.stats.median / tpmUnseal.median, k.stats.median < tpmUnseal.median ? 4 : 1) + "x"])
        }
        rows.append(["TPM passcode unseal (scheme 2)", "-", "-", "\(tpmUnseal.samples)", duration(tpmUnseal.median),
                     duration(tpmUnseal.p95), duration(tpmUnseal.max), "-", "1x"])
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.indices.map { column in
                column == 0 ? row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
                            : String(repeating: " ", count: widths[column] - row[column].count) + row[column]
            }
            lines.append(cells.joined(separator: "  "))
        }
        lines.append("")
        lines.append("wall time per derivation (CLOCK_MONOTONIC); p95 nearest rank. Every derivation was compared with its first result.")
        lines.append("added peak: VmHWM after minus VmRSS before one derivation (BLAKE2b: one round's batch), the high-water mark reset first; the largest over the rounds.")
        lines.append("TPM passcode unseal: PolicyAuthValue + PolicyNV(passcode counter), salted session, steady state on one connection, \(format(tpmCommandsPerUnseal)) TPM commands per unseal; every key compared.")
        return lines.joined(separator: "\n")
    }

    /// "1.6 us", "12.3 ms", "1.23 s".
    private func duration(_ ms: Double) -> String {
        if ms < 1 { return format(ms * 1000, 1) + " us" }
        if ms < 1000 { return format(ms, ms < 10 ? 2 : 1) + " ms" }
        return format(ms / 1000, 2) + " s"
    }

    /// "63.9 MiB", "12 KiB" (below 1 MiB).
    private func mebibytes(_ value: Double) -> String {
        value < 1 ? "\(Int((value * 1024).rounded())) KiB" : format(value, 1) + " MiB"
    }

    private func bytes(_ count: Int) -> String {
        count >= 1 << 20 ? "\(count >> 20) MiB" : "\(count >> 10) KiB"
    }

    private func format(_ value: Double, _ decimals: Int = 2) -> String {
        String(format: "%.\(decimals)f", value)
    }
}

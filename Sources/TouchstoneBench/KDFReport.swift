import Foundation

/// What `TouchstoneBench kdf` measured. Printed as a table, or as JSON
/// with `--json`.
struct KDFReport: Codable {
    /// Wall-time summary of one derivation (or one unseal), in milliseconds.
    typealias Stats = LatencyStats

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
        try prettyJSON(self)
    }

    func table() -> String {
        var lines: [String] = []
        lines.append("Passcode KDF: the shipped salted BLAKE2b-256 vs libsodium \(sodiumVersion) Argon2id13 (crypto_pwhash), beside a TPM passcode unseal (private swtpm \(machine.swtpmVersion))")
        lines.append(machine.reportLine)
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
        lines += alignedTable(rows)
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
}

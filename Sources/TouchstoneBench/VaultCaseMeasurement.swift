import Foundation
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// Measures one vault size in one mode against plain SQLite: add, keyed
/// get and one full listing, the two sides interleaved block by block so
/// that both run under the same machine conditions.
struct VaultCaseMeasurement {
    let size: Int
    let mode: VaultMode
    /// Gets timed (all items, or the TPM-included sample).
    let gets: Int
    let block: Int
    let folder: String
    let tpm: TPM
    let passcode: PasscodeAuth

    func run() throws -> VaultCaseResult {
        let workload = VaultWorkload(count: size, access: mode.access)
        let home = URL(fileURLWithPath: folder + "/vault-\(size)-\(mode.tag)")
        let opened = try timed { try Vault(home: home, tpm: tpm) }
        let vault = opened.result
        try vault.setPasscode(passcode)
        let reader = try VaultRowReader(databasePath: home.appendingPathComponent(Vault.databaseName).path)
        let plain = try PlainSQLiteStore(path: folder + "/plain-\(size)-\(mode.tag).sqlite")

        let (add, rows) = try measureAdd(vault, plain, reader, workload)
        let get = try measureGet(vault, plain, rows, workload)
        let list = try measureList(vault, plain, rows)
        guard try vault.itemCount() == size else { throw BenchError.wrongResult("the vault's item count") }
        let settings = try plain.settings()
        return VaultCaseResult(
            size: size, mode: mode, access: mode.access.description,
            openMilliseconds: Double(opened.nanoseconds) / 1e6,
            lookupBytes: average(rows.map(\.lookup.count)), metadataBytes: average(rows.map(\.metadata.count)),
            secretBytes: average(rows.map(\.secret.count)), wrapBytes: try reader.wrapBytesPerItem(),
            plainJournalMode: settings.journal, plainSynchronous: settings.synchronous,
            add: add, get: get, list: list)
    }

    /// `size` adds on each side: a block of vault adds, then the same rows,
    /// read back from the vault's file (untimed), inserted into the plain
    /// table. Returns the rows in the order of the items.
    private func measureAdd(_ vault: Vault, _ plain: PlainSQLiteStore, _ reader: VaultRowReader,
                            _ workload: VaultWorkload) throws -> (OperationComparison, [StoredRow]) {
        PeakMemory.resetPeak()
        var vaultSamples = OperationSamples(expected: size)
        var plainSamples = OperationSamples(expected: size)
        var rows: [StoredRow] = []
        rows.reserveCapacity(size)
        let commandsBefore = tpm.commandCount
        for start in stride(from: 0, to: size, by: block) {
            try Interruption.check()
            let range = start..<min(start + block, size)
            for n in range {
                let attributes = workload.attributes(n)
                try vaultSamples.time { try vault.add(workload.secrets[n], attributes: attributes) }
            }
            let added = try reader.newRows()
            guard added.count == range.count else {
                throw BenchError.setup("read back \(added.count) vault rows for \(range.count) adds")
            }
            for row in added { try plainSamples.time { try plain.add(row) } }
            rows += added
        }
        let commands = tpm.commandCount - commandsBefore
        return (OperationComparison(vault: vaultSamples.figures, plain: plainSamples.figures,
                                    tpmCommandsPerOperation: Double(commands) / Double(size),
                                    peakRSSMiB: PeakMemory.peakMiB()), rows)
    }

    /// `gets` keyed reads in a random order (all items, or a random sample),
    /// after a short untimed warm-up; each read's result is checked against
    /// what was stored, outside the timing.
    private func measureGet(_ vault: Vault, _ plain: PlainSQLiteStore, _ rows: [StoredRow],
                            _ workload: VaultWorkload) throws -> OperationComparison {
        let order = Array((0..<size).shuffled().prefix(gets))
        let proof = mode.proof(passcode)
        let warmup = order.prefix(min(10, order.count))
        for n in warmup {
            try checkSecret(try vault.secret(service: VaultWorkload.service, account: VaultWorkload.account(n), proof: proof), n, workload)
            _ = try plain.row(lookup: rows[n].lookup)
        }
        PeakMemory.resetPeak()
        var vaultSamples = OperationSamples(expected: order.count)
        var plainSamples = OperationSamples(expected: order.count)
        var commands = 0
        for start in stride(from: 0, to: order.count, by: block) {
            try Interruption.check()
            let chunk = order[start..<min(start + block, order.count)]
            let commandsBefore = tpm.commandCount
            for n in chunk {
                let account = VaultWorkload.account(n)
                let secret = try vaultSamples.time { try vault.secret(service: VaultWorkload.service, account: account, proof: proof) }
                try checkSecret(secret, n, workload)
            }
            commands += tpm.commandCount - commandsBefore
            for n in chunk {
                let found = try plainSamples.time { try plain.row(lookup: rows[n].lookup) }
                guard let found, found.secret == rows[n].secret, found.metadata == rows[n].metadata else {
                    throw BenchError.wrongResult("a plain SQLite select")
                }
            }
        }
        return OperationComparison(vault: vaultSamples.figures, plain: plainSamples.figures,
                                   tpmCommandsPerOperation: Double(commands) / Double(order.count),
                                   peakRSSMiB: PeakMemory.peakMiB())
    }

    /// One full listing on each side: the vault's `list()` (attributes
    /// decrypted and checked, no secret), plain SQLite's every row.
    private func measureList(_ vault: Vault, _ plain: PlainSQLiteStore, _ rows: [StoredRow]) throws -> OperationComparison {
        try Interruption.check()
        PeakMemory.resetPeak()
        let commandsBefore = tpm.commandCount
        let listed = try timed { try vault.list() }
        let commands = tpm.commandCount - commandsBefore
        guard listed.result.count == size, listed.result.allSatisfy({ $0.state == .ok }) else {
            throw BenchError.wrongResult("the vault's listing")
        }
        let vaultPeak = PeakMemory.peakMiB()
        let all = try timed { try plain.all() }
        guard all.result.count == size, all.result.last?.lookup == rows.last?.lookup else {
            throw BenchError.wrongResult("the plain SQLite listing")
        }
        return OperationComparison(
            vault: ThroughputFigures(operations: size, seconds: Double(listed.nanoseconds) / 1e9),
            plain: ThroughputFigures(operations: size, seconds: Double(all.nanoseconds) / 1e9),
            tpmCommandsPerOperation: Double(commands), peakRSSMiB: max(vaultPeak, PeakMemory.peakMiB()))
    }

    private func checkSecret(_ secret: SecureBytes, _ n: Int, _ workload: VaultWorkload) throws {
        guard secret == workload.secrets[n] else { throw BenchError.wrongResult("a vault get") }
    }

    private func average(_ values: [Int]) -> Double {
        values.isEmpty ? 0 : Double(values.reduce(0, +)) / Double(values.count)
    }
}

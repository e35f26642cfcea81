/// The command line of `TouchstoneBench vault`.
///
///     TouchstoneBench vault [--sizes N,N,...] [--tpm-sample N] [--block N] [--json]
struct VaultBenchOptions {
    /// Items per vault, one measured vault per size and mode.
    var sizes = [1_000, 10_000, 100_000]
    /// Gets timed per size with the TPM included (each one a TPM unseal).
    var tpmSample = 200
    /// Operations per interleaved block (vault, then plain SQLite).
    var block = 500
    var json = false

    static let usage = """
        usage: TouchstoneBench vault [--sizes N,N,...] [--tpm-sample N] [--block N] [--json]

        Starts a private swtpm and, for each size, fills two new vaults (items with access
        none: TPM excluded; items with access passcode: TPM included) and, side by side,
        plain SQLite tables with the same rows. Times add, keyed get and one full listing.

          --sizes N,N,...   items per vault (default 1000,10000,100000; each 1 to 1000000)
          --tpm-sample N    gets timed per size with the TPM included (default 200)
          --block N         operations per interleaved block (default 500)
          --json            machine-readable output
        """

    /// Parses `arguments` (after `vault`).
    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--sizes":
                let parts = (rest.popFirst() ?? "").split(separator: ",", omittingEmptySubsequences: false)
                let parsed = parts.map { Int($0.trimmingCharacters(in: .whitespaces)) }
                guard !parsed.isEmpty, parsed.allSatisfy({ $0.map { (1...1_000_000).contains($0) } ?? false }) else {
                    throw BenchError.usage("--sizes needs whole numbers from 1 to 1000000, joined by commas")
                }
                sizes = parsed.compactMap { $0 }
            case "--tpm-sample": tpmSample = try BenchOptions.count(argument, rest.popFirst(), minimum: 1)
            case "--block": block = try BenchOptions.count(argument, rest.popFirst(), minimum: 1)
            case "--json": json = true
            case "-h", "--help": throw BenchError.usage(nil)
            default: throw BenchError.usage("unknown argument '\(argument)'")
            }
        }
    }
}

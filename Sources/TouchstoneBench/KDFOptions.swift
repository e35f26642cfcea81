/// The command line of `TouchstoneBench kdf`.
///
///     TouchstoneBench kdf [--rounds N] [--batch N] [--tpm-batch N] [--json]
struct KDFOptions {
    /// Interleaved rounds; each Argon2id level runs once per round.
    var rounds = 30
    /// Shipped (salted BLAKE2b) derivations per round, each timed.
    var batch = 200
    /// TPM passcode unseals per round, each timed.
    var tpmBatch = 10
    /// Untimed rounds first.
    var warmup = 2
    var json = false

    static let usage = """
        usage: TouchstoneBench kdf [--rounds N] [--batch N] [--tpm-batch N] [--warmup N] [--json]

        Times the passcode KDF as shipped (PasscodeAuth(passcode:) then .salted(with:),
        keyed BLAKE2b-256) beside libsodium's Argon2id13 (crypto_pwhash) at its MIN,
        INTERACTIVE and MODERATE limits, and, for scale, one TPM passcode unseal of a
        scheme 2 blob on a private swtpm, all interleaved in one run: median, p95 and max
        wall time, and the peak memory one derivation adds.

          --rounds N     interleaved rounds; each Argon2id level runs once per round (default 30)
          --batch N      salted BLAKE2b derivations per round (default 200)
          --tpm-batch N  TPM passcode unseals per round (default 10)
          --warmup N     untimed rounds first (default 2)
          --json         machine-readable output
        """

    /// Parses `arguments` (after `kdf`).
    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--rounds": rounds = try BenchOptions.count(argument, rest.popFirst(), minimum: 1)
            case "--batch": batch = try BenchOptions.count(argument, rest.popFirst(), minimum: 1)
            case "--tpm-batch": tpmBatch = try BenchOptions.count(argument, rest.popFirst(), minimum: 1)
            case "--warmup": warmup = try BenchOptions.count(argument, rest.popFirst(), minimum: 0)
            case "--json": json = true
            case "-h", "--help": throw BenchError.usage(nil)
            default: throw BenchError.usage("unknown argument '\(argument)'")
            }
        }
    }
}

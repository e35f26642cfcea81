/// The command line of `TouchstoneBench kdf`.
///
///     TouchstoneBench kdf [--rounds N] [--batch N] [--tpm-batch N] [--warmup N] [--argon2id OPS,MIB]... [--json]
struct KDFOptions {
    /// Interleaved rounds; each Argon2id level runs once per round.
    var rounds = 30
    /// Shipped (salted BLAKE2b) derivations per round, each timed.
    var batch = 200
    /// TPM passcode unseals per round, each timed.
    var tpmBatch = 10
    /// Untimed rounds first.
    var warmup = 2
    /// Further Argon2id13 settings to time beside libsodium's named ones.
    var extraArgon2id: [(ops: Int, mebibytes: Int)] = []
    var json = false

    static let usage = """
        usage: TouchstoneBench kdf [--rounds N] [--batch N] [--tpm-batch N] [--warmup N] [--argon2id OPS,MIB]... [--json]

        Times the passcode KDF as shipped (PasscodeAuth(passcode:) then .salted(with:),
        keyed BLAKE2b-256) beside libsodium's Argon2id13 (crypto_pwhash) at its MIN,
        INTERACTIVE and MODERATE limits, and, for scale, one TPM passcode unseal of a
        scheme 2 blob on a private swtpm, all interleaved in one run: median, p95 and max
        wall time, and the peak memory one derivation adds.

          --rounds N          interleaved rounds; each Argon2id setting runs once per round (default 30)
          --batch N           salted BLAKE2b derivations per round (default 200)
          --tpm-batch N       TPM passcode unseals per round (default 10)
          --warmup N          untimed rounds first (default 2)
          --argon2id OPS,MIB  also Argon2id13 at opslimit OPS (1-10), memlimit MIB MiB (1-1024);
                              may be given more than once
          --json              machine-readable output
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
            case "--argon2id":
                let parts = (rest.popFirst() ?? "").split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
                guard parts.count == 2, let ops = parts[0], let mib = parts[1], (1...10).contains(ops), (1...1024).contains(mib) else {
                    throw BenchError.usage("--argon2id needs OPS,MIB: an opslimit from 1 to 10 and a memlimit from 1 to 1024 MiB")
                }
                extraArgon2id.append((ops, mib))
            case "--json": json = true
            case "-h", "--help": throw BenchError.usage(nil)
            default: throw BenchError.usage("unknown argument '\(argument)'")
            }
        }
    }
}

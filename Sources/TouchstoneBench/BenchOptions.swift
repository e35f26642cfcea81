/// The command line of `TouchstoneBench` (or `TouchstoneBench tpm`), the
/// TPM unseal suite.
///
///     TouchstoneBench [tpm] [--iterations N] [--tool-iterations N] [--warmup N] [--json]
struct BenchOptions {
    /// Timed unseals per branch through the TPM module.
    var iterations = 200
    /// Timed unseal sequences per branch through tpm2-tools processes.
    var toolIterations = 20
    /// Untimed unseals per branch before the timed ones (the tool sequence
    /// gets a tenth of them, at least one).
    var warmup = 20
    /// Print one JSON document instead of the table.
    var json = false

    static let usage = """
        usage: TouchstoneBench [tpm] [--iterations N] [--tool-iterations N] [--warmup N] [--json]

        Starts a private swtpm, seals a 32-byte key as scheme 2 seals class keys
        (biometric: enrolment counter <= n, optionally with PCR 7; passcode:
        PolicyAuthValue + passcode counter <= m, salted authValue) and, for comparison,
        as the first release did (PolicyOR over an enrolment index), then times unseals
        with the TPM module and with the same sequence of tpm2-tools commands, and
        counts the TPM commands per unseal.

          --iterations N       timed unseals per branch (default 200)
          --tool-iterations N  timed tpm2-tools sequences per branch (default 20)
          --warmup N           untimed unseals per branch first (default 20)
          --json               machine-readable output
        """

    /// Parses `arguments` (without the program name).
    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--iterations": iterations = try Self.count(argument, rest.popFirst(), minimum: 1)
            case "--tool-iterations": toolIterations = try Self.count(argument, rest.popFirst(), minimum: 1)
            case "--warmup": warmup = try Self.count(argument, rest.popFirst(), minimum: 0)
            case "--json": json = true
            case "-h", "--help": throw BenchError.usage(nil)
            default: throw BenchError.usage("unknown argument '\(argument)'")
            }
        }
    }

    /// A whole-number option value from `minimum` to 1,000,000 (shared by
    /// every suite's options).
    static func count(_ option: String, _ value: String?, minimum: Int) throws -> Int {
        guard let value, let n = Int(value), n >= minimum, n <= 1_000_000 else {
            throw BenchError.usage("\(option) needs a whole number from \(minimum) to 1000000")
        }
        return n
    }
}

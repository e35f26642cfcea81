import Testing
import TouchstoneCommandLine

/// A small deterministic generator (SplitMix64), so a failing junk input
/// can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Junk never traps, and results keep their promises")
struct RobustnessTests {
    /// Words that reach deep into the parser.
    static let vocabulary = [
        "status", "passcode", "set", "change", "remove", "--yes", "enroll", "unenroll", "--all", "fingers", "verify",
        "--allow-passcode", "add", "get", "update", "delete", "list", "--service", "sim", "start", "stop", "touch",
        "retry", "error", "unplug", "demo", "help", "--access", "--label", "--comment", "--reason", "--count", "--wait",
        "--home", "--tpm", "--reader", "--sim", "--timeout", "--passcode-fd", "--json", "-h", "--help", "--version",
        "--", "-", "", "=", "--=", "--home=", "--access=none|passcode", "biometry-any&passcode", "left-thumb",
        "0", "-1", "3600", "3601", "0.5", "1e9", "too-short", "busy", "257", "\u{0}", "\u{FFFD}", "\u{202E}",
    ]

    /// A random argument: a vocabulary word, random scalars, or rarely a
    /// long run.
    static func junkArgument(_ random: inout SplitMix64) -> String {
        switch random.next() % 10 {
        case 0...5:
            return vocabulary[Int(random.next() % UInt64(vocabulary.count))]
        case 6...8:
            let length = Int(random.next() % 12)
            var text = String.UnicodeScalarView()
            for _ in 0..<length {
                let candidates: [ClosedRange<UInt32>] = [0...0x7F, 0x80...0x2FF, 0x2000...0x206F, 0xFFF0...0xFFFF, 0x1F300...0x1F6FF]
                let range = candidates[Int(random.next() % UInt64(candidates.count))]
                let value = range.lowerBound + UInt32(random.next() % UInt64(range.count))
                text.append(Unicode.Scalar(value) ?? "?")
            }
            return String(text)
        default:
            return String(repeating: "é", count: Int(random.next() % 3000))
        }
    }

    /// A random environment.
    static func junkEnvironment(_ random: inout SplitMix64) -> [String: String] {
        var environment: [String: String] = [:]
        for name in ["HOME", "XDG_DATA_HOME", "TOUCHSTONE_HOME", "TOUCHSTONE_TPM", "TOUCHSTONE_READER", "TOUCHSTONE_SIM", "TOUCHSTONE_TIMEOUT"]
        where random.next() % 3 == 0 {
            environment[name] = random.next() % 2 == 0 ? "/" + junkArgument(&random) : junkArgument(&random)
        }
        return environment
    }

    /// Whether text holds a scalar that messages and names must never
    /// carry raw.
    static func hasUnsafeScalar(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0xFFFD: true
            default: false
            }
        }
    }

    /// Checks the promises of one result.
    static func checkPromises(_ result: ParseResult, _ arguments: [String]) {
        switch result {
        case .usageError(let message, let usage):
            #expect(!message.isEmpty)
            #expect(!hasUnsafeScalar(message), "raw unsafe character in: \(message.debugDescription)")
            #expect(message.utf8.count < 1200)
            #expect(usage.hasPrefix("touchstone"))
            #expect(!usage.contains("\n"))
        case .help(let text):
            #expect(text.hasPrefix("OVERVIEW: "))
        case .version(let line):
            #expect(line.hasPrefix("touchstone "))
        case .run(let command, let options):
            #expect(!options.home.isEmpty)
            #expect(options.timeout > .zero && options.timeout <= .seconds(3600))
            let texts: [String]
            switch command {
            case .add(let service, let account, _, let label, let comment):
                texts = [service, account, label ?? "", comment ?? ""]
            case .get(let service, let account, let reason):
                texts = [service, account, reason ?? ""]
            case .update(let service, let account), .delete(let service, let account):
                texts = [service, account]
            case .list(let service):
                texts = [service ?? ""]
            case .sim(.touch(let id, let count, let wait)):
                texts = [id]
                #expect((1...1000).contains(count))
                #expect(wait > .zero && wait <= .seconds(3600))
            default:
                texts = []
            }
            for text in texts {
                #expect(text.utf8.count <= 1024)
                #expect(!hasUnsafeScalar(text))
            }
        }
    }

    @Test("random argument lists and environments", arguments: 0..<8)
    func junk(_ batch: Int) {
        var random = SplitMix64(state: UInt64(batch) &* 0x1234_5678_9ABC_DEF1)
        for _ in 0..<1500 {
            let count = Int(random.next() % 9)
            let arguments = (0..<count).map { _ in Self.junkArgument(&random) }
            let environment = random.next() % 4 == 0 ? Self.junkEnvironment(&random) : baseEnvironment
            let result = CommandLineParser.parse(arguments: arguments, environment: environment)
            Self.checkPromises(result, arguments)
        }
    }

    @Test("every command followed by junk", arguments: allCommandPaths)
    func commandThenJunk(_ path: [String]) {
        var random = SplitMix64(state: UInt64(path.joined().utf8.count) &+ 99)
        for _ in 0..<300 {
            let arguments = path + (0..<Int(random.next() % 5)).map { _ in Self.junkArgument(&random) }
            Self.checkPromises(parse(arguments), arguments)
        }
    }

    @Test("a hundred thousand arguments")
    func manyArguments() {
        #expect(run(["status"] + Array(repeating: "--json", count: 100_000))?.0 == .status)
        #expect(usageError(["status"] + Array(repeating: "x", count: 100_000))?.message == "unexpected argument 'x'")
        #expect(usageError(Array(repeating: "--home", count: 100_001))?.message == "missing value for '--home <dir>'")
    }

    @Test("empty strings in every position")
    func emptyStrings() {
        for path in allCommandPaths {
            for count in 1...3 {
                Self.checkPromises(parse(path + Array(repeating: "", count: count)), path)
                Self.checkPromises(parse(Array(repeating: "", count: count) + path), path)
            }
        }
    }
}

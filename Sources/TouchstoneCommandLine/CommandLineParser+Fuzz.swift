#if TOUCHSTONE_TEST_SUPPORT
/// The body of the `CommandLine` fuzz target, here so that the libFuzzer
/// entry (fuzz/CommandLine.swift, built by scripts/fuzz) and the regression
/// test that replays every committed input (CommandLineTests,
/// FuzzReplayTests) run the very same code.
extension CommandLineParser {
    /// Splits `bytes` at NUL bytes into arguments (invalid UTF-8 becomes
    /// U+FFFD, as argv does) and parses them, once with the first argument
    /// as the TOUCHSTONE_TIMEOUT value and once as they are. Parsing never
    /// traps. Returns nil, or the promise a result broke: a usage error has
    /// a one-line message without raw control, bidirectional or replacement
    /// characters; the names a command carries have none either and fit
    /// their limit.
    static func fuzzCheck(_ bytes: [UInt8]) -> String? {
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        var environment = ["HOME": "/home/fuzz"]
        if let first = arguments.first { environment["TOUCHSTONE_TIMEOUT"] = first }
        for result in [parse(arguments: Array(arguments.dropFirst()), environment: environment),
                       parse(arguments: arguments, environment: [:])] {
            if let broken = brokenPromise(result) { return broken }
        }
        return nil
    }

    static func brokenPromise(_ result: ParseResult) -> String? {
        func unsafe(_ text: String) -> Bool { text.unicodeScalars.contains(where: TextRules.isUnsafe) }
        switch result {
        case .usageError(let message, let usage):
            if message.isEmpty || unsafe(message) || !usage.hasPrefix("touchstone") || unsafe(usage) {
                return "a usage error that breaks the message rules: \(message.debugDescription)"
            }
        case .run(let command, _):
            let texts: [String]
            switch command {
            case .add(let service, let account, _, let label, let comment): texts = [service, account, label ?? "", comment ?? ""]
            case .get(let service, let account, let reason): texts = [service, account, reason ?? ""]
            case .update(let service, let account), .delete(let service, let account): texts = [service, account]
            case .list(let service): texts = [service ?? ""]
            default: texts = []
            }
            if let bad = texts.first(where: { unsafe($0) || $0.utf8.count > TextRules.maximumTextBytes }) {
                return "a command carries a name that breaks the text rules: \(bad.debugDescription)"
            }
        case .help, .version: break
        }
        return nil
    }
}
#endif

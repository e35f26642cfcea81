import Testing
import TouchstoneCommandLine

/// An environment with only HOME set, so defaults are predictable.
let baseEnvironment = ["HOME": "/home/tester"]

/// Parses with `baseEnvironment` unless told otherwise.
func parse(_ arguments: [String], environment: [String: String] = baseEnvironment) -> ParseResult {
    CommandLineParser.parse(arguments: arguments, environment: environment)
}

/// The command and options of a `.run` result; records an issue otherwise.
func run(_ arguments: [String], environment: [String: String] = baseEnvironment,
         sourceLocation: SourceLocation = #_sourceLocation) -> (Command, GlobalOptions)? {
    let result = parse(arguments, environment: environment)
    guard case .run(let command, let options) = result else {
        Issue.record("expected .run for \(arguments), got \(result)", sourceLocation: sourceLocation)
        return nil
    }
    return (command, options)
}

/// The message and usage line of a `.usageError` result; records an issue
/// otherwise.
func usageError(_ arguments: [String], environment: [String: String] = baseEnvironment,
                sourceLocation: SourceLocation = #_sourceLocation) -> (message: String, usage: String)? {
    let result = parse(arguments, environment: environment)
    guard case .usageError(let message, let usage) = result else {
        Issue.record("expected .usageError for \(arguments.map { String($0.prefix(40)) }), got \(String(describing: result).prefix(300))",
                     sourceLocation: sourceLocation)
        return nil
    }
    return (message, usage)
}

/// The text of a `.help` result; records an issue otherwise.
func helpText(_ arguments: [String], environment: [String: String] = baseEnvironment,
              sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    let result = parse(arguments, environment: environment)
    guard case .help(let text) = result else {
        Issue.record("expected .help for \(arguments), got \(result)", sourceLocation: sourceLocation)
        return nil
    }
    return text
}

/// Every command path of the contract (plus `demo` and `help`), written out
/// here rather than read from the table, so a command missing from the
/// table fails the tests.
let allCommandPaths: [[String]] = [
    [], ["status"], ["passcode"], ["passcode", "set"], ["passcode", "change"], ["passcode", "remove"],
    ["enroll"], ["unenroll"], ["fingers"], ["verify"], ["matching"], ["add"], ["get"], ["update"], ["delete"], ["list"], ["import"],
    ["secret-service"], ["sim"], ["sim", "start"], ["sim", "stop"], ["sim", "status"], ["sim", "touch"], ["sim", "retry"],
    ["sim", "error"], ["sim", "unplug"], ["sim", "print"], ["demo"], ["help"],
    ["ssh-key"], ["ssh-key", "create"], ["ssh-key", "list"], ["ssh-key", "delete"], ["ssh-key", "sign"], ["ssh-agent"], ["fido"], ["fido", "list"], ["fido", "delete"], ["fido", "serve"],
    ["doctor"],
]

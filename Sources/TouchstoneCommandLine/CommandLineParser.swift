/// The `touchstone` command line: arguments and environment in, what to do
/// out. Pure: it reads no files and no process state, and it never traps,
/// whatever the input.
///
/// Rules where the contract is silent:
/// - Global options go anywhere before `--`; a command's own options go
///   after the command's name (before it, they are refused with a hint).
/// - An option that takes a value takes the next argument whatever it is,
///   as getopt does (`--label --json` labels the item `--json`), or the
///   part after `=` (`--label=x`).
/// - A repeated option keeps its last value.
/// - After `--`, every argument is positional: `add -- --json acct`.
/// - `-h`/`--help` win over everything else, `--version` over all but
///   help, and both over usage errors; help shows the deepest command named.
/// - `-` alone is positional.
public enum CommandLineParser {
    /// The version `--version` reports.
    public static let version = "0.1.0"

    /// Parses `arguments` (without the program name) against `environment`.
    public static func parse(arguments: [String], environment: [String: String]) -> ParseResult {
        let scanned = ArgumentScanner.scan(arguments)
        let path = scanned.path
        if scanned.wantsHelp {
            if let targets = scanned.helpTargets, !targets.isEmpty,
               case .success(let target) = CommandTable.path(for: targets) {
                return .help(text: HelpFormatter.help(for: target))
            }
            return .help(text: HelpFormatter.help(for: path))
        }
        if scanned.wantsVersion {
            return .version("touchstone \(version)")
        }
        if let error = scanned.firstError {
            return usageError(error, path)
        }
        if let targets = scanned.helpTargets {
            switch CommandTable.path(for: targets) {
            case .success(let target): return .help(text: HelpFormatter.help(for: target))
            case .failure(let error): return usageError(error, path)
            }
        }
        do throws(UsageError) {
            let (command, options) = try build(scanned, environment: environment)
            return .run(command, options)
        } catch {
            return usageError(error, path)
        }
    }

    /// The command and resolved options, once the scan found no error.
    /// Checks, in order: the global options and environment (first, so
    /// that `--timeout help` blames the timeout rather than a missing
    /// command), a command was named, it is not a group, the positional
    /// count, the command's own values, and the rules across them.
    private static func build(_ scanned: ScannedCommandLine,
                              environment: [String: String]) throws(UsageError) -> (Command, GlobalOptions) {
        let options = try scanned.globals.resolved(environment: environment)
        let path = scanned.path
        let description = path[path.count - 1]
        if path.count == 1 {
            throw UsageError("missing command; see 'touchstone help'")
        }
        if description.isGroup {
            let choices = description.subcommands.map(\.name).joined(separator: ", ")
            throw UsageError("'\(CommandTable.displayName(path))' needs a subcommand: \(choices)")
        }
        var arguments: [String: String] = [:]
        var positionals = scanned.positionals[...]
        for argument in description.arguments {
            if let value = positionals.popFirst() {
                arguments[argument.name] = value
            } else if !argument.isOptional {
                throw UsageError("missing argument '<\(argument.name)>'")
            }
        }
        if let extra = positionals.first {
            throw UsageError("unexpected argument \(Quote.value(extra))")
        }
        guard let make = description.make else {
            throw UsageError("'\(CommandTable.displayName(path))' cannot run")
        }
        let command = try make(Invocation(arguments: arguments, options: scanned.options,
                                          flags: scanned.flags, globals: options))
        if case .update = command, options.passcodeFD == 0 {
            throw UsageError("'update' reads the new secret from stdin, so --passcode-fd cannot be 0")
        }
        return (command, options)
    }

    /// A usage error with the usage line of the last command in `path`.
    private static func usageError(_ error: UsageError, _ path: [CommandDescription]) -> ParseResult {
        .usageError(message: error.message, usage: HelpFormatter.usage(for: path))
    }
}

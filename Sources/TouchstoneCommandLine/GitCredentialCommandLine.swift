/// The command line of `git-credential-touchstone` (docs/git.md): git runs
/// it as `git-credential-touchstone [ARGS FROM credential.helper] OPERATION`.
/// Pure, as `CommandLineParser` is: arguments and environment in, what to
/// do out.
///
/// Rules: the global options of `touchstone` (`--sim`, `--home`,
/// `--daemon`, ...) and their environment variables, anywhere before `--`,
/// except `--json` (there is nothing to print as JSON) and `--passcode-fd 0`
/// (stdin carries git's request); its own `--access SPEC` (default
/// `user-presence`); one operation. `get`, `store` and `erase` run; any
/// other word is an operation of a newer git, which gitcredentials(7) asks
/// helpers to ignore silently (`.ignore`).
public enum GitCredentialCommandLine {
    /// The program's name, as git spells it.
    public static let programName = "git-credential-touchstone"

    /// What git asks.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        case get, store, erase
    }

    /// What the command line asks for.
    public enum ParseResult: Sendable, Hashable {
        /// Run `operation`; `access` is what a stored item takes to read.
        case run(Operation, access: AccessControl, options: GlobalOptions)
        /// An operation this helper does not know: exit 0, reading and
        /// printing nothing.
        case ignore(String)
        /// Print the text to stdout, exit 0.
        case help(text: String)
        /// Print the version line to stdout, exit 0.
        case version(String)
        /// `touchstone: error: <message>`, then `usage: <usage>`, on stderr; exit 64.
        case usageError(message: String, usage: String)
    }

    static let access = OptionDescription(
        names: ["--access"], valueName: "spec",
        help: "What an item that 'store' adds or replaces takes to read back.",
        defaultValue: "user-presence")

    /// The usage line.
    public static let usage = "\(programName) [--access <spec>] [<options>] get|store|erase"

    /// Parses `arguments` (without the program name) against `environment`.
    public static func parse(arguments: [String], environment: [String: String]) -> ParseResult {
        var globals = RawGlobalOptions()
        var accessText: String?
        var positionals: [String] = []
        var firstError: UsageError?
        var wantsHelp = false, wantsVersion = false, literal = false
        var index = arguments.startIndex
        func fail(_ error: UsageError) { if firstError == nil { firstError = error } }

        while index < arguments.endIndex {
            let token = arguments[index]
            index += 1
            if literal || token == "-" || !token.hasPrefix("-") {
                positionals.append(token)
                continue
            }
            if token == "--" {
                literal = true
                continue
            }
            var name = token, inline: String?
            if token.hasPrefix("--"), let equals = token.firstIndex(of: "=") {
                name = String(token[..<equals])
                inline = String(token[token.index(after: equals)...])
            }
            let global = GlobalOption.named(name)
            guard name == access.name || (global != nil && global != .json) else {
                fail(UsageError("unknown option \(Quote.value(name))"))
                continue
            }
            let description = global?.description ?? access
            var value: String?
            if description.takesValue {
                value = inline ?? (index < arguments.endIndex ? arguments[index] : nil)
                if inline == nil && value != nil { index += 1 }
                guard value != nil else {
                    fail(UsageError("missing value for '\(description.name) <\(description.valueName ?? "value")>'"))
                    continue
                }
            } else if inline != nil {
                fail(UsageError("'\(description.name)' takes no value"))
                continue
            }
            switch global {
            case .help?: wantsHelp = true
            case .version?: wantsVersion = true
            case let global?: globals.record(global, value: value)
            case nil: accessText = value
            }
        }
        if wantsHelp { return .help(text: help) }
        if wantsVersion { return .version("\(programName) \(CommandLineParser.version)") }
        do throws(UsageError) {
            if let firstError { throw firstError }
            let options = try globals.resolved(environment: environment)
            if options.passcodeFD == 0 {
                throw UsageError("stdin carries git's request, so --passcode-fd cannot be 0")
            }
            var access = AccessControl.userPresence
            if let accessText {
                do throws(AccessControlSyntaxError) {
                    access = try AccessControl(parsing: accessText)
                } catch {
                    throw UsageError("invalid --access \(Quote.value(accessText)): \(error.description)")
                }
            }
            guard let word = positionals.first else {
                throw UsageError("missing operation: get, store or erase (git gives it)")
            }
            if positionals.count > 1 {
                throw UsageError("unexpected argument \(Quote.value(positionals[1]))")
            }
            guard let operation = Operation(rawValue: word) else { return .ignore(word) }
            return .run(operation, access: access, options: options)
        } catch {
            return .usageError(message: error.message, usage: usage)
        }
    }

    /// One line: what the helper is (OVERVIEW, and the man page's NAME).
    static let abstract = "A git credential helper that keeps passwords in Touchstone's vault."

    /// How git uses it, after OVERVIEW (and the man page's DESCRIPTION).
    static let discussion = """
        git runs it: 'git config --global credential.helper "touchstone --access biometry-any"' \
        makes git run '\(programName) --access biometry-any get|store|erase' with the request \
        on stdin (gitcredentials(7)). 'get' prints the username and password of the item for \
        the protocol, host, path and username asked, after the authentication the item was \
        stored with; 'store' saves them as an item with service \
        'git:<protocol>://<host>[/<path>]' and account the username; 'erase' removes it. \
        See docs/git.md.
        """

    /// Every option the helper takes: its own, then the global ones but --json.
    static var options: [OptionDescription] {
        [access] + GlobalOption.allCases.filter { $0 != .json }.map(\.description)
    }

    /// The text of `--help`.
    static var help: String {
        let rows = options.map { "  \($0.label)\n      \($0.fullHelp)" }
        return """
            OVERVIEW: \(abstract)

            \(discussion)

            USAGE: \(usage)

            OPTIONS:
            \(rows.joined(separator: "\n"))
            """
    }
}

/// The command line of `touchstoned` (docs/daemon.md, the contract's
/// `touchstoned` line). Pure, as `CommandLineParser` is: arguments in, what
/// to do out; help in the same layout as `touchstone`'s, usage errors exit
/// 64 the same way.
public enum TouchstonedCommandLine {
    /// The program's name.
    public static let programName = "touchstoned"

    /// What the daemon runs with.
    public struct Options: Sendable, Hashable {
        /// The daemon's state folder (absolute).
        public var home = "/var/lib/touchstone"
        /// A TCTI string, `sim`, or nil for the default device.
        public var tpm: String?
        /// `auto`, `sim`, a reader id, or nil (automatic).
        public var reader: String?
        /// Where to listen; nil: the socket systemd passes, or the default.
        public var socket: String?
        /// How long a client may stay silent, in seconds.
        public var timeout = 30.0
        /// `--remove-user UID`: delete that uid's vault and gate, and exit.
        public var removeUser: UInt32?

        public init() {}
    }

    /// What the command line asks for.
    public enum ParseResult: Sendable, Hashable {
        case run(Options)
        /// Print the text to stdout, exit 0.
        case help(text: String)
        /// Print the version line to stdout, exit 0.
        case version(String)
        /// `touchstoned: error: <message>`, then `usage: <usage>`, on stderr; exit 64.
        case usageError(message: String, usage: String)
        /// `--check-prints`, the only argument: the daemon's own print
        /// checker (docs/daemon.md, "The print checker"), which the daemon
        /// spawns; internal, not in the help.
        case checkPrints
        /// `--name-programs`, the only argument: the daemon's program
        /// namer (docs/daemon.md, "Log"), which the daemon spawns with
        /// CAP_SYS_PTRACE before it drops that capability; internal, not in
        /// the help.
        case namePrograms
    }

    /// The internal option that runs the print checker.
    public static let checkPrintsOption = "--check-prints"
    /// The internal option that runs the program namer.
    public static let nameProgramsOption = "--name-programs"

    /// The usage line (the contract's synopsis).
    public static let usage = "\(programName) [--home DIR] [--tpm TCTI] [--reader WHICH] [--sim] [--socket PATH] [--timeout SECONDS] | [--home DIR] --remove-user UID"

    static let options: [OptionDescription] = [
        OptionDescription(names: ["--home"], valueName: "dir",
                          help: "The daemon's state folder, one folder per client uid inside (absolute).",
                          defaultValue: "/var/lib/touchstone"),
        OptionDescription(names: ["--tpm"], valueName: "tcti",
                          help: "A tss2 TCTI string, or 'sim' for the swtpm of DIR/sim.", defaultValue: "device:/dev/tpmrm0"),
        OptionDescription(names: ["--reader"], valueName: "which",
                          help: "'auto', 'sim' (the virtual reader at DIR/sim/reader), or a reader id.", defaultValue: "auto"),
        OptionDescription(names: ["--sim"], help: "The same as --tpm sim --reader sim."),
        OptionDescription(names: ["--socket"], valueName: "path",
                          help: "Where to listen; without it, the socket systemd passes (LISTEN_FDS), else the default.",
                          defaultValue: "/run/touchstone/socket"),
        OptionDescription(names: ["--timeout"], valueName: "seconds",
                          help: "How long a client may stay silent: between requests, within a frame, before answering a passcode prompt, reading an answer (more than 0, at most 3600).",
                          defaultValue: "30"),
        OptionDescription(names: ["--remove-user"], valueName: "uid",
                          help: "Delete what the daemon holds for that uid (its vault, gate and passcode throttle) and exit: after the account was deleted, before its uid is given to someone else. Stop the daemon first."),
        OptionDescription(names: ["-h", "--help"], help: "Show help information."),
        OptionDescription(names: ["--version"], help: "Show the version."),
    ]

    /// Parses `arguments` (without the program name).
    public static func parse(arguments: [String]) -> ParseResult {
        if arguments == [checkPrintsOption] { return .checkPrints }
        if arguments == [nameProgramsOption] { return .namePrograms }
        var options = Options()
        var rest = arguments[...]
        do throws(UsageError) {
            func value(_ name: String, inline: String?) throws(UsageError) -> String {
                if let inline {
                    guard !inline.isEmpty else { throw UsageError("missing value for '\(name)'") }
                    return inline
                }
                guard let value = rest.popFirst(), !value.isEmpty else { throw UsageError("missing value for '\(name)'") }
                return value
            }
            while let argument = rest.popFirst() {
                var name = argument, inline: String?
                if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                    name = String(argument[..<equals])
                    inline = String(argument[argument.index(after: equals)...])
                }
                switch name {
                case "--home": options.home = try value(name, inline: inline)
                case "--tpm": options.tpm = try value(name, inline: inline)
                case "--reader": options.reader = try value(name, inline: inline)
                case "--sim":
                    options.tpm = "sim"
                    options.reader = "sim"
                case "--socket": options.socket = try value(name, inline: inline)
                case "--timeout":
                    let text = try value(name, inline: inline)
                    guard let seconds = Double(text), seconds > 0, seconds <= 3600 else {
                        throw UsageError("--timeout needs seconds: more than 0, at most 3600, not \(Quote.value(text))")
                    }
                    options.timeout = seconds
                case "--remove-user":
                    let text = try value(name, inline: inline)
                    guard let uid = UInt32(text) else { throw UsageError("--remove-user needs a uid (a number), not \(Quote.value(text))") }
                    options.removeUser = uid
                case checkPrintsOption, nameProgramsOption:
                    throw UsageError("'\(name)' is internal (the daemon runs it) and takes no other argument")
                case "-h", "--help": return .help(text: help)
                case "--version": return .version("\(programName) \(CommandLineParser.version)")
                default:
                    throw UsageError(argument.hasPrefix("-") ? "unknown option \(Quote.value(name))"
                                                             : "unexpected argument \(Quote.value(argument))")
                }
                if inline != nil && name == "--sim" { throw UsageError("'--sim' takes no value") }
            }
            guard options.home.hasPrefix("/") else { throw UsageError("--home needs an absolute path, not \(Quote.value(options.home))") }
            return .run(options)
        } catch {
            return .usageError(message: error.message, usage: usage)
        }
    }

    /// What the daemon is, for OVERVIEW and the man page's DESCRIPTION.
    static let overview = "Serves Touchstone's daemon engine on a Unix socket: one state folder per client uid under DIR/users, opened with this daemon's TPM and reader. Runs in the foreground as whichever user starts it and logs to stderr; SIGTERM or SIGINT ends it (exit 0). See docs/daemon.md."

    /// The text of `--help`.
    static var help: String {
        [HelpFormatter.wrap("OVERVIEW: " + overview, indent: 0),
         HelpFormatter.wrap("USAGE: " + usage, indent: 7),
         HelpFormatter.section("OPTIONS", options.map { ($0.label, $0.fullHelp) })].joined(separator: "\n\n")
    }
}

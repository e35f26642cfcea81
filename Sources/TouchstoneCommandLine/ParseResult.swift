/// What the command line asks for, and how the caller answers it.
public enum ParseResult: Sendable, Hashable {
    /// Run the command with these options.
    case run(Command, GlobalOptions)
    /// Print `text` (no trailing newline) to stdout and exit 0: `-h`,
    /// `--help`, or `help [COMMAND...]`.
    case help(text: String)
    /// Print the version line to stdout and exit 0: `--version`.
    case version(String)
    /// Print `touchstone: error: <message>` and then `usage: <usage>` to
    /// stderr and exit 64.
    case usageError(message: String, usage: String)

    /// The status the process should exit with for this result, except
    /// `.run`, whose status the command decides (nil).
    public var exitCode: ExitCode? {
        switch self {
        case .run: nil
        case .help, .version: .success
        case .usageError: .usage
        }
    }
}

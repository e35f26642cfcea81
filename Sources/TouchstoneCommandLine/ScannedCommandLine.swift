/// What one pass over the arguments found, before defaults, the
/// environment and the commands' own checks.
struct ScannedCommandLine: Sendable {
    /// The commands named, root first: `[touchstone, sim, touch]`.
    var path: [CommandDescription] = [CommandTable.root]
    /// The words after `help`, when the `help` command was named.
    var helpTargets: [String]?
    /// Positional arguments after the command's name.
    var positionals: [String] = []
    /// The command's own options by long name; the last occurrence wins.
    var options: [String: String] = [:]
    /// The command's own flags by long name.
    var flags: Set<String> = []
    /// The global options as written.
    var globals = RawGlobalOptions()
    /// Whether `-h` or `--help` was given.
    var wantsHelp = false
    /// Whether `--version` was given.
    var wantsVersion = false
    /// The first problem found; scanning goes on so that a later `--help`
    /// still counts.
    var firstError: UsageError?

    /// Keeps `error` unless an earlier one is already kept.
    mutating func fail(_ error: UsageError) {
        if firstError == nil { firstError = error }
    }
}

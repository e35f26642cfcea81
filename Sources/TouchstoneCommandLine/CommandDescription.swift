/// One command in the table that both the parser and the help read, so the
/// two cannot disagree.
struct CommandDescription: Sendable {
    /// The word that selects it: `add`, `touch`.
    let name: String
    /// One line: after OVERVIEW, and in the parent's SUBCOMMANDS.
    let abstract: String
    /// More paragraphs for OVERVIEW, or nil.
    var discussion: String? = nil
    /// Positional arguments, in order.
    var arguments: [ArgumentDescription] = []
    /// The command's own options (the global ones apply as well).
    var options: [OptionDescription] = []
    /// Subcommands; a command with some is a group and runs none itself.
    var subcommands: [CommandDescription] = []
    /// A usage line (after `touchstone <path>`) where the generated one
    /// would mislead, as for `unenroll <finger> | --all`.
    var synopsis: String? = nil
    /// Builds the command from what the parser gathered; nil for groups and
    /// for `help`, which the parser answers itself.
    var make: (@Sendable (Invocation) throws(UsageError) -> Command)? = nil

    /// Whether the command is a group of subcommands.
    var isGroup: Bool { !subcommands.isEmpty }

    /// The subcommand called `name`.
    func subcommand(_ name: String) -> CommandDescription? {
        subcommands.first { $0.name == name }
    }

    /// The command's own option spelled `name`.
    func option(_ name: String) -> OptionDescription? {
        options.first { $0.names.contains(name) }
    }
}

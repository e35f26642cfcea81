/// Renders man pages from the command tables, as `HelpFormatter` renders
/// the help: the same abstracts, discussions, arguments, options, defaults
/// and environment variables, in man(7)'s sections (NAME, SYNOPSIS,
/// DESCRIPTION, OPTIONS, COMMANDS, ENVIRONMENT, EXIT STATUS, FILES, SEE
/// ALSO).
enum ManPageFormatter {
    /// touchstone(1): the global options, then every command and
    /// subcommand in a subsection of its own (`.SS "touchstone sim touch"`)
    /// with its usage line, abstract, discussion, arguments, options and
    /// subcommands.
    static func touchstone(date: String) -> ManPage {
        let root = CommandTable.root
        var lines = header(name: "touchstone", section: 1, date: date, manual: "User Commands")
        lines += [".SH NAME", "touchstone, touchstone\\-cli, touchstone\\-get \\- " + Roff.escape("fingerprint- and TPM-protected secrets for Linux")]
        lines += [".SH SYNOPSIS", synopsis([root])]
        lines += [".SH DESCRIPTION"] + paragraphs(root.abstract) + paragraphs(root.discussion)
        lines += paragraphs("""
            touchstone is a small dispatcher: a get that goes to a daemon runs touchstone-get, which \
            loads no backend; everything else runs touchstone-cli, the whole command. Both sit beside \
            it and take the same arguments; 'touchstone help <command>' prints a command's help.
            """)
        lines += [".SH OPTIONS", "Accepted before or after the command (but before \\-\\-)."]
        lines += GlobalOption.allCases.flatMap { option($0.description) }
        lines += [".SH COMMANDS"] + root.subcommands.flatMap { commandEntries([root, $0]) }
        lines += [".SH ENVIRONMENT"] + HelpFormatter.environmentRows.flatMap { Roff.tagged(Roff.bold($0.0), $0.1) }
        lines += [".SH \"EXIT STATUS\""] + HelpFormatter.exitCodeRows.flatMap { Roff.tagged(Roff.bold($0.0), $0.1) }
        lines += [".SH FILES"]
            + Roff.tagged(Roff.italic("$XDG_DATA_HOME/touchstone"), "The state directory (--home): the vault, and the simulator's state under sim/.")
            + Roff.tagged(Roff.italic("/run/touchstone/socket"), "touchstoned's socket: when it exists, commands go through the daemon.")
            + Roff.tagged(Roff.italic("/etc/touchstone/client.conf"), "engine=daemon: commands on this machine's TPM and reader never fall back to an embedded vault.")
        lines += seeAlso(["touchstoned(8)", "git-credential-touchstone(1)", "secret-tool(1)", "ssh-agent(1)"])
        return ManPage(name: "touchstone", section: 1, source: lines.joined(separator: "\n") + "\n")
    }

    /// The subsection of the last command in `path`, then its
    /// subcommands' subsections.
    private static func commandEntries(_ path: [CommandDescription]) -> [String] {
        let command = path[path.count - 1]
        var lines = [Roff.macro("SS", "touchstone " + CommandTable.displayName(path)), synopsis(path)]
        lines += paragraphs(command.abstract) + paragraphs(command.discussion)
        lines += command.arguments.flatMap { Roff.tagged("<" + Roff.italic($0.name) + ">", $0.help) }
        lines += command.options.flatMap(option)
        lines += command.subcommands.flatMap { Roff.tagged(Roff.bold($0.name), $0.abstract) }
        return lines + command.subcommands.flatMap { commandEntries(path + [$0]) }
    }

    // MARK: Parts every page has

    /// `.TH` and the requests that keep the text as written: no
    /// hyphenation of option names, left-aligned lines.
    static func header(name: String, section: Int, date: String, manual: String) -> [String] {
        [".\\\" Generated from Touchstone's command tables (Sources/TouchstoneCommandLine); do not edit.",
         ".TH \(Roff.escape(name.uppercased())) \(section) \"\(Roff.escape(date))\" \"touchstone \(CommandLineParser.version)\" \"\(manual)\"",
         ".nh", ".ad l"]
    }

    /// The usage line of the last command in `path`, as HelpFormatter
    /// writes it, the command's words in bold.
    private static func synopsis(_ path: [CommandDescription]) -> String {
        let usage = HelpFormatter.usage(for: path)
        let words = path.count <= 1 ? "touchstone" : "touchstone " + CommandTable.displayName(path)
        return Roff.synopsis(command: words, rest: String(usage.dropFirst(words.count + 1)))
    }

    /// `.PP` paragraphs, one per line of `text` (the help's paragraphs);
    /// none for nil. Empty lines only separate.
    static func paragraphs(_ text: String?) -> [String] {
        guard let text else { return [] }
        return text.split(separator: "\n").flatMap { [".PP", Roff.paragraph(String($0))] }
    }

    /// An option as a tagged paragraph: its spellings and value, then the
    /// help with its environment variable and default.
    static func option(_ option: OptionDescription) -> [String] {
        Roff.tagged(Roff.optionTag(option), option.fullHelp)
    }

    /// SEE ALSO: `references` as `name(section)`, the name in bold.
    static func seeAlso(_ references: [String]) -> [String] {
        let entries = references.map { reference -> String in
            let name = reference.prefix { $0 != "(" }
            return Roff.bold(String(name)) + Roff.escape(String(reference.dropFirst(name.count)))
        }
        return [".SH \"SEE ALSO\"", entries.joined(separator: ", "), ".PP",
                Roff.paragraph("Touchstone's documentation: docs/ in its sources, /usr/share/doc/touchstone where a package installed it.")]
    }
}

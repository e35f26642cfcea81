/// Renders help and usage lines from the command table, in
/// swift-argument-parser's layout: OVERVIEW, USAGE, ARGUMENTS, OPTIONS,
/// SUBCOMMANDS (each only where it applies), plus ENVIRONMENT and EXIT
/// CODES at the top level.
enum HelpFormatter {
    /// The width text is wrapped to.
    static let width = 80
    /// The column where descriptions start in ARGUMENTS, OPTIONS,
    /// SUBCOMMANDS and ENVIRONMENT.
    static let descriptionColumn = 26

    /// The usage line of the last command in `path` (root first), without
    /// the `usage: ` prefix.
    static func usage(for path: [CommandDescription]) -> String {
        let command = path.last ?? CommandTable.root
        if path.count <= 1 { return "touchstone [<options>] <subcommand>" }
        let prefix = "touchstone " + CommandTable.displayName(path)
        if command.isGroup { return prefix + " <subcommand>" }
        if let synopsis = command.synopsis { return prefix + " " + synopsis }
        let words = command.arguments.map(\.synopsis) + command.options.map(\.synopsis)
        return words.isEmpty ? prefix : prefix + " " + words.joined(separator: " ")
    }

    /// The full help of the last command in `path` (root first), without a
    /// trailing newline.
    static func help(for path: [CommandDescription]) -> String {
        let command = path.last ?? CommandTable.root
        let isRoot = path.count <= 1
        var sections: [String] = []

        var overview = wrap("OVERVIEW: " + command.abstract, indent: 0)
        if let discussion = command.discussion {
            overview += "\n\n" + discussion.split(separator: "\n", omittingEmptySubsequences: false)
                .map { wrap(String($0), indent: 0) }.joined(separator: "\n")
        }
        sections.append(overview)
        sections.append(wrap("USAGE: " + usage(for: path), indent: 7))

        if !command.arguments.isEmpty {
            sections.append(section("ARGUMENTS", command.arguments.map { ("<\($0.name)>", $0.help) }))
        }

        let globals = GlobalOption.allCases.filter { isRoot || $0 != .version }.map(\.description)
        let options = (command.options + globals).map { ($0.label, $0.fullHelp) }
        sections.append(section("OPTIONS", options))

        if command.isGroup {
            let rows = command.subcommands.map { ($0.name, $0.abstract) }
            let more = isRoot ? "touchstone help <subcommand>" : "touchstone help \(CommandTable.displayName(path)) <subcommand>"
            sections.append(section("SUBCOMMANDS", rows) + "\n\n  See '\(more)' for detailed help.")
        }

        if isRoot {
            sections.append(section("ENVIRONMENT", environmentRows))
            sections.append(section("EXIT CODES", exitCodeRows, column: 8))
        }
        return sections.joined(separator: "\n\n")
    }

    /// The top-level help's ENVIRONMENT: each variable and what it means.
    static var environmentRows: [(String, String)] {
        GlobalOption.allCases.compactMap { option -> (String, String)? in
            let description = option.description
            return description.environment.map { ($0, "The same as \(description.name).") }
        } + [("XDG_DATA_HOME, HOME", "Where the default state directory is.")]
    }

    /// The top-level help's EXIT CODES: each code and what it means.
    static var exitCodeRows: [(String, String)] {
        ExitCode.allCases.map { (String($0.rawValue), $0.meaning) }
    }

    /// A titled list of label/description rows.
    static func section(_ title: String, _ rows: [(String, String)], column: Int = descriptionColumn) -> String {
        ([title + ":"] + rows.map { row($0.0, $0.1, column: column) }).joined(separator: "\n")
    }

    /// One row: the label indented by two, the description from `column`
    /// (on the next line when the label reaches it), wrapped.
    private static func row(_ label: String, _ text: String, column: Int) -> String {
        let head = "  " + label
        let pad = String(repeating: " ", count: column)
        let lines = lines(of: text, width: width - column)
        let rest = lines.dropFirst().map { "\n" + pad + $0 }.joined()
        if head.count + 2 <= column {
            return head + String(repeating: " ", count: column - head.count) + lines[0] + rest
        }
        return head + "\n" + pad + lines[0] + rest
    }

    /// `text` wrapped at spaces to `width`, every line after the first
    /// indented by `indent`.
    static func wrap(_ text: String, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        let wrapped = lines(of: text, firstWidth: width, width: width - indent)
        return wrapped.enumerated().map { $0.offset == 0 ? $0.element : pad + $0.element }.joined(separator: "\n")
    }

    /// `text` cut at spaces into lines of at most `width` characters (the
    /// first at most `firstWidth`); a longer word gets a line of its own.
    /// Always at least one line.
    private static func lines(of text: String, firstWidth: Int? = nil, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            let limit = lines.isEmpty ? (firstWidth ?? width) : width
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= limit {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        lines.append(line)
        return lines
    }
}

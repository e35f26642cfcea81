/// What the parser gathered for one command, handed to its `make` closure:
/// arguments by name, options by long name (the last occurrence wins), and
/// the resolved global options.
struct Invocation: Sendable {
    /// Positional values by argument name; absent when not given.
    var arguments: [String: String] = [:]
    /// Option values by long name; absent when not given.
    var options: [String: String] = [:]
    /// Flags given, by long name.
    var flags: Set<String> = []
    /// The global options, resolved.
    var globals: GlobalOptions

    /// The argument `<name>`, checked as text (see `TextRules`).
    func text(_ name: String) throws(UsageError) -> String? {
        guard let value = arguments[name] else { return nil }
        return try TextRules.checked(value, "<\(name)>")
    }

    /// The option's value, checked as text (see `TextRules`).
    func optionText(_ name: String, allowEmpty: Bool = false) throws(UsageError) -> String? {
        guard let value = options[name] else { return nil }
        return try TextRules.checked(value, name, allowEmpty: allowEmpty)
    }

    /// Whether the flag was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The required argument `<name>`, checked as text. The parser has
    /// already refused a command line without it; the error here only
    /// guards against a table that names an argument it does not declare.
    func requiredText(_ name: String) throws(UsageError) -> String {
        guard let value = try text(name) else { throw UsageError("missing argument '<\(name)>'") }
        return value
    }
}

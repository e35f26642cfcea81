/// What the parser gathered for one command, handed to its `make` closure:
/// arguments and options read by their descriptions (an option's last
/// occurrence wins), and the resolved global options.
struct Invocation: Sendable {
    /// Positional values by argument name; absent when not given.
    private let arguments: [String: String]
    /// Option values by long name; absent when not given.
    private let options: [String: String]
    /// Flags given, by long name.
    private let flags: Set<String>
    /// The global options, resolved.
    var globals: GlobalOptions

    init(arguments: [String: String], options: [String: String], flags: Set<String>, globals: GlobalOptions) {
        self.arguments = arguments
        self.options = options
        self.flags = flags
        self.globals = globals
    }

    /// The argument's value as given; nil when it was left out.
    func value(_ argument: ArgumentDescription) -> String? { arguments[argument.name] }

    /// The option's value as given; nil when it was not given.
    func value(_ option: OptionDescription) -> String? { options[option.name] }

    /// The argument, checked as text (see `TextRules`).
    func text(_ argument: ArgumentDescription) throws(UsageError) -> String? {
        guard let value = value(argument) else { return nil }
        return try TextRules.checked(value, "<\(argument.name)>")
    }

    /// The option's value, checked as text (see `TextRules`).
    func optionText(_ option: OptionDescription, allowEmpty: Bool = false) throws(UsageError) -> String? {
        guard let value = value(option) else { return nil }
        return try TextRules.checked(value, option.name, allowEmpty: allowEmpty)
    }

    /// Whether the flag was given.
    func flag(_ option: OptionDescription) -> Bool { flags.contains(option.name) }

    /// The required argument, checked as text. The parser has already
    /// refused a command line without it; the error here only guards
    /// against a table that reads an argument the command does not declare.
    func requiredText(_ argument: ArgumentDescription) throws(UsageError) -> String {
        guard let value = try text(argument) else { throw UsageError("missing argument '<\(argument.name)>'") }
        return value
    }
}

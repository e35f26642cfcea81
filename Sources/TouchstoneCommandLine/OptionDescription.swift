/// One option of a command (or a global one), for the parser and the help.
struct OptionDescription: Sendable {
    /// Every spelling, the long one last: `["-h", "--help"]`.
    let names: [String]
    /// The value's name, shown as `<value>`; nil for a flag.
    var valueName: String? = nil
    /// One or two sentences for OPTIONS.
    let help: String
    /// Shown as `(default: ...)` after the help.
    var defaultValue: String? = nil
    /// The environment variable standing in for the option, shown as
    /// `(env: ...)`.
    var environment: String? = nil
    /// Whether the command refuses to run without it (`passcode remove
    /// --yes`).
    var isRequired = false

    /// The long spelling, under which the parser files the value.
    var name: String { names.last ?? "" }

    /// Whether the option takes a value.
    var takesValue: Bool { valueName != nil }

    /// The left column in OPTIONS: `-h, --help`, `--access <spec>`.
    var label: String {
        names.joined(separator: ", ") + (valueName.map { " <\($0)>" } ?? "")
    }

    /// How the option shows in a usage line: `[--access <spec>]`, `--yes`.
    var synopsis: String {
        let body = name + (valueName.map { " <\($0)>" } ?? "")
        return isRequired ? body : "[\(body)]"
    }

    /// The right column in OPTIONS: the help, then default and env.
    var fullHelp: String {
        var notes: [String] = []
        if let environment { notes.append("env: \(environment)") }
        if let defaultValue { notes.append("default: \(defaultValue)") }
        return notes.isEmpty ? help : help + " (" + notes.joined(separator: "; ") + ")"
    }
}

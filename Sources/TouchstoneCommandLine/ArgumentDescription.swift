/// One positional argument of a command, for the parser and the help.
struct ArgumentDescription: Sendable {
    /// The name, shown as `<name>`.
    let name: String
    /// One or two sentences for ARGUMENTS.
    let help: String
    /// Whether the argument may be left out.
    var isOptional = false
    /// Whether it takes every remaining positional (`help`'s only).
    var isRepeating = false

    /// How the argument shows in a usage line: `<name>`, `[<name>]`,
    /// `[<name> ...]`.
    var synopsis: String {
        let name = isRepeating ? "<\(self.name)> ..." : "<\(self.name)>"
        return isOptional ? "[\(name)]" : name
    }
}

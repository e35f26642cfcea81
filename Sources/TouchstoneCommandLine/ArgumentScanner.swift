/// The single left-to-right pass over the arguments: finds the command,
/// sorts options into global and the command's own, and collects
/// positionals. See `CommandLineParser` for the rules.
enum ArgumentScanner {
    /// Scans `arguments` (without the program name).
    static func scan(_ arguments: [String]) -> ScannedCommandLine {
        var scanned = ScannedCommandLine()
        var index = arguments.startIndex
        var literal = false
        var pathBroken = false

        /// The next argument as an option's value, or nil at the end.
        func nextValue() -> String? {
            guard index < arguments.endIndex else { return nil }
            defer { index += 1 }
            return arguments[index]
        }

        while index < arguments.endIndex {
            let token = arguments[index]
            index += 1
            if literal || token == "-" || !token.hasPrefix("-") {
                positional(token, &scanned, &pathBroken)
                continue
            }
            if token == "--" {
                literal = true
                continue
            }
            let (name, inlineValue) = split(token)
            let command = scanned.path[scanned.path.count - 1]
            let description: OptionDescription
            // A command's own option outranks a global one of the same
            // name after the command (`sim start --daemon` is a flag; the
            // global `--daemon PATH` goes before the command there).
            let own = command.option(name)
            let global = own == nil ? GlobalOption.named(name) : nil
            if let own {
                description = own
            } else if let global {
                description = global.description
            } else {
                scanned.fail(unknownOption(name, scanned.path))
                continue
            }
            var value: String?
            if description.takesValue {
                value = inlineValue ?? nextValue()
                if value == nil {
                    scanned.fail(UsageError("missing value for '\(description.name) <\(description.valueName ?? "value")>'"))
                    continue
                }
            } else if inlineValue != nil {
                scanned.fail(UsageError("'\(description.name)' takes no value"))
                continue
            }
            switch global {
            case .help?: scanned.wantsHelp = true
            case .version?: scanned.wantsVersion = true
            case let global?: scanned.globals.record(global, value: value)
            case nil:
                if let value {
                    scanned.options[description.name] = value
                } else {
                    scanned.flags.insert(description.name)
                }
            }
        }
        return scanned
    }

    /// Files a positional argument: a help target, the next command name
    /// while the command named so far has subcommands, else an argument.
    /// After an unknown command name the rest cannot name one.
    private static func positional(_ token: String, _ scanned: inout ScannedCommandLine, _ pathBroken: inout Bool) {
        if scanned.helpTargets != nil {
            scanned.helpTargets?.append(token)
            return
        }
        let command = scanned.path[scanned.path.count - 1]
        guard command.isGroup else {
            scanned.positionals.append(token)
            return
        }
        if pathBroken { return }
        guard let next = command.subcommand(token) else {
            scanned.fail(CommandTable.unknownCommand(token, in: scanned.path))
            pathBroken = true
            return
        }
        scanned.path.append(next)
        if scanned.path.count == 2 && next.name == CommandTable.help.name {
            scanned.helpTargets = []
        }
    }

    /// `--name=value` as name and value; any other option as itself and nil.
    private static func split(_ token: String) -> (String, String?) {
        guard token.hasPrefix("--"), let equals = token.firstIndex(of: "=") else { return (token, nil) }
        return (String(token[..<equals]), String(token[token.index(after: equals)...]))
    }

    /// The error for an option that neither is global nor belongs to the
    /// command named so far, with a hint when another command owns it.
    private static func unknownOption(_ name: String, _ path: [CommandDescription]) -> UsageError {
        let owners = CommandTable.owners(ofOption: name)
        let here = path.count > 1 ? " of '\(CommandTable.displayName(path))'" : ""
        guard !owners.isEmpty else { return UsageError("unknown option \(Quote.value(name))") }
        let quoted = owners.map { "'\($0)'" }
        let list = quoted.count > 1 ? quoted.dropLast().joined(separator: ", ") + " or " + quoted.last! : quoted.joined()
        return UsageError("\(Quote.value(name)) is not an option\(here); it belongs to \(list) and goes after the command's name")
    }
}

import Testing
@testable import TouchstoneCommandLine

@Suite("Help text")
struct HelpTests {
    /// The commands with an ARGUMENTS section.
    static let withArguments: Set<[String]> = [
        ["enroll"], ["unenroll"], ["add"], ["get"], ["update"], ["delete"],
        ["sim", "touch"], ["sim", "retry"], ["sim", "error"], ["sim", "print"], ["help"], ["ssh-key", "create"], ["ssh-key", "delete"], ["ssh-key", "sign"], ["fido", "delete"],
    ]
    /// The commands with a SUBCOMMANDS section.
    static let groups: Set<[String]> = [[], ["passcode"], ["sim"], ["ssh-key"], ["fido"]]

    @Test("help X, X --help, X -h and --help X give the same text", arguments: allCommandPaths)
    func sameText(_ path: [String]) {
        guard let text = helpText(["help"] + path) else { return }
        #expect(helpText(path + ["--help"]) == text)
        #expect(helpText(path + ["-h"]) == text)
        #expect(helpText(["--help"] + path) == text)
        #expect(helpText(["--sim", "--json"] + path + ["-h", "--timeout", "5"]) == text)
    }

    @Test("sections in order, each only where it applies", arguments: allCommandPaths)
    func sections(_ path: [String]) {
        guard let text = helpText(path + ["--help"]) else { return }
        #expect(text.hasPrefix("OVERVIEW: "))
        let usagePrefix = "USAGE: touchstone" + path.map { " " + $0 }.joined()
        #expect(text.contains("\n\n" + usagePrefix + " ") || text.contains("\n\n" + usagePrefix + "\n") || path.isEmpty)
        let order = ["OVERVIEW:", "\nUSAGE:", "\nARGUMENTS:", "\nOPTIONS:", "\nSUBCOMMANDS:"]
        let positions = order.compactMap { text.firstRange(of: $0)?.lowerBound }
        #expect(positions == positions.sorted())
        #expect(text.contains("\nARGUMENTS:\n") == Self.withArguments.contains(path))
        #expect(text.contains("\nSUBCOMMANDS:\n") == Self.groups.contains(path))
        #expect(text.contains("\nOPTIONS:\n"))
        #expect(text.contains("\n  -h, --help "))
        #expect(!text.hasSuffix("\n"))
    }

    @Test("every global option is listed for every command", arguments: allCommandPaths)
    func globals(_ path: [String]) {
        guard let text = helpText(path + ["--help"]) else { return }
        for label in ["--home <dir>", "--tpm <tcti>", "--reader <which>", "--sim", "--timeout <seconds>",
                      "--passcode-fd <n>", "--json", "-h, --help"] {
            #expect(text.contains("\n  " + label + " "), "\(label) missing from help of \(path)")
        }
        #expect(text.contains("\n  --version ") == path.isEmpty)
    }

    @Test("each command's own options and arguments are listed", arguments: [
        (["passcode", "remove"], ["--yes"]),
        (["enroll"], ["<finger>"]),
        (["unenroll"], ["<finger>", "--all"]),
        (["verify"], ["--allow-passcode"]),
        (["add"], ["<service>", "<account>", "--access <spec>", "--label <text>", "--comment <text>"]),
        (["get"], ["<service>", "<account>", "--reason <text>"]),
        (["update"], ["<service>", "<account>"]),
        (["delete"], ["<service>", "<account>"]),
        (["list"], ["--service <service>"]),
        (["sim", "touch"], ["<id>", "--count <n>", "--wait <seconds>"]),
        (["sim", "retry"], ["<kind>"]),
        (["sim", "error"], ["<code>"]),
        (["help"], ["<subcommand>"]),
    ])
    func ownEntries(_ path: [String], _ labels: [String]) {
        guard let text = helpText(["help"] + path) else { return }
        for label in labels {
            #expect(text.contains("\n  " + label + " "), "\(label) missing from help of \(path)")
        }
    }

    @Test("groups list their subcommands", arguments: [
        ([String](), ["status", "passcode", "enroll", "unenroll", "fingers", "verify", "add", "get", "update", "delete", "list", "sim", "demo", "help"]),
        (["passcode"], ["set", "change", "remove"]),
        (["sim"], ["start", "stop", "status", "touch", "retry", "error", "unplug", "print"]),
    ])
    func subcommands(_ path: [String], _ names: [String]) {
        guard let text = helpText(path + ["--help"]) else { return }
        for name in names {
            #expect(text.contains("\n  " + name + " "), "\(name) missing from help of \(path)")
        }
    }

    @Test("the top level shows the exit codes and the environment")
    func topLevel() {
        guard let text = helpText(["--help"]) else { return }
        #expect(helpText(["help"]) == text)
        #expect(helpText(["-h"]) == text)
        #expect(text.contains("\nEXIT CODES:\n"))
        #expect(text.contains("\nENVIRONMENT:\n"))
        for (number, start) in [("0", "success"), ("1", "other failure"), ("2", "authentication failed"), ("3", "cancelled"),
                                ("4", "no usable reader"), ("5", "no finger enrolled"), ("6", "biometry locked out"),
                                ("7", "no passcode set"), ("8", "item not found"), ("9", "item already exists"),
                                ("10", "item invalidated"), ("11", "TPM unreachable"), ("12", "TPM dictionary-attack lockout"),
                                ("13", "stored data corrupted"), ("14", "interaction needed but impossible"), ("64", "usage error")] {
            let label = "\n  " + number + String(repeating: " ", count: 6 - number.count) + start
            #expect(text.contains(label), "exit code \(number) missing")
        }
        for variable in ["TOUCHSTONE_HOME", "TOUCHSTONE_TPM", "TOUCHSTONE_READER", "TOUCHSTONE_SIM=1", "TOUCHSTONE_TIMEOUT", "XDG_DATA_HOME"] {
            #expect(text.contains("\n  " + variable), "\(variable) missing")
        }
    }

    @Test("no help line is wider than 80 columns", arguments: allCommandPaths)
    func width(_ path: [String]) {
        guard let text = helpText(path + ["--help"]) else { return }
        for line in text.split(separator: "\n") {
            #expect(line.count <= 80, "too wide: \(line)")
        }
    }

    @Test("the usage line of an error is the USAGE of the help", arguments: allCommandPaths)
    func usageMatchesHelp(_ path: [String]) {
        guard path != ["help"], let text = helpText(path + ["--help"]),
              let error = usageError(path + ["--no-such-option"]) else { return }
        let flattened = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
        #expect(flattened.contains("USAGE: " + error.usage + " "))
    }

    @Test("help wins over errors and shows the deepest command named")
    func helpWins() {
        let add = helpText(["add", "--help"])
        #expect(add != nil)
        #expect(helpText(["add", "--bogus", "--help"]) == add)
        #expect(helpText(["add", "a", "b", "c", "d", "-h"]) == add)
        #expect(helpText(["frob", "--help"]) == helpText(["--help"]))
        #expect(helpText(["help", "add", "--help"]) == add)
        #expect(helpText(["--help", "--version"]) == helpText(["--help"]))
    }

    @Test("usage lines quoted by the brief")
    func usageLines() {
        // Wrapped at 80 columns: compared with its white space collapsed.
        let touchHelp = (helpText(["help", "sim", "touch"]) ?? "").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(touchHelp.contains("USAGE: touchstone sim touch [<id>] [--count <n>] [--wait <seconds>] [--image <file>] "))
        #expect(helpText(["help", "unenroll"])?.contains("\nUSAGE: touchstone unenroll <finger> | --all\n") == true)
        #expect(helpText(["help", "passcode", "remove"])?.contains("\nUSAGE: touchstone passcode remove --yes\n") == true)
        #expect(helpText(["--help"])?.contains("\nUSAGE: touchstone [<options>] <subcommand>\n") == true)
    }

    @Test("every command in the table is among the paths the tests know")
    func tableCoverage() {
        var paths: [[String]] = []
        func visit(_ command: CommandDescription, _ path: [String]) {
            paths.append(path)
            for child in command.subcommands { visit(child, path + [child.name]) }
        }
        visit(CommandTable.root, [])
        #expect(Set(paths) == Set(allCommandPaths))
        #expect(paths.count == allCommandPaths.count)
    }
}

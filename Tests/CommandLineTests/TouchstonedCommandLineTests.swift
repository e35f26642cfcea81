import Testing
import TouchstoneCommandLine

/// `touchstoned`'s command line, parsed as `touchstone`'s is: the same help
/// layout, usage errors as exit 64 with the usage line.
@Suite("touchstoned's command line")
struct TouchstonedCommandLineTests {
    @Test("the options as given, --sim as --tpm sim --reader sim, --name=value, the defaults")
    func options() {
        guard case .run(let defaults) = TouchstonedCommandLine.parse(arguments: []) else {
            Issue.record("no arguments did not run")
            return
        }
        #expect(defaults.home == "/var/lib/touchstone" && defaults.tpm == nil && defaults.reader == nil && defaults.socket == nil
                && defaults.timeout == 30)
        guard case .run(let given) = TouchstonedCommandLine.parse(arguments: ["--home", "/srv/ts", "--sim", "--socket=/tmp/s",
                                                                              "--timeout", "2.5"]) else {
            Issue.record("valid options did not run")
            return
        }
        #expect(given.home == "/srv/ts" && given.tpm == "sim" && given.reader == "sim" && given.socket == "/tmp/s" && given.timeout == 2.5)
        guard case .run(let device) = TouchstonedCommandLine.parse(arguments: ["--tpm", "device:/dev/tpmrm0", "--reader", "abc"]) else {
            Issue.record("--tpm and --reader did not run")
            return
        }
        #expect(device.tpm == "device:/dev/tpmrm0" && device.reader == "abc")
    }

    @Test("usage errors name what is wrong and give the usage line", arguments: [
        (["--frob"], "unknown option"), (["--home", "relative"], "absolute path"), (["--timeout", "0"], "--timeout needs seconds"),
        (["--timeout", "x"], "--timeout needs seconds"), (["--timeout", "3601"], "at most 3600"), (["--socket"], "missing value"),
        (["--home="], "missing value"), (["stray"], "unexpected argument"), (["--sim=yes"], "takes no value"),
    ])
    func usageErrors(arguments: [String], says: String) {
        guard case .usageError(let message, let usage) = TouchstonedCommandLine.parse(arguments: arguments) else {
            Issue.record("\(arguments) did not fail")
            return
        }
        #expect(message.contains(says), "\(arguments): \(message)")
        #expect(usage == TouchstonedCommandLine.usage && usage.hasPrefix("touchstoned [--home DIR]"))
    }

    @Test("--help: OVERVIEW, USAGE and OPTIONS in touchstone's layout, every option with its default; --version")
    func help() {
        guard case .help(let text) = TouchstonedCommandLine.parse(arguments: ["--timeout", "5", "-h"]) else {
            Issue.record("-h did not give help")
            return
        }
        #expect(text.hasPrefix("OVERVIEW: "))
        #expect(text.contains("\n\nUSAGE: touchstoned [--home DIR]") && text.contains("\n\nOPTIONS:\n  --home <dir>"))
        for option in ["--tpm <tcti>", "--reader <which>", "--sim", "--socket <path>", "--timeout <seconds>", "-h, --help", "--version"] {
            #expect(text.contains("  " + option), "\(option) missing")
        }
        #expect(text.contains("/run/touchstone/socket)") && text.contains("(default: 30)"))
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= 80 }, "a line wider than 80")
        guard case .version(let line) = TouchstonedCommandLine.parse(arguments: ["--version"]) else {
            Issue.record("--version")
            return
        }
        #expect(line.hasPrefix("touchstoned "))
    }

    @Test("an internal mode (the print checker, the program namer) runs alone; with anything else it is a usage error; it is not in the help",
          arguments: [("--check-prints", TouchstonedCommandLine.ParseResult.checkPrints),
                      ("--name-programs", TouchstonedCommandLine.ParseResult.namePrograms)])
    func internalModes(option: String, mode: TouchstonedCommandLine.ParseResult) {
        #expect(TouchstonedCommandLine.parse(arguments: [option]) == mode)
        for arguments in [[option, "--sim"], ["--home", "/srv/ts", option], [option, option]] {
            guard case .usageError(let message, _) = TouchstonedCommandLine.parse(arguments: arguments) else {
                Issue.record("\(arguments) did not fail")
                continue
            }
            #expect(message.contains("'\(option)' is internal"), "\(message)")
        }
        guard case .help(let text) = TouchstonedCommandLine.parse(arguments: ["--help"]) else {
            Issue.record("--help")
            return
        }
        let name = String(option.dropFirst(2))
        #expect(!text.contains(name) && !TouchstonedCommandLine.usage.contains(name))
    }
}

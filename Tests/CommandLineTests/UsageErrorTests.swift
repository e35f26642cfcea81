import Testing
import TouchstoneCommandLine

/// One wrong command line, the message it must give and the usage line.
struct UsageCase: Sendable, CustomTestStringConvertible {
    let arguments: [String]
    let message: String
    let usage: String
    init(_ arguments: [String], _ message: String, _ usage: String) {
        self.arguments = arguments
        self.message = message
        self.usage = usage
    }
    var testDescription: String { arguments.map { String($0.prefix(30)).debugDescription }.joined(separator: " ") }
}

@Suite("Usage errors: message and usage line")
struct UsageErrorTests {
    static let root = "touchstone [<options>] <subcommand>"
    static let add = "touchstone add <service> <account> [--access <spec>] [--label <text>] [--comment <text>]"
    static let get = "touchstone get <service> <account> [--reason <text>]"
    static let touch = "touchstone sim touch [<id>] [--count <n>] [--wait <seconds>] [--image <file>]"
    static let long = String(repeating: "s", count: 1025)

    static let cases: [UsageCase] = [
        UsageCase([], "missing command; see 'touchstone help'", root),
        UsageCase(["--json"], "missing command; see 'touchstone help'", root),
        UsageCase(["frob"], "unknown command 'frob'; the commands are: status, passcode, enroll, unenroll, fingers, verify, matching, add, get, update, delete, list, import, secret-service, ssh-key, ssh-agent, fido, doctor, sim, demo, help", root),
        UsageCase([""], "unknown command ''; the commands are: status, passcode, enroll, unenroll, fingers, verify, matching, add, get, update, delete, list, import, secret-service, ssh-key, ssh-agent, fido, doctor, sim, demo, help", root),
        UsageCase(["-x"], "unknown option '-x'", root),
        UsageCase(["--bogus", "status"], "unknown option '--bogus'", "touchstone status"),
        UsageCase(["passcode"], "'passcode' needs a subcommand: set, change, remove", "touchstone passcode <subcommand>"),
        UsageCase(["passcode", "reset"], "unknown subcommand 'reset' for 'passcode'; use one of: set, change, remove", "touchstone passcode <subcommand>"),
        UsageCase(["passcode", "remove"], "'passcode remove' unenrols every finger and makes every item that needs the passcode or biometry unusable; add --yes to confirm", "touchstone passcode remove --yes"),
        UsageCase(["passcode", "set", "--yes"], "'--yes' is not an option of 'passcode set'; it belongs to 'passcode remove' and goes after the command's name", "touchstone passcode set"),
        UsageCase(["passcode", "set", "now"], "unexpected argument 'now'", "touchstone passcode set"),
        UsageCase(["sim"], "'sim' needs a subcommand: start, stop, status, touch, retry, error, unplug, print", "touchstone sim <subcommand>"),
        UsageCase(["status", "extra"], "unexpected argument 'extra'", "touchstone status"),
        UsageCase(["status", "-"], "unexpected argument '-'", "touchstone status"),
        UsageCase(["status", "--yes=no"], "'--yes' is not an option of 'status'; it belongs to 'passcode remove' and goes after the command's name", "touchstone status"),
        UsageCase(["enroll", "thumb"], "unknown finger 'thumb'; use one of: left-thumb, left-index-finger, left-middle-finger, left-ring-finger, left-little-finger, right-thumb, right-index-finger, right-middle-finger, right-ring-finger, right-little-finger", "touchstone enroll [<finger>]"),
        UsageCase(["enroll", "left-thumb", "right-thumb"], "unexpected argument 'right-thumb'", "touchstone enroll [<finger>]"),
        UsageCase(["enroll", "--all"], "'--all' is not an option of 'enroll'; it belongs to 'unenroll' and goes after the command's name", "touchstone enroll [<finger>]"),
        UsageCase(["unenroll"], "missing argument '<finger>' (or --all)", "touchstone unenroll <finger> | --all"),
        UsageCase(["unenroll", "left-thumb", "--all"], "give a finger or --all, not both", "touchstone unenroll <finger> | --all"),
        UsageCase(["unenroll", "Left-Thumb"], "unknown finger 'Left-Thumb'; use one of: left-thumb, left-index-finger, left-middle-finger, left-ring-finger, left-little-finger, right-thumb, right-index-finger, right-middle-finger, right-ring-finger, right-little-finger", "touchstone unenroll <finger> | --all"),
        UsageCase(["verify", "--allow-passcode=yes"], "'--allow-passcode' takes no value", "touchstone verify [--allow-passcode]"),
        UsageCase(["add"], "missing argument '<service>'", add),
        UsageCase(["add", "s"], "missing argument '<account>'", add),
        UsageCase(["add", "s", "a", "x"], "unexpected argument 'x'", add),
        UsageCase(["add", "s", "a", "--label"], "missing value for '--label <text>'", add),
        UsageCase(["add", "s", "a", "--access"], "missing value for '--access <spec>'", add),
        UsageCase(["add", "s", "a", "--bogus"], "unknown option '--bogus'", add),
        UsageCase(["add", "s", "a", "--json=yes"], "'--json' takes no value", add),
        UsageCase(["--access", "none", "add", "s", "a"], "'--access' is not an option; it belongs to 'add', 'import', 'secret-service', 'ssh-key create' or 'fido serve' and goes after the command's name", root),
        UsageCase(["get", "s", "a", "--access", "none"], "'--access' is not an option of 'get'; it belongs to 'add', 'import', 'secret-service', 'ssh-key create' or 'fido serve' and goes after the command's name", get),
        UsageCase(["add", "", "a"], "<service> must not be empty", add),
        UsageCase(["add", "s", ""], "<account> must not be empty", add),
        UsageCase(["add", long, "a"], "<service> is too long: 1025 bytes, at most 1024 allowed", add),
        UsageCase(["add", "s", String(repeating: "é", count: 513)], "<account> is too long: 1026 bytes, at most 1024 allowed", add),
        UsageCase(["add", "s\u{0}x", "a"], "<service> must not contain a NUL byte", add),
        UsageCase(["add", "s\nx", "a"], "<service> must not contain a control character (U+000A)", add),
        UsageCase(["add", "s", "a\u{1B}[31m"], "<account> must not contain a control character (U+001B)", add),
        UsageCase(["add", "s", "a\u{85}"], "<account> must not contain a control character (U+0085)", add),
        UsageCase(["add", "s", "a", "--label", "x\u{7}"], "--label must not contain a control character (U+0007)", add),
        UsageCase(["add", "s", "a", "--comment", long], "--comment is too long: 1025 bytes, at most 1024 allowed", add),
        UsageCase(["add", "s\u{FFFD}", "a"], "<service> is not valid UTF-8 (it contains U+FFFD, the replacement character)", add),
        UsageCase(["add", String(decoding: [0x73, 0xFF, 0xC0], as: UTF8.self), "a"], "<service> is not valid UTF-8 (it contains U+FFFD, the replacement character)", add),
        UsageCase(["add", "gpj.\u{202E}exe", "a"], "<service> must not contain a bidirectional formatting character (U+202E)", add),
        UsageCase(["get", "s"], "missing argument '<account>'", get),
        UsageCase(["get", "s", "a", "--reason", ""], "--reason must not be empty", get),
        UsageCase(["get", "s", "a", "--reason", "a\tb"], "--reason must not contain a control character (U+0009)", get),
        UsageCase(["update", "s"], "missing argument '<account>'", "touchstone update <service> <account>"),
        UsageCase(["delete", "s", "a", "b"], "unexpected argument 'b'", "touchstone delete <service> <account>"),
        UsageCase(["list", "mail"], "unexpected argument 'mail'", "touchstone list [--service <service>]"),
        UsageCase(["list", "--service", ""], "--service must not be empty", "touchstone list [--service <service>]"),
        UsageCase(["list", "--service"], "missing value for '--service <service>'", "touchstone list [--service <service>]"),
        UsageCase(["sim", "touch"], "sim touch needs a finger id (or --image FILE)", touch),
        UsageCase(["sim", "start", "--reader-kind", "camera"], "unknown reader kind 'camera'; use one of: device, storage, image",
                  "touchstone sim start [--reader-kind <kind>] [--daemon] [--fido]"),
        UsageCase(["sim", "touch", "a", "--image", "f.png"], "--image sends one given image: no finger id and no --count with it", touch),
        UsageCase(["sim", "touch", ""], "<id> must not be empty", touch),
        UsageCase(["sim", "touch", "a", "--count", "0"], "--count must be a whole number from 1 to 1000, not '0'", touch),
        UsageCase(["sim", "touch", "a", "--count", "1001"], "--count must be a whole number from 1 to 1000, not '1001'", touch),
        UsageCase(["sim", "touch", "a", "--count", "-1"], "--count must be a whole number from 1 to 1000, not '-1'", touch),
        UsageCase(["sim", "touch", "a", "--wait", "0"], "--wait must be a number of seconds, more than 0 and at most 3600, not '0'", touch),
        UsageCase(["sim", "--count", "2", "touch", "a"], "'--count' is not an option of 'sim'; it belongs to 'sim touch' and goes after the command's name", "touchstone sim <subcommand>"),
        UsageCase(["sim", "retry"], "missing argument '<kind>'", "touchstone sim retry <kind>"),
        UsageCase(["sim", "retry", "sideways"], "unknown retry 'sideways'; use one of: too-short, not-centered, remove-finger, again", "touchstone sim retry <kind>"),
        UsageCase(["sim", "error", "melted"], "unknown reader error 'melted'; use one of: general, not-supported, not-open, already-open, busy, proto, data-invalid, data-not-found, data-full, data-duplicate, removed, too-hot, or its libfprint number", "touchstone sim error <code>"),
        UsageCase(["sim", "error", "10"], "unknown reader error '10'; use one of: general, not-supported, not-open, already-open, busy, proto, data-invalid, data-not-found, data-full, data-duplicate, removed, too-hot, or its libfprint number", "touchstone sim error <code>"),
        UsageCase(["sim", "unplug", "now"], "unexpected argument 'now'", "touchstone sim unplug"),
        UsageCase(["--home"], "missing value for '--home <dir>'", root),
        UsageCase(["status", "--timeout"], "missing value for '--timeout <seconds>'", "touchstone status"),
        UsageCase(["--help=yes"], "'--help' takes no value", root),
        UsageCase(["--timeout", "help"], "--timeout must be a number of seconds, more than 0 and at most 3600, not 'help'", root),
        UsageCase(["sim", "--timeout", "0"], "--timeout must be a number of seconds, more than 0 and at most 3600, not '0'", "touchstone sim <subcommand>"),
        UsageCase(["help", "frob"], "unknown command 'frob'; the commands are: status, passcode, enroll, unenroll, fingers, verify, matching, add, get, update, delete, list, import, secret-service, ssh-key, ssh-agent, fido, doctor, sim, demo, help", "touchstone help [<subcommand> ...]"),
        UsageCase(["help", "sim", "touch", "x"], "'sim touch' has no subcommand 'x'", "touchstone help [<subcommand> ...]"),
        UsageCase(["help", "sim", "poke"], "unknown subcommand 'poke' for 'sim'; use one of: start, stop, status, touch, retry, error, unplug, print", "touchstone help [<subcommand> ...]"),
        UsageCase(["help", "add", "--bogus"], "unknown option '--bogus'", "touchstone help [<subcommand> ...]"),
        UsageCase(["demo", "--fast"], "unknown option '--fast'", "touchstone demo"),
        UsageCase(["frob", "add", "s", "a"], "unknown command 'frob'; the commands are: status, passcode, enroll, unenroll, fingers, verify, matching, add, get, update, delete, list, import, secret-service, ssh-key, ssh-agent, fido, doctor, sim, demo, help", root),
    ]

    @Test(arguments: cases)
    func refused(_ usageCase: UsageCase) {
        guard let error = usageError(usageCase.arguments) else { return }
        #expect(error.message == usageCase.message)
        #expect(error.usage == usageCase.usage)
    }

    @Test("an unsafe or huge value is quoted safely in the message")
    func quoting() {
        let escape = usageError(["\u{1B}]0;pwned\u{7}"])
        #expect(escape?.message.hasPrefix("unknown command '\\u{001B}]0;pwned\\u{0007}'") == true)
        let huge = String(repeating: "x", count: 1_000_000)
        let hugeError = usageError([huge])
        #expect(hugeError?.message.hasPrefix("unknown command '" + String(repeating: "x", count: 48) + "...'") == true)
        #expect((hugeError?.message.utf8.count ?? .max) < 400)
    }

    @Test("a huge service is refused without echoing it")
    func hugeService() {
        let error = usageError(["add", String(repeating: "s", count: 10_000_000), "a"])
        #expect(error?.message == "<service> is too long: 10000000 bytes, at most 1024 allowed")
    }

    @Test("names of exactly 1024 bytes are accepted")
    func limit() {
        let name = String(repeating: "n", count: 1024)
        #expect(run(["add", name, name, "--label", name, "--comment", name])?.0
                == .add(service: name, account: name, access: .userPresence, label: name, comment: name))
        #expect(run(["get", name, "a", "--reason", name])?.0 == .get(service: name, account: "a", reason: name))
        #expect(run(["sim", "touch", name])?.0 == .sim(.touch(id: name, count: 1, wait: .seconds(30))))
    }
}

import Testing
import TouchstoneCommandLine

@Suite("Global options: placement, environment, defaults")
struct GlobalOptionsTests {
    /// Every global option that takes part in `GlobalOptions`, given once.
    static let everyOption = ["--home", "/srv/ts", "--tpm", "mssim:host=localhost", "--reader", "usb-1",
                              "--timeout", "5", "--passcode-fd", "3", "--json"]
    /// What `everyOption` resolves to.
    static let everyOptionResolved = GlobalOptions(home: "/srv/ts", tpm: .tcti("mssim:host=localhost"), reader: .id("usb-1"),
                                                   timeout: .seconds(5), passcodeFD: 3, json: true)

    @Test("accepted before the command, after it, and in between", arguments: [
        everyOption + ["status"],
        ["status"] + everyOption,
        Array(everyOption[0..<4]) + ["status"] + Array(everyOption[4...]),
        ["--json", "--home=/srv/ts", "--tpm=mssim:host=localhost", "status", "--reader=usb-1", "--timeout=5", "--passcode-fd=3"],
    ])
    func placement(_ arguments: [String]) {
        guard let (command, options) = run(arguments) else { return }
        #expect(command == .status)
        #expect(options == Self.everyOptionResolved)
    }

    @Test("accepted between a command's arguments and options")
    func amongArguments() {
        guard let (command, options) = run(["add", "s", "--json", "a", "--label", "L", "--sim"]) else { return }
        #expect(command == .add(service: "s", account: "a", access: .userPresence, label: "L", comment: nil))
        #expect(options.json)
        #expect(options.usesSimulator)
    }

    @Test("defaults with nothing set but HOME")
    func defaults() {
        guard let (_, options) = run(["status"]) else { return }
        #expect(options.home == "/home/tester/.local/share/touchstone")
        #expect(options.tpm == .tcti("device:/dev/tpmrm0"))
        #expect(options.tpm == .default)
        #expect(options.reader == .automatic)
        #expect(options.timeout == .seconds(30))
        #expect(options.passcodeFD == nil)
        #expect(options.json == false)
        #expect(options.usesSimulator == false)
    }

    @Test("default home", arguments: [
        (["HOME": "/home/a"], "/home/a/.local/share/touchstone"),
        (["HOME": "/home/a/"], "/home/a/.local/share/touchstone"),
        (["HOME": "/home/a", "XDG_DATA_HOME": "/data"], "/data/touchstone"),
        (["HOME": "/home/a", "XDG_DATA_HOME": "relative/data"], "/home/a/.local/share/touchstone"),
        (["HOME": "/home/a", "XDG_DATA_HOME": ""], "/home/a/.local/share/touchstone"),
        (["HOME": "/home/a", "XDG_DATA_HOME": "/data", "TOUCHSTONE_HOME": "/ts"], "/ts"),
        (["HOME": "/home/a", "TOUCHSTONE_HOME": ""], "/home/a/.local/share/touchstone"),
        (["TOUCHSTONE_HOME": "relative/ts"], "relative/ts"),
    ])
    func defaultHome(_ environment: [String: String], _ expected: String) {
        #expect(run(["status"], environment: environment)?.1.home == expected)
    }

    @Test("no state directory at all is a usage error", arguments: [
        [String: String](), ["HOME": ""], ["HOME": "relative"], ["XDG_DATA_HOME": "relative"],
    ])
    func noHome(_ environment: [String: String]) {
        #expect(usageError(["status"], environment: environment)?.message.contains("no state directory") == true)
        #expect(run(["--home", "/x", "status"], environment: environment)?.1.home == "/x")
    }

    @Test("each environment variable alone")
    func environmentAlone() {
        let environment = ["HOME": "/home/a", "TOUCHSTONE_HOME": "/env/home", "TOUCHSTONE_TPM": "swtpm:port=2321",
                           "TOUCHSTONE_READER": "sim", "TOUCHSTONE_TIMEOUT": "12.5"]
        guard let (_, options) = run(["status"], environment: environment) else { return }
        #expect(options == GlobalOptions(home: "/env/home", tpm: .tcti("swtpm:port=2321"), reader: .simulator, timeout: .milliseconds(12_500)))
    }

    @Test("the option wins over its environment variable", arguments: [
        (["--home", "/opt"], "TOUCHSTONE_HOME", "/env"),
        (["--tpm", "device:/dev/tpm0"], "TOUCHSTONE_TPM", "sim"),
        (["--reader", "auto"], "TOUCHSTONE_READER", "sim"),
        (["--timeout", "9"], "TOUCHSTONE_TIMEOUT", "99"),
        (["--timeout", "9"], "TOUCHSTONE_TIMEOUT", "not-a-number"),
    ])
    func optionWins(_ option: [String], _ variable: String, _ value: String) {
        var environment = baseEnvironment
        environment[variable] = value
        let withEnvironment = run(["status"] + option, environment: environment)?.1
        let withoutEnvironment = run(["status"] + option)?.1
        #expect(withEnvironment != nil)
        #expect(withEnvironment == withoutEnvironment)
    }

    @Test("--sim is --tpm sim --reader sim")
    func simExpansion() {
        let sim = run(["--sim", "status"])?.1
        let spelled = run(["--tpm", "sim", "--reader", "sim", "status"])?.1
        #expect(sim != nil)
        #expect(sim == spelled)
        #expect(sim?.tpm == .simulator)
        #expect(sim?.reader == .simulator)
        #expect(sim?.usesSimulator == true)
        #expect(run(["status", "--sim"])?.1 == sim)
    }

    @Test("TOUCHSTONE_SIM=1 is --sim and outranks TOUCHSTONE_TPM and TOUCHSTONE_READER")
    func simEnvironment() {
        var environment = baseEnvironment
        environment["TOUCHSTONE_SIM"] = "1"
        #expect(run(["status"], environment: environment)?.1.usesSimulator == true)
        environment["TOUCHSTONE_TPM"] = "device:/dev/tpm0"
        environment["TOUCHSTONE_READER"] = "usb-2"
        #expect(run(["status"], environment: environment)?.1.usesSimulator == true)
        let tpmOption = run(["status", "--tpm", "device:/dev/tpm0"], environment: environment)?.1
        #expect(tpmOption?.tpm == .tcti("device:/dev/tpm0"))
        #expect(tpmOption?.reader == .simulator)
    }

    @Test("TOUCHSTONE_SIM=0 or empty leaves the real devices")
    func simEnvironmentOff() {
        for value in ["0", ""] {
            var environment = baseEnvironment
            environment["TOUCHSTONE_SIM"] = value
            #expect(run(["status"], environment: environment)?.1.usesSimulator == false)
        }
    }

    @Test("TOUCHSTONE_SIM other than 1 or 0 is a usage error", arguments: ["yes", "true", "2", " 1"])
    func simEnvironmentInvalid(_ value: String) {
        var environment = baseEnvironment
        environment["TOUCHSTONE_SIM"] = value
        #expect(usageError(["status"], environment: environment)?.message.hasPrefix("TOUCHSTONE_SIM must be 1 or 0") == true)
    }

    @Test("of --sim and --tpm, the later one decides the TPM")
    func simAndTPMOrder() {
        let simLast = run(["--tpm", "device:/dev/tpm0", "--sim", "status"])?.1
        #expect(simLast?.tpm == .simulator)
        let tpmLast = run(["--sim", "--tpm", "device:/dev/tpm0", "status"])?.1
        #expect(tpmLast?.tpm == .tcti("device:/dev/tpm0"))
        #expect(tpmLast?.reader == .simulator)
        #expect(tpmLast?.usesSimulator == false)
    }

    @Test("a repeated option keeps its last value")
    func lastWins() {
        let options = run(["--timeout", "5", "status", "--timeout", "7", "--home", "/a", "--home", "/b"])?.1
        #expect(options?.timeout == .seconds(7))
        #expect(options?.home == "/b")
    }

    @Test("reader values", arguments: [("auto", ReaderSelection.automatic), ("sim", .simulator), ("usb-1d6b:0002", .id("usb-1d6b:0002"))])
    func readers(_ value: String, _ expected: ReaderSelection) {
        #expect(run(["status", "--reader", value])?.1.reader == expected)
        #expect(expected.description == value)
    }

    @Test("valid timeouts", arguments: [
        ("1", Duration.seconds(1)), ("30", .seconds(30)), ("0.5", .milliseconds(500)), ("0.001", .milliseconds(1)),
        ("2.25", .milliseconds(2250)), ("3600", .seconds(3600)), ("3600.000", .seconds(3600)), ("007", .seconds(7)),
    ])
    func validTimeouts(_ value: String, _ expected: Duration) {
        #expect(run(["status", "--timeout", value])?.1.timeout == expected)
        var environment = baseEnvironment
        environment["TOUCHSTONE_TIMEOUT"] = value
        #expect(run(["status"], environment: environment)?.1.timeout == expected)
    }

    @Test("invalid timeouts are usage errors", arguments: [
        "0", "0.0", "0.0001", "-1", "-0.5", "abc", "", "3601", "3600.001", "1e3", "inf", "nan", "+5", " 5", "5 ",
        "5s", "1.2345", ".5", "5.", "1.2.3", "99999999999999999999", "\u{0663}", "0x10", "１",
    ])
    func invalidTimeouts(_ value: String) {
        let option = usageError(["status", "--timeout", value])
        #expect(option?.message.hasPrefix("--timeout must be a number of seconds, more than 0 and at most 3600") == true)
        #expect(option?.usage == "touchstone status")
        var environment = baseEnvironment
        environment["TOUCHSTONE_TIMEOUT"] = value
        if value.isEmpty {
            #expect(run(["status"], environment: environment)?.1.timeout == .seconds(30))
        } else {
            #expect(usageError(["status"], environment: environment)?.message.hasPrefix("TOUCHSTONE_TIMEOUT must be") == true)
        }
    }

    @Test("valid passcode descriptors", arguments: [("0", Int32(0)), ("3", 3), ("2147483647", Int32.max)])
    func validPasscodeFD(_ value: String, _ expected: Int32) {
        #expect(run(["verify", "--passcode-fd", value])?.1.passcodeFD == expected)
    }

    @Test("invalid passcode descriptors are usage errors", arguments: ["-1", "2147483648", "x", "", "3.0", "99999999999"])
    func invalidPasscodeFD(_ value: String) {
        #expect(usageError(["verify", "--passcode-fd", value])?.message.hasPrefix("--passcode-fd must be a whole number from 0 to 2147483647") == true)
    }

    @Test("update reads the secret from stdin, so --passcode-fd 0 is refused there only")
    func updatePasscodeFromStdin() {
        #expect(usageError(["update", "s", "a", "--passcode-fd", "0"])?.message.contains("--passcode-fd cannot be 0") == true)
        #expect(run(["update", "s", "a", "--passcode-fd", "3"])?.1.passcodeFD == 3)
        #expect(run(["get", "s", "a", "--passcode-fd", "0"])?.1.passcodeFD == 0)
    }

    @Test("empty or unsafe option values are usage errors", arguments: [
        (["--home", ""], "--home must not be empty"),
        (["--tpm", ""], "--tpm must not be empty"),
        (["--reader", ""], "--reader must not be empty"),
        (["--home", "/a\u{0}b"], "--home must not contain a NUL byte"),
        (["--tpm", "device:/dev/tpm0\n"], "--tpm must not contain a control character (U+000A)"),
        (["--home", "/" + String(repeating: "a", count: 4096)], "--home is too long: 4097 bytes, at most 4096 allowed"),
    ])
    func badValues(_ option: [String], _ message: String) {
        #expect(usageError(["status"] + option)?.message == message)
    }

    @Test("invalid environment values are usage errors, named by their variable")
    func badEnvironment() {
        #expect(usageError(["status"], environment: ["HOME": "/h", "TOUCHSTONE_HOME": "/a\u{1B}b"])?.message
                == "TOUCHSTONE_HOME must not contain a control character (U+001B)")
        #expect(usageError(["status"], environment: ["HOME": "/h", "TOUCHSTONE_READER": "r\u{7F}"])?.message
                == "TOUCHSTONE_READER must not contain a control character (U+007F)")
    }
}

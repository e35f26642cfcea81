import Testing
import TouchstoneCommandLine

/// One command line and the command it must give.
struct ParseCase: Sendable, CustomTestStringConvertible {
    let arguments: [String]
    let expected: Command
    init(_ arguments: [String], _ expected: Command) {
        self.arguments = arguments
        self.expected = expected
    }
    var testDescription: String { arguments.joined(separator: " ") }
}

@Suite("Every command parses with its options")
struct CommandParsingTests {
    static let cases: [ParseCase] = [
        ParseCase(["status"], .status),
        ParseCase(["passcode", "set"], .passcode(.set)),
        ParseCase(["passcode", "change"], .passcode(.change)),
        ParseCase(["passcode", "remove", "--yes"], .passcode(.remove)),
        ParseCase(["passcode", "remove", "--yes", "--yes"], .passcode(.remove)),
        ParseCase(["enroll"], .enroll(.rightIndex)),
        ParseCase(["enroll", "left-thumb"], .enroll(.leftThumb)),
        ParseCase(["unenroll", "right-ring-finger"], .unenroll(.finger(.rightRing))),
        ParseCase(["unenroll", "--all"], .unenroll(.all)),
        ParseCase(["fingers"], .fingers),
        ParseCase(["verify"], .verify(allowPasscode: false)),
        ParseCase(["verify", "--allow-passcode"], .verify(allowPasscode: true)),
        ParseCase(["add", "mail", "me@example.org"],
                  .add(service: "mail", account: "me@example.org", access: .userPresence, label: nil, comment: nil)),
        ParseCase(["add", "mail", "me", "--access", "biometry-current-set", "--label", "Mail", "--comment", "work"],
                  .add(service: "mail", account: "me", access: try! AccessControl(parsing: "biometry-current-set"), label: "Mail", comment: "work")),
        ParseCase(["add", "--label=L", "svc", "--access=none", "acct", "--comment", ""],
                  .add(service: "svc", account: "acct", access: .none, label: "L", comment: "")),
        ParseCase(["add", "s", "a", "--access", "passcode|biometry-any"],
                  .add(service: "s", account: "a", access: AccessControl([.biometryAny, .devicePasscode], combination: .any), label: nil, comment: nil)),
        ParseCase(["add", "s", "a", "--label", "a", "--label", "b"],
                  .add(service: "s", account: "a", access: .userPresence, label: "b", comment: nil)),
        ParseCase(["add", "Dienst Ü", "ünïcødé 🔑"],
                  .add(service: "Dienst Ü", account: "ünïcødé 🔑", access: .userPresence, label: nil, comment: nil)),
        ParseCase(["get", "s", "a"], .get(service: "s", account: "a", reason: nil)),
        ParseCase(["get", "s", "a", "--reason", "Unlock the disk"], .get(service: "s", account: "a", reason: "Unlock the disk")),
        ParseCase(["update", "s", "a"], .update(service: "s", account: "a")),
        ParseCase(["delete", "s", "a"], .delete(service: "s", account: "a")),
        ParseCase(["list"], .list(service: nil)),
        ParseCase(["list", "--service", "mail"], .list(service: "mail")),
        ParseCase(["sim", "start"], .sim(.start())),
        ParseCase(["sim", "start", "--daemon"], .sim(.start(daemon: true))),
        ParseCase(["sim", "start", "--fido", "--daemon"], .sim(.start(daemon: true, fido: true))),
        ParseCase(["sim", "start", "--reader-kind", "image"], .sim(.start(readerKind: .image))),
        ParseCase(["sim", "start", "--reader-kind=storage", "--daemon"], .sim(.start(daemon: true, readerKind: .storage))),
        ParseCase(["sim", "touch", "--image", "a.png"], .sim(.touchImage(path: "a.png", wait: .seconds(30)))),
        ParseCase(["import"], .importVault(remove: false)),
        ParseCase(["import", "--remove"], .importVault(remove: true)),
        ParseCase(["secret-service"], .secretService(replace: false, access: .none)),
        ParseCase(["doctor"], .doctor),
        ParseCase(["--sim", "doctor", "--json"], .doctor),
        ParseCase(["secret-service", "--replace", "--access", "biometry-any"], .secretService(replace: true, access: .biometryAny)),
        ParseCase(["--sim", "secret-service", "--access=user-presence"], .secretService(replace: false, access: .userPresence)),
        ParseCase(["--daemon", "/run/x.sock", "sim", "start"], .sim(.start())),
        ParseCase(["sim", "stop"], .sim(.stop)),
        ParseCase(["sim", "status"], .sim(.status)),
        ParseCase(["sim", "touch", "alice"], .sim(.touch(id: "alice", count: 1, wait: .seconds(30)))),
        ParseCase(["sim", "touch", "alice", "--count", "5", "--wait", "2.5"],
                  .sim(.touch(id: "alice", count: 5, wait: .milliseconds(2500)))),
        ParseCase(["--timeout", "7", "sim", "touch", "bob"], .sim(.touch(id: "bob", count: 1, wait: .seconds(7)))),
        ParseCase(["sim", "touch", "bob", "--count", "1000"], .sim(.touch(id: "bob", count: 1000, wait: .seconds(30)))),
        ParseCase(["sim", "error", "busy"], .sim(.error(.busy))),
        ParseCase(["sim", "error", "257"], .sim(.error(.tooHot))),
        ParseCase(["sim", "error", "0"], .sim(.error(.general))),
        ParseCase(["sim", "unplug"], .sim(.unplug)),
        ParseCase(["sim", "print", "alice"], .sim(.print(id: "alice", impression: 1, output: nil))),
        ParseCase(["sim", "print", "alice", "--impression", "7", "--output", "a.png"],
                  .sim(.print(id: "alice", impression: 7, output: "a.png"))),
        ParseCase(["demo"], .demo),
    ]

    @Test(arguments: cases)
    func parses(_ parseCase: ParseCase) {
        guard let (command, _) = run(parseCase.arguments) else { return }
        #expect(command == parseCase.expected)
    }

    @Test("enroll and unenroll take each of fprintd's ten names", arguments: [
        "left-thumb", "left-index-finger", "left-middle-finger", "left-ring-finger", "left-little-finger",
        "right-thumb", "right-index-finger", "right-middle-finger", "right-ring-finger", "right-little-finger",
    ])
    func fingers(_ name: String) throws {
        let finger = try #require(Finger(fprintdName: name))
        #expect(run(["enroll", name])?.0 == .enroll(finger))
        #expect(run(["unenroll", name])?.0 == .unenroll(.finger(finger)))
    }

    @Test("the finger names are exactly fprintd's ten")
    func fingerNames() {
        #expect(Finger.allCases.count == 10)
        #expect(Finger.default.rawValue == "right-index-finger")
    }

    @Test("sim retry takes each kind", arguments: [
        ("too-short", SimulatedRetry.tooShort, 1), ("not-centered", .notCentered, 2),
        ("remove-finger", .removeFinger, 3), ("again", .again, 0),
    ])
    func retry(_ word: String, _ expected: SimulatedRetry, _ code: Int) {
        #expect(run(["sim", "retry", word])?.0 == .sim(.retry(expected)))
        #expect(expected.libfprintCode == code)
    }

    @Test("sim error takes each name and each libfprint number", arguments: [
        ("general", 0), ("not-supported", 1), ("not-open", 2), ("already-open", 3), ("busy", 4), ("proto", 5),
        ("data-invalid", 6), ("data-not-found", 7), ("data-full", 8), ("data-duplicate", 9),
        ("removed", 256), ("too-hot", 257),
    ])
    func readerError(_ name: String, _ number: Int) throws {
        let expected = try #require(SimulatedReaderError(rawValue: name))
        #expect(expected.libfprintCode == number)
        #expect(run(["sim", "error", name])?.0 == .sim(.error(expected)))
        #expect(run(["sim", "error", String(number)])?.0 == .sim(.error(expected)))
    }

    @Test("each command reports its name as typed")
    func names() {
        let expected: [(Command, String)] = [
            (.status, "status"), (.passcode(.set), "passcode set"), (.passcode(.change), "passcode change"),
            (.passcode(.remove), "passcode remove"), (.enroll(.leftThumb), "enroll"), (.unenroll(.all), "unenroll"),
            (.fingers, "fingers"), (.verify(allowPasscode: true), "verify"),
            (.add(service: "s", account: "a", access: .none, label: nil, comment: nil), "add"),
            (.get(service: "s", account: "a", reason: nil), "get"), (.update(service: "s", account: "a"), "update"),
            (.delete(service: "s", account: "a"), "delete"), (.list(service: nil), "list"),
            (.sim(.start()), "sim start"), (.sim(.stop), "sim stop"), (.sim(.status), "sim status"),
            (.sim(.touch(id: "x", count: 1, wait: .seconds(1))), "sim touch"), (.sim(.retry(.again)), "sim retry"),
            (.sim(.error(.busy)), "sim error"), (.sim(.unplug), "sim unplug"), (.sim(.print(id: "a", impression: 1, output: nil)), "sim print"), (.demo, "demo"),
        ]
        for (command, name) in expected {
            #expect(command.name == name)
        }
    }
}

import Testing
import TouchstoneCommandLine

@Suite("--access specs")
struct AccessSpecTests {
    @Test("valid specs and their canonical form", arguments: [
        ("none", [AccessFlag](), AccessSpec.Combination.any, "none"),
        (" none ", [], .any, "none"),
        ("user-presence", [.userPresence], .any, "user-presence"),
        ("biometry-any", [.biometryAny], .any, "biometry-any"),
        ("biometry-current-set", [.biometryCurrentSet], .any, "biometry-current-set"),
        ("passcode", [.devicePasscode], .any, "passcode"),
        ("biometry-any|passcode", [.biometryAny, .devicePasscode], .any, "biometry-any|passcode"),
        ("passcode|biometry-any", [.biometryAny, .devicePasscode], .any, "biometry-any|passcode"),
        ("biometry-current-set|passcode", [.biometryCurrentSet, .devicePasscode], .any, "biometry-current-set|passcode"),
        ("biometry-current-set&passcode", [.biometryCurrentSet, .devicePasscode], .all, "biometry-current-set&passcode"),
        ("passcode & biometry-any", [.biometryAny, .devicePasscode], .all, "biometry-any&passcode"),
    ])
    func valid(_ text: String, _ flags: [AccessFlag], _ combination: AccessSpec.Combination, _ canonical: String) throws {
        let spec = try AccessSpec(parsing: text)
        #expect(spec.flags == flags)
        #expect(spec.combination == combination)
        #expect(spec.description == canonical)
        #expect(try AccessSpec(parsing: spec.description) == spec)
        #expect(run(["add", "s", "a", "--access", text])?.0 == .add(service: "s", account: "a", access: spec, label: nil, comment: nil))
    }

    @Test("invalid specs", arguments: [
        ("", "a flag is missing"),
        ("|", "a flag is missing"),
        ("biometry-any|", "a flag is missing"),
        ("&passcode", "a flag is missing"),
        ("biometry-any||passcode", "a flag is missing"),
        ("biometry-any|passcode&biometry-current-set", "'|' and '&' cannot be mixed"),
        ("passcode|passcode", "'passcode' appears twice"),
        ("passcode&passcode", "'passcode' appears twice"),
        ("none|passcode", "'none' cannot be combined"),
        ("passcode&none", "'none' cannot be combined"),
        ("none|none", "'none' cannot be combined"),
        ("user-presence|passcode", "'user-presence' already means 'biometry-any|passcode'"),
        ("biometry-current-set&user-presence", "'user-presence' already means 'biometry-any|passcode'"),
        ("biometry-any|biometry-current-set", "'biometry-any' and 'biometry-current-set' cannot be combined"),
        ("biometry-any&biometry-current-set", "'biometry-any' and 'biometry-current-set' cannot be combined"),
        ("Passcode", "unknown flag 'Passcode'"),
        ("face-id", "unknown flag 'face-id'"),
        ("biometry-any,passcode", "unknown flag 'biometry-any,passcode'"),
        ("passcode\u{1B}[0m", "unknown flag 'passcode\\u{001B}[0m'"),
    ])
    func invalid(_ text: String, _ fragment: String) {
        #expect {
            _ = try AccessSpec(parsing: text)
        } throws: { error in
            (error as? AccessSpecError)?.description.contains(fragment) == true
        }
        let error = usageError(["add", "s", "a", "--access", text])
        #expect(error?.message.hasPrefix("invalid --access ") == true)
        #expect(error?.message.contains(fragment) == true)
        #expect(error?.usage == "touchstone add <service> <account> [--access <spec>] [--label <text>] [--comment <text>]")
    }

    @Test("the default is user-presence, which expands to biometry-any|passcode")
    func defaultSpec() throws {
        #expect(AccessSpec.default == .userPresence)
        #expect(AccessSpec.default.description == "user-presence")
        #expect(AccessSpec.userPresence.expanded == (try AccessSpec(parsing: "biometry-any|passcode")))
        #expect(AccessSpec.userPresence != (try AccessSpec(parsing: "biometry-any|passcode")))
        #expect(AccessSpec.none.expanded == .none)
        let strict = try AccessSpec(parsing: "biometry-current-set&passcode")
        #expect(strict.expanded == strict)
    }

    @Test("building from flags follows the same rules")
    func fromFlags() throws {
        #expect(try AccessSpec(flags: [], combination: .all) == .none)
        #expect(try AccessSpec(flags: [.devicePasscode], combination: .all).combination == .any)
        #expect(throws: AccessSpecError.self) { try AccessSpec(flags: [.devicePasscode, .devicePasscode], combination: .any) }
        #expect(throws: AccessSpecError.self) { try AccessSpec(flags: [.userPresence, .devicePasscode], combination: .all) }
        #expect(throws: AccessSpecError.self) { try AccessSpec(flags: [.biometryAny, .biometryCurrentSet], combination: .any) }
    }

    @Test("flag words are the contract's")
    func flagWords() {
        #expect(AccessFlag.allCases.map(\.rawValue) == ["user-presence", "biometry-any", "biometry-current-set", "passcode"])
    }
}

@Suite("--access spec length")
struct AccessSpecLengthTests {
    @Test("a spec over 256 bytes is refused before it is split")
    func tooLong() {
        let spec = Array(repeating: "passcode", count: 100_000).joined(separator: "|")
        #expect(usageError(["add", "s", "a", "--access", spec])?.message == "invalid --access '\(String(spec.prefix(48)))...': too long: \(spec.utf8.count) bytes, at most 256 allowed")
        #expect(throws: AccessSpecError.self) { try AccessSpec(parsing: String(repeating: " ", count: 257) + "none") }
        #expect((try? AccessSpec(parsing: String(repeating: " ", count: 252) + "none")) == AccessSpec.none)
    }
}

import Testing
import TouchstoneCommandLine

/// The one access-control grammar (TouchstoneModel's AccessControl), as
/// `--access` reads it: the parser and the vault share it, so a spec means
/// the same, and prints the same, everywhere. `user-presence` is the name
/// of `biometry-any|passcode`: both parse to the same value and print as
/// `user-presence`.
@Suite("--access specs")
struct AccessSpecTests {
    @Test("valid specs and their canonical form", arguments: [
        ("none", [AccessFlag](), AccessControl.Combination.any, "none"),
        (" none ", [], .any, "none"),
        ("user-presence", [.biometryAny, .devicePasscode], .any, "user-presence"),
        ("biometry-any", [.biometryAny], .any, "biometry-any"),
        ("biometry-current-set", [.biometryCurrentSet], .any, "biometry-current-set"),
        ("passcode", [.devicePasscode], .any, "passcode"),
        ("biometry-any|passcode", [.biometryAny, .devicePasscode], .any, "user-presence"),
        ("passcode|biometry-any", [.biometryAny, .devicePasscode], .any, "user-presence"),
        ("biometry-current-set|passcode", [.biometryCurrentSet, .devicePasscode], .any, "biometry-current-set|passcode"),
        ("biometry-current-set&passcode", [.biometryCurrentSet, .devicePasscode], .all, "biometry-current-set&passcode"),
        ("passcode & biometry-any", [.biometryAny, .devicePasscode], .all, "biometry-any&passcode"),
    ])
    func valid(_ text: String, _ flags: [AccessFlag], _ combination: AccessControl.Combination, _ canonical: String) throws {
        let spec = try AccessControl(parsing: text)
        #expect(spec.flags == flags)
        #expect(spec.combination == combination)
        #expect(spec.description == canonical)
        #expect(try AccessControl(parsing: spec.description) == spec)
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
            _ = try AccessControl(parsing: text)
        } throws: { error in
            (error as? AccessControlSyntaxError)?.description.contains(fragment) == true
        }
        let error = usageError(["add", "s", "a", "--access", text])
        #expect(error?.message.hasPrefix("invalid --access ") == true)
        #expect(error?.message.contains(fragment) == true)
        #expect(error?.usage == "touchstone add <service> <account> [--access <spec>] [--label <text>] [--comment <text>]")
    }

    @Test("the default is user-presence, which is biometry-any|passcode")
    func defaultSpec() throws {
        #expect(run(["add", "s", "a"])?.0 == .add(service: "s", account: "a", access: .userPresence, label: nil, comment: nil))
        #expect(AccessControl.userPresence.description == "user-presence")
        #expect(AccessControl.userPresence == (try AccessControl(parsing: "biometry-any|passcode")))
        #expect(AccessControl.userPresence.alternatives == [[.biometryAny], [.devicePasscode]])
        #expect(AccessControl.none.alternatives == [[]])
        let strict = try AccessControl(parsing: "biometry-current-set&passcode")
        #expect(strict.alternatives == [[.biometryCurrentSet, .devicePasscode]])
    }

    @Test("building from flags gives the parsed value; flags are kept once, in canonical order")
    func fromFlags() throws {
        #expect(AccessControl([], combination: .all) == .none)
        #expect(AccessControl([.devicePasscode], combination: .all).combination == .any)
        #expect(AccessControl([.devicePasscode, .devicePasscode], combination: .any) == .devicePasscode)
        #expect(AccessControl([.devicePasscode, .biometryAny], combination: .all) == (try AccessControl(parsing: "biometry-any&passcode")))
        // A record of an earlier release may hold both biometric flags: it still reads, and prints, but
        // the grammar refuses the spec for new items.
        let stored = AccessControl(stored: [.biometryCurrentSet, .biometryAny], combination: .any)
        #expect(stored.description == "biometry-any|biometry-current-set")
        #expect(throws: AccessControlSyntaxError.biometricFlagsCombined) { try AccessControl(parsing: stored.description) }
    }

    @Test("flag words are the contract's")
    func flagWords() {
        #expect(AccessFlag.allCases.map(\.rawValue) == ["biometry-any", "biometry-current-set", "passcode"])
        #expect(AccessControl.userPresence.description == "user-presence")
    }
}

@Suite("--access spec length")
struct AccessSpecLengthTests {
    @Test("a spec over 256 bytes is refused before it is split")
    func tooLong() {
        let spec = Array(repeating: "passcode", count: 100_000).joined(separator: "|")
        #expect(usageError(["add", "s", "a", "--access", spec])?.message == "invalid --access '\(String(spec.prefix(48)))...': too long: \(spec.utf8.count) bytes, at most 256 allowed")
        #expect(throws: AccessControlSyntaxError.self) { try AccessControl(parsing: String(repeating: " ", count: 257) + "none") }
        #expect((try? AccessControl(parsing: String(repeating: " ", count: 252) + "none")) == AccessControl.none)
    }
}

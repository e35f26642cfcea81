import Foundation
import Glibc
import TestRigs
import Testing
import TouchstoneTPM
@testable import TouchstoneVault

/// Scheme 2 through the CLI on the simulator: enrol, unenrol and passcode
/// change killed (SIGKILL) at each of their steps; the fingers' store
/// altered or planted; the enrolment counter replaced. Each next to the use
/// that works.
@Suite("touchstone: scheme 2 attacked and cut short (subprocess)")
struct SchemeTwoCLITests {
    /// A sandbox with a passcode, right-index-finger enrolled as alice, a
    /// current-set item, a biometry-any item and a passcode item.
    static func sandbox() throws -> CLISandbox {
        let sandbox = try CLISandbox()
        try #require(sandbox.setPasscode().code == 0)
        try #require(sandbox.enroll("right-index-finger", as: "alice").code == 0)
        for (account, access) in [("current", "biometry-current-set"), ("any", "biometry-any"), ("passcode", "passcode")] {
            try #require(sandbox.run(["--sim", "add", "s", account, "--access", access], stdin: Array("secret-\(account)".utf8)).code == 0)
        }
        return sandbox
    }

    static let passcode = CLISandbox.line(CLISandbox.passcode)

    static func get(_ sandbox: CLISandbox, _ account: String, by finger: String) -> CLIResult {
        sandbox.withTouch(finger, ["--sim", "get", "s", account])
    }

    static func fingers(_ sandbox: CLISandbox) -> String { sandbox.run(["--sim", "fingers"]).stdoutText }

    /// Runs `command` with the vault told to kill its process at `step`
    /// (TOUCHSTONE_TEST_KILL_AT, debug builds), expects it killed, and
    /// returns whether the step comes after the change's commit.
    static func kill(at step: String, _ sandbox: CLISandbox, _ command: () -> CLIResult,
                     sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        sandbox.extraEnvironment["TOUCHSTONE_TEST_KILL_AT"] = step
        let killed = command()
        sandbox.extraEnvironment = [:]
        #expect(killed.code == 128 + SIGKILL, "\(killed.stderr)", sourceLocation: sourceLocation)
        return !step.hasSuffix("-sealed")
    }

    // MARK: - Kill points

    @Test("enrol killed at each step of the vault's change: before the commit nothing changed; after it the new set, and the old set's current-set items closed for good",
          arguments: ["fingers-sealed", "fingers-committed", "fingers-incremented"])
    func enrolKilled(_ step: String) async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            let committed = Self.kill(at: step, sandbox) { sandbox.enroll("left-index-finger", as: "bob") }

            #expect(Self.fingers(sandbox) == (committed ? "left-index-finger\nright-index-finger\n" : "right-index-finger\n"))
            let old = Self.get(sandbox, "current", by: "alice")
            #expect(old.code == (committed ? 10 : 0), "\(old.stderr)")
            let newFinger = Self.get(sandbox, "any", by: "bob")
            #expect(newFinger.code == (committed ? 0 : 2), "\(newFinger.stderr)")
            #expect(Self.get(sandbox, "any", by: "alice").stdoutText == "secret-any")
            #expect(sandbox.run(["--sim", "status"]).code == 0)
            // From there on, enrolment works as ever.
            #expect(sandbox.enroll("right-thumb", as: "carol").code == 0)
            #expect(Self.get(sandbox, "any", by: "carol").stdoutText == "secret-any")
        }
    }

    @Test("unenrol killed at each step: the finger still enrolled (and its items open) before the commit; gone after, and the current-set items closed",
          arguments: ["fingers-sealed", "fingers-committed", "fingers-incremented"])
    func unenrolKilled(_ step: String) async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            try #require(sandbox.enroll("left-index-finger", as: "bob").code == 0)
            try #require(sandbox.run(["--sim", "add", "s", "current-2", "--access", "biometry-current-set"], stdin: Array("c2".utf8)).code == 0)
            let committed = Self.kill(at: step, sandbox) {
                sandbox.run(["--sim", "unenroll", "left-index-finger", "--passcode-fd", "3"], fd3: Self.passcode)
            }

            #expect(Self.fingers(sandbox) == (committed ? "right-index-finger\n" : "left-index-finger\nright-index-finger\n"))
            let byBob = Self.get(sandbox, "current-2", by: "bob")
            #expect(byBob.code == (committed ? 10 : 0), "\(byBob.stderr)")
            #expect(Self.get(sandbox, "any", by: "bob").code == (committed ? 2 : 0))
            #expect(Self.get(sandbox, "any", by: "alice").stdoutText == "secret-any")
        }
    }

    @Test("passcode change killed at each step: the old passcode before the commit, the new one after, never both; after it, a copy from before opens nothing with the old one",
          arguments: ["passcode-sealed", "passcode-committed", "passcode-incremented"])
    func passcodeChangeKilled(_ step: String) async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            let copy = try Data(contentsOf: URL(fileURLWithPath: sandbox.home + "/vault.sqlite"))
            let committed = Self.kill(at: step, sandbox) {
                sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "3"], fd3: Self.passcode + CLISandbox.line("new-one"))
            }
            let (inForce, other) = committed ? (CLISandbox.line("new-one"), Self.passcode) : (Self.passcode, CLISandbox.line("new-one"))

            let get = ["--sim", "get", "s", "passcode", "--passcode-fd", "3"]
            let opened = sandbox.run(get, fd3: inForce)
            #expect(opened.code == 0, "\(opened.stderr)")
            #expect(opened.stdoutText == "secret-passcode")
            #expect(sandbox.run(get, fd3: other).code == 2)
            if committed {
                let live = try Data(contentsOf: URL(fileURLWithPath: sandbox.home + "/vault.sqlite"))
                try TPMFaultTests.replaceDatabase(sandbox.home, with: copy)
                let attacked = sandbox.run(get, fd3: Self.passcode)
                #expect(attacked.code == 13, "\(attacked.stderr)")
                #expect(attacked.stdout.isEmpty)
                try TPMFaultTests.replaceDatabase(sandbox.home, with: live)
            }
            #expect(sandbox.run(get, fd3: inForce).stdoutText == "secret-passcode")
        }
    }

    // MARK: - The fingers' store

    @Test("a stranger's print file planted where the first release kept prints: never read; the user's finger matches, the stranger's opens nothing")
    func plantedPrintFile() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            let folder = sandbox.home + "/prints/\(ProcessInfo.processInfo.userName)/virtual_device/0"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: MigrationTests.fixtureFolder + "/stranger-right-thumb.print", toPath: folder + "/right-thumb.print")

            let stranger = Self.get(sandbox, "current", by: "mallory")
            #expect(stranger.code == 2, "\(stranger.stderr)")
            #expect(stranger.stdout.isEmpty)
            #expect(Self.get(sandbox, "current", by: "alice").stdoutText == "secret-current")
            #expect(Self.fingers(sandbox) == "right-index-finger\n")
        }
    }

    @Test("the fingers' record replaced by another vault's (a stranger enrolled there): exit 13 naming the fingers' store, status shows it, nothing matches, the passcode opens; unenroll --all and enrol start again")
    func replacedFingersRecord() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            let strangers = try CLISandbox()
            defer { strangers.close() }
            try #require(strangers.setPasscode().code == 0)
            try #require(strangers.enroll("right-index-finger", as: "mallory").code == 0)
            let theirs = try SQLiteDatabase(path: strangers.home + "/vault.sqlite")
            let record = try #require(try theirs.rows("SELECT sealed FROM fingers ORDER BY generation DESC LIMIT 1", []) { $0.blob(0) }.first)
            let ours = try SQLiteDatabase(path: sandbox.home + "/vault.sqlite")
            try ours.query("UPDATE fingers SET sealed = ?", [.blob(record)])

            for finger in ["mallory", "alice"] {
                let result = sandbox.run(["--sim", "get", "s", "current"])  // refused before any touch is asked
                #expect(result.code == 13, "\(finger): \(result.stderr)")
                #expect(result.stderr.contains("the enrolled fingers' store was altered outside an enrolment"), "\(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
            let status = sandbox.run(["--sim", "status"])
            #expect(status.code == 13)
            #expect(status.stdoutText.contains("fingers:   none usable: "), "\(status.stdoutText)")
            #expect(status.stdoutText.contains("items:     3"))
            let json = sandbox.run(["--sim", "status", "--json"]).stdoutText
            #expect(json.contains(#""fingersProblem":"#), "\(json)")
            #expect(sandbox.run(["--sim", "fingers"]).code == 13)
            let byPasscode = sandbox.run(["--sim", "get", "s", "passcode", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(byPasscode.stdoutText == "secret-passcode", "\(byPasscode.stderr)")
            #expect(sandbox.run(["--sim", "unenroll", "right-index-finger", "--passcode-fd", "3"], fd3: Self.passcode).code == 13)

            let cleared = sandbox.run(["--sim", "unenroll", "--all", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(cleared.code == 0, "\(cleared.stderr)")
            #expect(sandbox.run(["--sim", "status"]).code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(Self.get(sandbox, "any", by: "alice").stdoutText == "secret-any")
            #expect(Self.get(sandbox, "any", by: "mallory").code == 2)
            #expect(Self.get(sandbox, "current", by: "alice").code == 10)  // sealed for the set before
        }
    }

    // MARK: - A redefined counter

    @Test("the enrolment counter undefined and an ordinary index defined in its place: exit 13, the TPM's enrolment state was replaced; nothing is sealed to it; the passcode opens")
    func redefinedCounter() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            #expect(Self.get(sandbox, "current", by: "alice").stdoutText == "secret-current")
            let db = try SQLiteDatabase(path: sandbox.home + "/vault.sqlite")
            let handle = try #require(try db.rows("SELECT value FROM meta WHERE key = 'enrolment_counter'", []) { row -> UInt32 in
                UInt32(truncatingIfNeeded: row.blob(0).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            }.first)
            let tpm = try MigrationTests.tpm(sandbox)
            try replaceCounterWithOrdinaryIndex(tpm, at: handle, holding: try tpm.readCounter(handle))

            let get = sandbox.run(["--sim", "get", "s", "current"])
            #expect(get.code == 13, "\(get.stderr)")
            #expect(get.stderr.contains("the TPM's enrolment state was replaced"), "\(get.stderr)")
            let enrol = sandbox.run(["--sim", "enroll", "left-index-finger", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(enrol.code == 13, "\(enrol.stderr)")
            #expect(enrol.stderr.contains("the TPM's enrolment state was replaced"), "\(enrol.stderr)")
            let status = sandbox.run(["--sim", "status"])
            #expect(status.code == 13, "\(status.stderr)")
            let byPasscode = sandbox.run(["--sim", "get", "s", "passcode", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(byPasscode.stdoutText == "secret-passcode", "\(byPasscode.stderr)")
        }
    }
}

import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

/// State folders written by the first release and by the last schema-3
/// build (Tests/Fixtures, README.md there), opened by this build: upgraded
/// with nothing lost (items, fingers, passcode, the invalidated item
/// staying so), and the first release's weaknesses gone from the live
/// folder.
@Suite("touchstone: vaults of older releases upgraded (subprocess)")
struct MigrationTests {
    static let fixtures = ["vault-first-release", "vault-schema3"]
    static let passcode = CLISandbox.line("fixture-pass-1")
    /// The first release's enrolment-state index in both fixtures.
    static let legacyIndex: UInt32 = 0x0180_5400

    static var fixtureFolder: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures").path
    }

    /// A sandbox holding the fixture's state folder (its prints under this
    /// user's name, as the fixtures were made by root), the simulator not
    /// started.
    static func sandbox(_ fixture: String) throws -> CLISandbox {
        let sandbox = try CLISandbox(startSimulator: false)
        let tar = try ChildProcessResult.run("/bin/tar", ["-C", sandbox.root, "-xzf", fixtureFolder + "/\(fixture).tar.gz"])
        try #require(tar.status == 0, "tar: \(tar.output)")
        let user = ProcessInfo.processInfo.userName
        if user != "root" { try FileManager.default.moveItem(atPath: sandbox.home + "/prints/root", toPath: sandbox.home + "/prints/\(user)") }
        return sandbox
    }

    static func tpm(_ sandbox: CLISandbox) throws -> TPM { try TPM(tcti: "swtpm:path=\(sandbox.home)/sim/tpm/sock") }

    static func schemaVersion(_ sandbox: CLISandbox) throws -> Int64? {
        try SQLiteDatabase(path: sandbox.home + "/vault.sqlite").rows("PRAGMA user_version", []) { $0.integer(0) }.first
    }

    @Test("every item opens as before, through this build's CLI; the invalidated one stays invalidated; fingers, passcode and stranger's touch as before", arguments: fixtures)
    func itemsAndFingers(_ fixture: String) async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox(fixture)
            defer { sandbox.close() }
            #expect(try Self.schemaVersion(sandbox) ?? 0 < Int64(Schema.current))
            let started = sandbox.run(["sim", "start"])
            try #require(started.code == 0, "\(started.stderr)")

            // The first command opens (and upgrades) the vault.
            let none = sandbox.run(["--sim", "get", "fx", "none"])
            #expect(none.code == 0, "\(none.stderr)")
            #expect(none.stdoutText == "secret-none")
            #expect(try Self.schemaVersion(sandbox) == Int64(Schema.current))
            #expect(access(sandbox.home + "/prints", F_OK) != 0, "the print files are moved into the vault")
            #expect(try !Self.tpm(sandbox).enrollmentIndexExists(Self.legacyIndex), "the first release's index is undefined")

            #expect(sandbox.run(["--sim", "fingers"]).stdoutText == "left-index-finger\nright-index-finger\n")
            let list = sandbox.run(["--sim", "list"]).stdoutText
            for account in ["none", "passcode", "any", "any-or-passcode", "current", "current-and-passcode"] {
                #expect(list.contains("fx\t\(account)\t") && list.split(separator: "\n").contains { $0.hasPrefix("fx\t\(account)\t") && $0.contains("\tok\t") },
                        "\(account): \(list)")
            }
            #expect(list.split(separator: "\n").contains { $0.hasPrefix("fx\told-current\t") && $0.contains("\tinvalidated\t") }, "\(list)")

            let passcodeItem = sandbox.run(["--sim", "get", "fx", "passcode", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(passcodeItem.code == 0, "\(passcodeItem.stderr)")
            #expect(passcodeItem.stdoutText == "secret-passcode")
            for (account, finger) in [("any", "alice-1"), ("current", "alice-2"), ("current", "alice-1")] {
                let opened = sandbox.withTouch(finger, ["--sim", "get", "fx", account])
                #expect(opened.code == 0, "\(account) by \(finger): \(opened.stderr)")
                #expect(opened.stdoutText == "secret-\(account)")
            }
            let both = sandbox.withTouch("alice-2", ["--sim", "get", "fx", "current-and-passcode", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(both.code == 0, "\(both.stderr)")
            #expect(both.stdoutText == "secret-current-and-passcode")
            let presence = sandbox.run(["--sim", "get", "fx", "any-or-passcode", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(presence.stdoutText == "secret-any-or-passcode", "\(presence.stderr)")
            let invalidated = sandbox.run(["--sim", "get", "fx", "old-current"])
            #expect(invalidated.code == 10, "\(invalidated.stderr)")
            #expect(invalidated.stdout.isEmpty)
            let stranger = sandbox.withTouch("mallory", ["--sim", "get", "fx", "current"])
            #expect(stranger.code == 2, "\(stranger.stderr)")
            #expect(stranger.stdout.isEmpty)
            let status = sandbox.run(["--sim", "status"])
            #expect(status.code == 0, "\(status.stderr)")

            // The passcode changes (its blobs upgraded at the first proof
            // above), and a copy from before then opens nothing with it.
            let copy = try Data(contentsOf: URL(fileURLWithPath: sandbox.home + "/vault.sqlite"))
            let changed = sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "3"], fd3: Self.passcode + CLISandbox.line("after-upgrade"))
            #expect(changed.code == 0, "\(changed.stderr)")
            let live = try Data(contentsOf: URL(fileURLWithPath: sandbox.home + "/vault.sqlite"))
            try TPMFaultTests.replaceDatabase(sandbox.home, with: copy)
            let attacked = sandbox.run(["--sim", "get", "fx", "passcode", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(attacked.code == 13, "\(attacked.stderr)")
            #expect(attacked.stdout.isEmpty)
            try TPMFaultTests.replaceDatabase(sandbox.home, with: live)
            #expect(sandbox.run(["--sim", "get", "fx", "passcode", "--passcode-fd", "3"], fd3: CLISandbox.line("after-upgrade")).stdoutText == "secret-passcode")

            // An enrolment change closes the current-set items, as ever.
            #expect(sandbox.enroll("right-thumb", as: "carol", passcode: "after-upgrade").code == 0)
            #expect(sandbox.withTouch("alice-1", ["--sim", "get", "fx", "current"]).code == 10)
            let any = sandbox.withTouch("carol", ["--sim", "get", "fx", "any"])
            #expect(any.stdoutText == "secret-any", "\(any.stderr)")
        }
    }

    @Test("the upgrade keeps the domain state, checks the print files against the first release's index, and leaves no key that a rewound index reopens", arguments: fixtures)
    func upgradeInProcess(_ fixture: String) async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox(fixture)
            defer { sandbox.close() }
            try #require(sandbox.run(["sim", "start"]).code == 0)
            let tpm = try Self.tpm(sandbox)
            let state = try tpm.readEnrollmentState(Self.legacyIndex)
            let before = try SQLiteDatabase(path: sandbox.home + "/vault.sqlite")
            let epochs = try before.rows("SELECT epoch FROM class_keys WHERE kind = 'biometry-current-set' AND epoch IS NOT NULL", []) { $0.blob(0) }
            #expect(epochs.count == 3)
            #expect(epochs.contains(state))
            before.close()

            let vault = try Vault(home: URL(fileURLWithPath: sandbox.home), tpm: tpm, user: ProcessInfo.processInfo.userName)
            let fingers = try vault.enrolledFingers()
            #expect(fingers.fingers == [.leftIndex, .rightIndex])
            #expect(fingers.domainState == state, "LocalAuthentication's domain state is the one the first release showed")
            #expect(try vault.meta("nv_index") == nil)
            // Only the live current-set key kept a blob; the invalidated ones lost theirs.
            let keys = try vault.classKeys().values.filter { $0.kind == .biometryCurrentSet }
            #expect(keys.filter { !$0.sealed.isEmpty }.count == 1)
            #expect(keys.allSatisfy { $0.epoch == nil })

            // The attack on the live folder: the first release's index defined
            // again (the owner's rights) holding the state the invalidated item
            // was sealed to. Nothing of this vault names it any more.
            let invalidatedState = try #require(epochs.first { $0 != state })
            try tpm.defineEnrollmentIndex(Self.legacyIndex, passcode: PasscodeAuth(passcodeString: "attacker"), initialState: invalidatedState)
            #expect(throws: VaultError.itemInvalidated) {
                try vault.secret(service: "fx", account: "old-current", proof: VaultProof(biometricMatch: true))
            }
            #expect(string(try vault.secret(service: "fx", account: "current", proof: VaultProof(biometricMatch: true))) == "secret-current")
        }
    }

    @Test("a print file planted among the first release's before the upgrade: the set is not trusted (exit 13 naming the fingers' store), the stranger opens nothing, the passcode still opens; unenrolling every finger starts again",
          arguments: fixtures)
    func plantedBeforeUpgrade(_ fixture: String) async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox(fixture)
            defer { sandbox.close() }
            let folder = sandbox.home + "/prints/\(ProcessInfo.processInfo.userName)/virtual_device/0"
            try FileManager.default.copyItem(atPath: Self.fixtureFolder + "/stranger-right-thumb.print", toPath: folder + "/right-thumb.print")
            try #require(sandbox.run(["sim", "start"]).code == 0)

            let stranger = sandbox.withTouch("mallory", ["--sim", "get", "fx", "current"])
            #expect(stranger.code == 13, "\(stranger.stderr)")
            #expect(stranger.stderr.contains("the enrolled fingers' store was altered outside an enrolment"), "\(stranger.stderr)")
            #expect(stranger.stdout.isEmpty)
            // Nor does the user's own finger match a set that cannot be trusted.
            #expect(sandbox.run(["--sim", "get", "fx", "any"]).code == 13)
            let status = sandbox.run(["--sim", "status"])
            #expect(status.code == 13)
            #expect(status.stdoutText.contains("fingers:   none usable: "), "\(status.stdoutText)")
            let passcodeItem = sandbox.run(["--sim", "get", "fx", "passcode", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(passcodeItem.stdoutText == "secret-passcode", "\(passcodeItem.stderr)")

            let cleared = sandbox.run(["--sim", "unenroll", "--all", "--passcode-fd", "3"], fd3: Self.passcode)
            #expect(cleared.code == 0, "\(cleared.stderr)")
            #expect(sandbox.enroll("right-index-finger", as: "alice-1", passcode: "fixture-pass-1").code == 0)
            let any = sandbox.withTouch("alice-1", ["--sim", "get", "fx", "any"])
            #expect(any.stdoutText == "secret-any", "\(any.stderr)")
            #expect(sandbox.withTouch("mallory", ["--sim", "get", "fx", "any"]).code == 2)
        }
    }
}

func string(_ bytes: SecureBytes) -> String {
    bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

import Foundation
import Glibc
import TestRigs
import TouchstoneSimulator
import Testing

/// Vaults belong to accounts, not to uid numbers.
@Suite("touchstoned and accounts")
struct DaemonAccountTests {
    @Test("an account deleted and its uid given to a new account: the new one is refused (exit 1, both names) and opens nothing of the old one's; after touchstoned --remove-user UID it starts afresh; the old account was served before, and another user throughout")
    func uidReused() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            // A user of this test's own, to delete and replace.
            let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
            let oldName = "tso\(tag)", newName = "tsn\(tag)"
            let folder = rig.root + "/" + oldName
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            // Its uid and gid above useradd's automatic range (UID_MAX 60000):
            // no other test's useradd can take them between the userdel
            // and the new account's useradd below.
            let number = try #require((0..<50).lazy.map { _ in UInt32.random(in: 61_000...64_999) }
                .first { getpwuid($0) == nil && getgrgid($0) == nil })
            #expect(try Swtpm.run(try Confinement.tool("groupadd"), ["--gid", "\(number)", oldName]) == 0)
            #expect(try Swtpm.run(try Confinement.tool("useradd"), ["--no-create-home", "--home-dir", folder, "--uid", "\(number)",
                                                                   "--gid", "\(number)", "--shell", "/bin/sh", oldName]) == 0)
            defer {
                _ = try? Swtpm.run(try Confinement.tool("userdel"), [oldName])
                _ = try? Swtpm.run(try Confinement.tool("userdel"), [newName])
            }
            let entry = try #require(passwdEntry(oldName))
            let old = TestUser(name: oldName, uid: entry.uid, gid: entry.gid, home: folder)
            chown(folder, old.uid, old.gid)
            chmod(folder, 0o700)
            try rig.setUp(old)
            #expect(rig.run(old, ["add", "mail", "me", "--access", "none"], stdin: Array("old-account-secret".utf8)).code == 0)
            #expect(rig.run(old, ["get", "mail", "me"]).stdoutText == "old-account-secret", "the old account is served")
            try rig.setUp(rig.bob)

            // The account goes; a new one gets its uid (and group).
            #expect(try Swtpm.run(try Confinement.tool("userdel"), [oldName]) == 0)
            #expect(try Swtpm.run(try Confinement.tool("groupadd"), ["--gid", "\(old.gid)", newName]) == 0)
            #expect(try Swtpm.run(try Confinement.tool("useradd"), ["--no-create-home", "--home-dir", folder, "--uid", "\(old.uid)",
                                                                   "--gid", "\(old.gid)", "--shell", "/bin/sh", newName]) == 0)
            let new = TestUser(name: newName, uid: old.uid, gid: old.gid, home: folder)
            let refused = rig.run(new, ["get", "mail", "me"])
            #expect(refused.code == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains(oldName) && refused.stderr.contains(newName), "\(refused.stderr)")
            #expect(!refused.stdoutText.contains("old-account-secret"))
            #expect(rig.run(new, ["list"]).code == 1, "the new account lists the old one's items")
            #expect(rig.run(rig.bob, ["list"]).code == 0, "another user is not held")

            // The administrator removes the old account's vault.
            rig.stopDaemon()
            let removed = try CLIProcess.start(["--home", rig.daemonHome, "--remove-user", "\(old.uid)"], environment: ["PATH": "/usr/bin:/bin"],
                                               scratch: rig.scratch, wrapper: try rig.daemonUser.wrapper(), program: rig.touchstoned).wait()
            #expect(removed.code == 0 && removed.stdoutText.contains(oldName), "\(removed.stderr)")
            let again = try CLIProcess.start(["--home", rig.daemonHome, "--remove-user", "\(old.uid)"], environment: ["PATH": "/usr/bin:/bin"],
                                             scratch: rig.scratch, wrapper: try rig.daemonUser.wrapper(), program: rig.touchstoned).wait()
            #expect(again.code == 1 && again.stderr.contains("no vault for uid"), "\(again.stderr)")
            try rig.startDaemon()
            try rig.setUp(new)
            let fresh = rig.run(new, ["get", "mail", "me"])
            #expect(fresh.code != 0 && !fresh.stdoutText.contains("old-account-secret"), "the old item survived the removal")
            #expect(rig.run(new, ["add", "mail", "me", "--access", "none"], stdin: Array("new-account-secret".utf8)).code == 0)
            #expect(rig.run(new, ["get", "mail", "me"]).stdoutText == "new-account-secret")
        }
    }
}

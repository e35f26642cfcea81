import Foundation
import Glibc
import TestRigs
import Testing
import TouchstoneServer
import TouchstoneSimulator

/// The throttle as one step per uid, against the daemon as outside client
/// processes speak to it.
extension DaemonThrottleTests {
    @Test("32 wrong passcodes at once, from 32 client processes: judged exactly ten times (exit 2), the rest refused as throttled (exit 12), the TPM saw none; the right passcode opens before, is refused during the wait and opens after it")
    func parallelWrongPasscodes() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            // The daemon's clock (debug builds): moved on by the test instead of slept through.
            let clock = rig.clockFile
            func advance(_ seconds: Double) throws { try rig.advanceClock(seconds) }
            try advance(0)
            try rig.startDaemon(extraEnvironment: ["TOUCHSTONE_TEST_CLOCK_FILE": clock])
            let alice = rig.alice
            try rig.setUp(alice)
            #expect(rig.run(alice, ["add", "mail", "me", "--access", "passcode"], stdin: Array("alice-secret".utf8)).code == 0)
            let arguments = ["get", "mail", "me", "--passcode-fd", "0"]
            #expect(rig.run(alice, arguments, stdin: CLISandbox.line(Self.passcode)).stdoutText == "alice-secret",
                    "the right passcode opens before")

            let clients = try (1...32).map { n in try rig.start(alice, arguments, stdin: CLISandbox.line("wrong-\(n)")) }
            let results = clients.map { $0.wait() }
            let wrong = results.filter { $0.code == 2 }.count
            let throttled = results.filter { $0.code == 12 }.count
            #expect(wrong == PasscodeGate.freeTries, "judged \(wrong) times")
            #expect(wrong + throttled == 32, "every one is wrong or throttled: \(results.map { "\($0.code) \($0.stderr)" })")
            #expect(results.allSatisfy { $0.stdout.isEmpty })

            // The TPM's dictionary-attack counter, which every user shares, saw none of them.
            let status = rig.run(rig.bob, ["--json", "status"])
            let tpm = (try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any])?["tpm"] as? [String: Any]
            #expect(tpm?["failedTries"] as? Int == 0, "\(status.stdoutText)")

            let held = rig.run(alice, arguments, stdin: CLISandbox.line(Self.passcode))
            #expect(held.code == 12, "the right one waits too: \(held.stderr)")
            try advance(PasscodeGate.firstWait + 1)
            #expect(rig.run(alice, arguments, stdin: CLISandbox.line(Self.passcode)).stdoutText == "alice-secret",
                    "the right passcode opens after the wait")
        }
    }

    @Test("32 wrong passcodes at once (get) for a user the daemon has no verifier for (the TPM decides): each counted before it reaches the TPM, so the TPM judges exactly ten (exit 2, the TPM's failed tries 10), the rest refused as throttled (exit 12); after the wait (and a DA reset) the right passcode opens and the change works")
    func parallelUndecidedPasscodes() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            let clock = rig.clockFile
            func advance(_ seconds: Double) throws { try rig.advanceClock(seconds) }
            try advance(0)
            let environment = ["TOUCHSTONE_TEST_CLOCK_FILE": clock]
            try rig.startDaemon(extraEnvironment: environment)
            let alice = rig.alice
            try rig.setUp(alice)
            #expect(rig.run(alice, ["add", "mail", "me", "--access", "passcode"], stdin: Array("alice-secret".utf8)).code == 0)
            // The verifiers dropped while the daemon is down (as the daemon's
            // database had none before verifiers existed): the TPM decides.
            #expect(rig.stopDaemon() == 0)
            let setpriv = try rig.daemonUser.wrapper()
            #expect(try Swtpm.run(setpriv[0], Array(setpriv.dropFirst()) + ["/usr/bin/sqlite3", rig.daemonHome + "/daemon.sqlite",
                                                                           "DELETE FROM verifiers;"]) == 0)
            try rig.startDaemon(extraEnvironment: environment)

            let clients = try (1...32).map { n in
                // get (a change would meet the NV rate limit first).
                try rig.start(alice, ["get", "mail", "me", "--passcode-fd", "0"], stdin: CLISandbox.line("wrong-\(n)"))
            }
            let results = clients.map { $0.wait() }
            let wrong = results.filter { $0.code == 2 }.count
            let throttled = results.filter { $0.code == 12 }.count
            #expect(wrong == PasscodeGate.freeTries, "judged \(wrong) times")
            #expect(wrong + throttled == 32, "every one is wrong or throttled: \(results.map { "\($0.code) \($0.stderr)" })")
            let status = rig.run(rig.bob, ["--json", "status"])
            let tpm = (try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any])?["tpm"] as? [String: Any]
            #expect(tpm?["failedTries"] as? Int == PasscodeGate.freeTries, "the TPM judged exactly these: \(status.stdoutText)")

            #expect(rig.run(alice, ["get", "mail", "me", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode)).code == 12)
            let reset = try Swtpm.run(try Confinement.tool("tpm2_dictionarylockout"), ["--clear-lockout"],
                                      environment: ["TPM2TOOLS_TCTI": "swtpm:path=\(rig.daemonHome)/sim/tpm/sock", "PATH": "/usr/bin:/bin"])
            #expect(reset == 0)
            try advance(PasscodeGate.firstWait + 1)
            #expect(rig.run(alice, ["get", "mail", "me", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode)).stdoutText == "alice-secret",
                    "the right passcode opens after the wait")
            let change = rig.run(alice, ["passcode", "change", "--passcode-fd", "0"],
                                 stdin: CLISandbox.line(Self.passcode) + CLISandbox.line("another"))
            #expect(change.code == 0, "\(change.stderr)")
        }
    }

    @Test("passcode set, change and remove with the right passcode are at most five a minute per user: the set and four changes work, the fifth change is refused with exit 12 (and so are a remove and an unenroll), bob is not held; after the minute the change works")
    func nvWriteRateLimit() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            let clock = rig.clockFile
            try rig.advanceClock(0)
            try rig.startDaemon(extraEnvironment: ["TOUCHSTONE_TEST_CLOCK_FILE": clock])
            let (alice, bob) = (rig.alice, rig.bob)
            try rig.setUp(alice)
            // A finger (enrolment, which needs touches, is not limited), for the unenroll below.
            try rig.setUpFinger(alice, "right-index-finger", as: "alice-finger")
            func change(_ user: TestUser, _ from: String, _ to: String) -> CLIResult {
                rig.run(user, ["passcode", "change", "--passcode-fd", "0"], stdin: CLISandbox.line(from) + CLISandbox.line(to))
            }
            let passcodes = [Self.passcode, "second", "third", "fourth", "fifth"]
            for (from, to) in zip(passcodes, passcodes.dropFirst()) {
                let changed = change(alice, from, to)
                #expect(changed.code == 0, "\(from) -> \(to): \(changed.stderr)")
            }
            let refused = change(alice, "fifth", "sixth")
            #expect(refused.code == 12, "\(refused.stderr)")
            #expect(refused.stderr.contains("try again in"), "\(refused.stderr)")
            let remove = rig.run(alice, ["passcode", "remove", "--yes", "--passcode-fd", "0"], stdin: CLISandbox.line("fifth"))
            #expect(remove.code == 12, "\(remove.stderr)")
            // Unenroll writes the enrolment counter with the passcode alone: the same limit.
            let unenroll = rig.run(alice, ["unenroll", "--all", "--passcode-fd", "0"], stdin: CLISandbox.line("fifth"))
            #expect(unenroll.code == 12, "\(unenroll.stderr)")
            try rig.setUp(bob)
            #expect(change(bob, Self.passcode, "bob-second").code == 0, "bob is not held by alice's changes")
            try "\(PasscodeGate.nvWindow)".write(toFile: clock, atomically: false, encoding: .utf8)
            let later = change(alice, "fifth", "sixth")
            #expect(later.code == 0, "after the minute: \(later.stderr)")
        }
    }
}

/// The daemon's own disk full: the throttle cannot record an attempt, so
/// it refuses it, and nothing is lost.
@Suite("touchstoned on a full disk")
struct DaemonFullDiskTests {
    @Test("the daemon's home on a 4 MiB tmpfs: a wrong passcode is counted (exit 2) and the right one opens; with the disk full, a wrong passcode is refused with the storage error (never judged: the TPM's failed tries stay 0), and so is the right one; with space again, the right passcode opens the item, which was kept")
    func fullDisk() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            let home = rig.root + "/small"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
            guard mount("tmpfs", home, "tmpfs", 0, "size=4m,mode=0700,uid=\(rig.daemonUser.uid),gid=\(rig.daemonUser.gid)") == 0 else {
                throw RigFailure("mount tmpfs on \(home): \(String(cString: strerror(errno))) (the test runs as root, as CI does)")
            }
            defer { umount2(home, Int32(MNT_DETACH)) }
            // The daemon's state there; its TPM and reader the rig's simulator's.
            let simulator = rig.daemonHome + "/sim"
            try rig.startDaemon(arguments: ["--home", home, "--tpm", "swtpm:path=\(simulator)/tpm/sock",
                                            "--reader", "virtual:\(simulator)/reader"])
            let alice = rig.alice
            try rig.setUp(alice)
            #expect(rig.run(alice, ["add", "mail", "me", "--access", "passcode"], stdin: Array("alice-secret".utf8)).code == 0)
            let arguments = ["get", "mail", "me", "--passcode-fd", "0"]
            #expect(rig.run(alice, arguments, stdin: CLISandbox.line("wrong")).code == 2, "a wrong passcode is judged")
            #expect(rig.run(alice, arguments, stdin: CLISandbox.line(DaemonRig.passcode)).stdoutText == "alice-secret")

            // Fill the disk.
            let filler = home + "/filler"
            _ = try Swtpm.run("/bin/dd", ["if=/dev/zero", "of=\(filler)", "bs=64k", "status=none"])
            let wrong = rig.run(alice, arguments, stdin: CLISandbox.line("wrong"))
            #expect(wrong.code != 2 && wrong.code != 0, "\(wrong.code): \(wrong.stderr)")
            #expect(wrong.stderr.contains("cannot record passcode attempts"), "\(wrong.stderr)")
            let right = rig.run(alice, arguments, stdin: CLISandbox.line(DaemonRig.passcode))
            #expect(right.code != 0 && right.stdout.isEmpty, "\(right.code): \(right.stderr)")
            let status = rig.run(rig.alice, ["--json", "status"])
            let tpm = (try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any])?["tpm"] as? [String: Any]
            #expect(tpm?["failedTries"] as? Int == 0, "\(status.stdoutText)")

            // Space again: nothing was lost.
            try FileManager.default.removeItem(atPath: filler)
            let after = rig.run(alice, arguments, stdin: CLISandbox.line(DaemonRig.passcode))
            #expect(after.stdoutText == "alice-secret", "\(after.code): \(after.stderr)")
        }
    }
}

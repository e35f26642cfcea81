import Foundation
import TouchstonePOSIX
import TouchstoneSimulator
import Glibc
import Testing
import TestRigs
import TouchstoneTPM
@testable import TouchstoneVault

/// The simulator's swtpm killed (SIGKILL: no TPM2_Shutdown, as in a crash)
/// in the middle of a command's TPM work, at a chosen TPM command (TPMTap):
/// the command fails with exit 11 and one error line, the vault is left as
/// it was, `sim start` brings the simulator back over the dead one's pid
/// file and socket files, and everything opens with the same bytes.
@Suite("touchstone: swtpm killed in the middle of an operation (subprocess)", .serialized)
struct TPMFaultTests {
    static let moments: [TPMTap.Moment] = [.beforeTPM, .afterTPM]

    /// Every row of the vault, as text: "no state change" is this, equal.
    static func snapshot(_ home: String) throws -> [String] {
        let db = try SQLiteDatabase(path: home + "/vault.sqlite")
        var rows: [String] = []
        for query in ["SELECT 'meta ' || key || ' ' || hex(value) FROM meta ORDER BY key",
                      "SELECT 'class ' || id || ' ' || kind || ' ' || hex(epoch) || ' ' || hex(public) || ' ' || hex(sealed) || ' ' || ifnull(hex(previous), '-') || ' ' || created FROM class_keys ORDER BY id",
                      "SELECT 'item ' || id || ' ' || hex(lookup) || ' ' || hex(metadata) || ' ' || hex(secret) || ' ' || hex(keys) FROM items ORDER BY id"] {
            rows += try db.rows(query, []) { $0.text(0) }
        }
        return rows
    }

    /// What a command cut off by the TPM's death must print: one error line
    /// that names the TPM, the hint to restart the simulator, nothing else.
    static func expectTPMFailure(_ result: CLIResult, _ what: String) {
        #expect(result.code == 11, "\(what): exit \(result.code): \(result.stderr)")
        #expect(result.stdout.isEmpty, "\(what)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(what): \(result.stderr)")
        #expect(lines.first?.hasPrefix("touchstone: error: TPM unreachable") == true, "\(what): \(result.stderr)")
        #expect(lines.last == "hint: touchstone sim start", "\(what): \(result.stderr)")
    }

    /// After the crash: --sim says the simulator is not running, and
    /// `sim start` starts it again over the stale pid file and sockets.
    static func restart(_ sandbox: CLISandbox) {
        let down = sandbox.run(["--sim", "list"])
        #expect(down.code == 11)
        #expect(down.stderr.contains("the simulator is not running"))
        let started = sandbox.run(["sim", "start"])
        #expect(started.code == 0, "sim start after the crash: \(started.stderr)")
        #expect(started.stderr.contains("simulator started"))
    }

    @Test("a dead swtpm's pid file naming another live process (its PID reused, as after a reboot): not taken for swtpm, never signalled")
    func reusedPID() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "none"], stdin: Array("kept".utf8)).code == 0)
            #expect(sandbox.run(["sim", "stop"]).code == 0)
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            let other = try ChildSpawn.start("/bin/sleep", ["3600"], actions: &actions)
            defer { kill(other, SIGKILL); _ = ChildSpawn.waitForExit(other) }
            try "\(other)\n".write(toFile: sandbox.home + "/sim/tpm/pid", atomically: false, encoding: .utf8)

            #expect(sandbox.run(["sim", "status", "--json"]).stdoutText.contains(#""running":false"#))
            let down = sandbox.run(["--sim", "get", "s", "a"])
            #expect(down.code == 11)
            #expect(down.stderr.contains("the simulator is not running"))
            let started = sandbox.run(["sim", "start"])
            #expect(started.code == 0, "\(started.stderr)")
            #expect(started.stderr.contains("simulator started"))
            #expect(sandbox.run(["--sim", "get", "s", "a"]).stdoutText == "kept")
            #expect(sandbox.run(["sim", "stop"]).code == 0)
            var status: Int32 = 0
            #expect(waitpid(other, &status, WNOHANG) == 0, "the other process was signalled")
        }
    }

    @Test("get of an access-none item, swtpm killed at the root key's TPM2_Unseal", arguments: moments)
    func getNone(_ moment: TPMTap.Moment) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            for (account, bytes) in [("a", "first secret"), ("b", "second secret")] {
                #expect(sandbox.run(["--sim", "add", "s", account, "--access", "none"], stdin: Array(bytes.utf8)).code == 0)
            }
            let before = try Self.snapshot(sandbox.home)

            let tap = try TPMTap(simulatorHome: sandbox.home, target: TPMTap.unseal, occurrence: 1, moment: moment)
            let result = sandbox.run(["--sim", "get", "s", "a"])
            tap.stop()
            #expect(tap.killed, "swtpm was not killed; commands seen: \(tap.seen.map { String($0, radix: 16) })")
            Self.expectTPMFailure(result, "get")
            #expect(try Self.snapshot(sandbox.home) == before)

            Self.restart(sandbox)
            #expect(sandbox.run(["--sim", "get", "s", "a"]).stdoutText == "first secret")
            #expect(sandbox.run(["--sim", "get", "s", "b"]).stdoutText == "second secret")
            #expect(try Self.snapshot(sandbox.home) == before)
        }
    }

    @Test("get of a passcode item, swtpm killed at the class key's TPM2_Unseal", arguments: moments)
    func getPasscode(_ moment: TPMTap.Moment) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "p", "--access", "passcode"], stdin: Array("behind the passcode".utf8)).code == 0)
            let before = try Self.snapshot(sandbox.home)
            let get = ["--sim", "get", "s", "p", "--passcode-fd", "3"]
            let passcode = CLISandbox.line(CLISandbox.passcode)

            // The first Unseal opens the vault's root key, the second the class key.
            let tap = try TPMTap(simulatorHome: sandbox.home, target: TPMTap.unseal, occurrence: 2, moment: moment)
            let result = sandbox.run(get, fd3: passcode)
            tap.stop()
            #expect(tap.killed, "swtpm was not killed; commands seen: \(tap.seen.map { String($0, radix: 16) })")
            Self.expectTPMFailure(result, "get")
            #expect(try Self.snapshot(sandbox.home) == before)

            Self.restart(sandbox)
            let again = sandbox.run(get, fd3: passcode)
            #expect(again.code == 0, "\(again.stderr)")
            #expect(again.stdoutText == "behind the passcode")
        }
    }

    /// Where a `passcode change` is cut, and which passcode is then in
    /// force: checking the current passcode (the passcode class key's
    /// Unseal, after the root key's), taking biometry-any's secret from
    /// its passcode blob, creating the two new blobs (TPM2_Create), all
    /// before the database commit: the old one; the passcode counter's
    /// increment, after the commit (not sent, or sent and done): the new
    /// one, and after the next opening of the vault no blob of the old one
    /// opens, in this folder or in a copy from before.
    static let changeCuts: [(UInt32, Int, TPMTap.Moment, newInForce: Bool)] = [
        (TPMTap.unseal, 2, .beforeTPM, false),
        (TPMTap.unseal, 3, .afterTPM, false),
        (TPMTap.create, 1, .afterTPM, false),
        (TPMTap.create, 2, .afterTPM, false),
        (TPMTap.nvIncrement, 1, .beforeTPM, true),
        (TPMTap.nvIncrement, 1, .afterTPM, true),
    ]

    @Test("passcode change: new blobs (TPM2_Create), committed, then one increment of the passcode counter; nothing re-sealed in place (no ObjectChangeAuth, no NV_ChangeAuth)")
    func passcodeChangeCommands() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "p", "--access", "passcode"], stdin: Array("behind the passcode".utf8)).code == 0)
            // A tap that waits for a command the change must not send.
            let tap = try TPMTap(simulatorHome: sandbox.home, target: TPMTap.nvChangeAuth, moment: .beforeTPM)
            let changed = sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "3"],
                                      fd3: CLISandbox.line(CLISandbox.passcode) + CLISandbox.line("the-new-one"))
            tap.stop()
            #expect(changed.code == 0, "\(changed.stderr)")
            #expect(!tap.killed)
            let seen = tap.seen
            #expect(!seen.contains(TPMTap.nvChangeAuth) && !seen.contains(TPMTap.objectChangeAuth))
            #expect(seen.filter { $0 == TPMTap.create }.count == 2)
            #expect(seen.filter { $0 == TPMTap.nvIncrement }.count == 1)
            // Both blobs exist before the increment; after it, only the
            // counter's new value is read and what was loaded flushed.
            let increment = try #require(seen.firstIndex(of: TPMTap.nvIncrement))
            #expect(try #require(seen.lastIndex(of: TPMTap.create)) < increment)
            #expect(seen[(increment + 1)...].allSatisfy { $0 == TPMTap.nvRead || $0 == TPMTap.flushContext },
                    "commands: \(seen.map { String($0, radix: 16) })")
            let opened = sandbox.run(["--sim", "get", "s", "p", "--passcode-fd", "3"], fd3: CLISandbox.line("the-new-one"))
            #expect(opened.stdoutText == "behind the passcode")
            let again = sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "3"],
                                    fd3: CLISandbox.line(CLISandbox.passcode) + CLISandbox.line("x"))
            #expect(again.code == 2)  // the old passcode no longer
        }
    }

    @Test("passcode change, swtpm killed during it: the old passcode in force before the commit, the new one after; never both, and no copy from before opens with the old one",
          arguments: 0..<changeCuts.count)
    func passcodeChange(_ cut: Int) async throws {
        try await blockingTest {
            let (target, occurrence, moment, newInForce) = Self.changeCuts[cut]
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "p", "--access", "passcode"], stdin: Array("behind the passcode".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "u", "--access", "user-presence"], stdin: Array("presence".utf8)).code == 0)
            let before = try Self.snapshot(sandbox.home)
            let copy = try Data(contentsOf: URL(fileURLWithPath: sandbox.home + "/vault.sqlite"))
            let old = CLISandbox.line(CLISandbox.passcode), new = CLISandbox.line("interrupted-new")
            let change = ["--sim", "passcode", "change", "--passcode-fd", "3"]

            let tap = try TPMTap(simulatorHome: sandbox.home, target: target, occurrence: occurrence, moment: moment)
            let result = sandbox.run(change, fd3: old + new)
            tap.stop()
            #expect(tap.killed, "swtpm was not killed; commands seen: \(tap.seen.map { String($0, radix: 16) })")
            Self.expectTPMFailure(result, "passcode change")
            if !newInForce { #expect(try Self.snapshot(sandbox.home) == before) }

            Self.restart(sandbox)
            let get = ["--sim", "get", "s", "p", "--passcode-fd", "3"]
            let (inForce, other) = newInForce ? (new, old) : (old, new)
            let opened = sandbox.run(get, fd3: inForce)
            #expect(opened.code == 0, "the passcode in force: \(opened.stderr)")
            #expect(opened.stdoutText == "behind the passcode")
            #expect(sandbox.run(get, fd3: other).code == 2)
            #expect(sandbox.run(["--sim", "get", "s", "u", "--passcode-fd", "3"], fd3: inForce).stdoutText == "presence")
            if newInForce {
                // The attack: the folder as it was before the change, with the
                // old passcode. The counter moved on: nothing opens.
                let live = try Data(contentsOf: URL(fileURLWithPath: sandbox.home + "/vault.sqlite"))
                try Self.replaceDatabase(sandbox.home, with: copy)
                let attacked = sandbox.run(get, fd3: old)
                #expect(attacked.code == 13, "an old copy with the old passcode: \(attacked.stderr)")
                #expect(attacked.stdout.isEmpty)
                #expect(attacked.stderr.contains("older than the TPM's passcode counter"), "\(attacked.stderr)")
                try Self.replaceDatabase(sandbox.home, with: live)
            }
            // The passcode in force does everything a passcode does: enrol and change.
            #expect(sandbox.enroll("right-index-finger", as: "alice", passcode: newInForce ? "interrupted-new" : CLISandbox.passcode).code == 0)
            let changed = sandbox.run(change, fd3: inForce + CLISandbox.line("another-new"))
            #expect(changed.code == 0, "changing from the passcode in force: \(changed.stderr)")
            #expect(sandbox.run(get, fd3: CLISandbox.line("another-new")).stdoutText == "behind the passcode")
            let unenrolled = sandbox.run(["--sim", "unenroll", "--all", "--passcode-fd", "3"], fd3: CLISandbox.line("another-new"))
            #expect(unenrolled.code == 0, "unenroll with the new passcode: \(unenrolled.stderr)")
        }
    }

    /// Puts `bytes` in place of the vault's database (its log and index
    /// removed: the copy is whole).
    static func replaceDatabase(_ home: String, with bytes: Data) throws {
        for suffix in ["-wal", "-shm"] { unlink(home + "/vault.sqlite" + suffix) }
        try bytes.write(to: URL(fileURLWithPath: home + "/vault.sqlite"))
    }
}

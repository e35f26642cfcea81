import Foundation
import TouchstoneSimulator
import Glibc
import Testing
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
    func reusedPID() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.close() }
        #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "none"], stdin: Array("kept".utf8)).code == 0)
        #expect(sandbox.run(["sim", "stop"]).code == 0)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let other = try ChildSpawn.start("/bin/sleep", ["60"], actions: &actions)
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

    @Test("get of an access-none item, swtpm killed at the root key's TPM2_Unseal", arguments: moments)
    func getNone(_ moment: TPMTap.Moment) throws {
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

    @Test("get of a passcode item, swtpm killed at the class key's TPM2_Unseal", arguments: moments)
    func getPasscode(_ moment: TPMTap.Moment) throws {
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

    /// Where a `passcode change` is cut: checking the current passcode
    /// (the passcode class key's Unseal, after the root key's), re-sealing
    /// the first class key for the new one, and the second (the change's
    /// last TPM command: what follows is the database commit).
    static let changeCuts: [(UInt32, Int, TPMTap.Moment)] = [
        (TPMTap.unseal, 2, .beforeTPM),
        (TPMTap.objectChangeAuth, 1, .afterTPM),
        (TPMTap.objectChangeAuth, 2, .afterTPM),
    ]

    @Test("passcode change: its last TPM command is a re-seal; it moves nothing on the TPM (no NV_ChangeAuth)")
    func passcodeChangeCommands() throws {
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
        #expect(!tap.seen.contains(TPMTap.nvChangeAuth))
        #expect(tap.seen.filter { $0 == TPMTap.objectChangeAuth }.count == 2)
        // After the last re-seal only flushes (TPM2_FlushContext) of what it loaded.
        let last = try #require(tap.seen.lastIndex(of: TPMTap.objectChangeAuth))
        #expect(tap.seen[(last + 1)...].allSatisfy { $0 == TPMTap.flushContext },
                "commands: \(tap.seen.map { String($0, radix: 16) })")
        let opened = sandbox.run(["--sim", "get", "s", "p", "--passcode-fd", "3"], fd3: CLISandbox.line("the-new-one"))
        #expect(opened.stdoutText == "behind the passcode")
        let again = sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "3"],
                                fd3: CLISandbox.line(CLISandbox.passcode) + CLISandbox.line("x"))
        #expect(again.code == 2)  // the old passcode no longer
    }

    @Test("passcode change, swtpm killed during it: the old passcode still opens, changes and enrols",
          arguments: 0..<changeCuts.count)
    func passcodeChange(_ cut: Int) throws {
        let (target, occurrence, moment) = Self.changeCuts[cut]
        let sandbox = try CLISandbox()
        defer { sandbox.close() }
        #expect(sandbox.setPasscode().code == 0)
        #expect(sandbox.run(["--sim", "add", "s", "p", "--access", "passcode"], stdin: Array("behind the passcode".utf8)).code == 0)
        let before = try Self.snapshot(sandbox.home)
        let old = CLISandbox.line(CLISandbox.passcode)
        let change = ["--sim", "passcode", "change", "--passcode-fd", "3"]

        let tap = try TPMTap(simulatorHome: sandbox.home, target: target, occurrence: occurrence, moment: moment)
        let result = sandbox.run(change, fd3: old + CLISandbox.line("interrupted-new"))
        tap.stop()
        #expect(tap.killed, "swtpm was not killed; commands seen: \(tap.seen.map { String($0, radix: 16) })")
        Self.expectTPMFailure(result, "passcode change")
        #expect(try Self.snapshot(sandbox.home) == before)

        Self.restart(sandbox)
        let get = ["--sim", "get", "s", "p", "--passcode-fd", "3"]
        let opened = sandbox.run(get, fd3: old)
        #expect(opened.code == 0, "the old passcode: \(opened.stderr)")
        #expect(opened.stdoutText == "behind the passcode")
        #expect(sandbox.run(get, fd3: CLISandbox.line("interrupted-new")).code == 2)
        // The old passcode still does everything a passcode does: enrol
        // (which writes the TPM's enrolment index with it) and change.
        #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
        let changed = sandbox.run(change, fd3: old + CLISandbox.line("another-new"))
        #expect(changed.code == 0, "changing from the old passcode: \(changed.stderr)")
        #expect(sandbox.run(get, fd3: CLISandbox.line("another-new")).stdoutText == "behind the passcode")
        // ... and the enrolment index now takes the new one (unenrolling writes it).
        let unenrolled = sandbox.run(["--sim", "unenroll", "--all", "--passcode-fd", "3"], fd3: CLISandbox.line("another-new"))
        #expect(unenrolled.code == 0, "unenroll with the new passcode: \(unenrolled.stderr)")
    }
}

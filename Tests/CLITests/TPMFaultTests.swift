import Foundation
import Glibc
import Testing
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
                      "SELECT 'item ' || id || ' ' || hex(lookup) || ' ' || hex(metadata) || ' ' || hex(secret) FROM items ORDER BY id",
                      "SELECT 'wrap ' || item_id || ' ' || alternative || ' ' || class_keys || ' ' || hex(wrapped) FROM wraps ORDER BY item_id, alternative"] {
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
}

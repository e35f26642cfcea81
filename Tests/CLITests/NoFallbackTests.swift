import Foundation
import Glibc
import TestRigs
import Testing

/// Where the daemon is the rule, an unreachable daemon is exit 11, never an
/// embedded vault in its place.
@Suite("no silent fall back to an embedded vault")
struct NoFallbackTests {
    @Test("after touchstone import, with the simulator's daemon stopped, --sim commands are exit 11 naming the socket (before the import, the same commands without a daemon used the embedded vault); --embedded still reads the vault that was moved")
    func afterImport() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "note", "a", "--access", "none"], stdin: Array("s-note".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "get", "note", "a"]).stdoutText == "s-note", "no daemon yet: the embedded vault")
            #expect(sandbox.run(["sim", "start", "--daemon"]).code == 0)
            let imported = sandbox.run(["--sim", "import", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode))
            #expect(imported.code == 0, "\(imported.stderr)")
            #expect(sandbox.run(["--sim", "get", "note", "a"]).stdoutText == "s-note", "through the daemon")

            // The daemon goes away (its process killed; the simulator's TPM stays).
            let pidText = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.pid", encoding: .utf8)) ?? ""
            let pid = try #require(Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
            kill(pid, SIGKILL)
            #expect(blockingEventually { kill(pid, 0) != 0 })
            unlink(sandbox.home + "/sim/daemon.sock")
            for command in [["--sim", "get", "note", "a"], ["--sim", "list"], ["--sim", "add", "new", "a", "--access", "none"]] {
                let refused = sandbox.run(command, stdin: Array("s-new".utf8))
                #expect(refused.code == 11, "\(command): \(refused.code) \(refused.stderr)")
                #expect(refused.stderr.contains("daemon.sock"), "\(refused.stderr)")
                #expect(refused.stdout.isEmpty)
            }
            // Chosen by name, the moved vault still lists (read-only).
            #expect(sandbox.run(["--sim", "--embedded", "list"]).code == 0)
        }
    }

    @Test("with the client settings saying engine=daemon and no system daemon, a command on the system's TPM is exit 11; without them, the same command uses the embedded vault")
    func clientSettings() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            // The system's TPM and reader (not the simulator's): the simulator's TPM by TCTI, so nothing reaches hardware.
            let options = ["--tpm", "swtpm:path=\(sandbox.home)/sim/tpm/sock", "--reader", "sim"]
            let conf = sandbox.scratch + "/client.conf"
            try "# this machine's users use touchstoned\nengine = daemon\n".write(toFile: conf, atomically: true, encoding: .utf8)
            let plain = sandbox.run(options + ["list"])
            #expect(plain.code == 0, "without the settings, the embedded vault: \(plain.stderr)")
            sandbox.extraEnvironment["TOUCHSTONE_TEST_CLIENT_CONF"] = conf
            let refused = sandbox.run(options + ["list"])
            #expect(refused.code == 11, "\(refused.code): \(refused.stderr)")
            #expect(refused.stderr.contains("/run/touchstone/socket"), "\(refused.stderr)")
            let embedded = sandbox.run(options + ["--embedded", "list"])
            #expect(embedded.code == 0, "--embedded chosen by name: \(embedded.stderr)")
        }
    }
}

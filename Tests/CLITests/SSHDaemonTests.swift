import Foundation
import Glibc
import Testing
import TestRigs

/// ssh keys through touchstoned: made, listed and signed with in the
/// daemon's per-user vault (its TPM key behind the daemon's gate).
@Suite("ssh keys through the daemon")
struct SSHDaemonTests {
    @Test("through touchstoned: alice's key is made in her vault and signs after her touch through her agent; bob sees none of it, cannot delete it, and a stranger's touch signs nothing")
    func keysThroughTheDaemon() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            try rig.setUp(rig.alice, finger: "right-index-finger", as: "alice-finger")
            try rig.setUp(rig.bob)
            let made = rig.run(rig.alice, ["ssh-key", "create", "laptop", "--access", "biometry-any", "--comment", "alice@daemon"])
            #expect(made.code == 0, "\(made.stderr)")
            let line = made.stdoutText.trimmingCharacters(in: .newlines)
            #expect(rig.run(rig.alice, ["ssh-key", "list"]).stdoutText.hasPrefix("laptop\tSHA256:"))
            #expect(rig.run(rig.bob, ["ssh-key", "list"]).stdoutText.isEmpty, "bob's vault has no key")
            #expect(rig.run(rig.bob, ["ssh-key", "delete", "laptop"]).code == 8)
            #expect(rig.run(rig.alice, ["ssh-key", "create", "laptop"]).code == 9)

            let socket = rig.alice.home + "/agent.sock"
            let agent = try rig.start(rig.alice, ["ssh-agent", "--socket", socket])
            defer {
                agent.signal(SIGTERM)
                _ = agent.wait(timeout: 60)
            }
            #expect(agent.waitForStderr("listening on"), "\(agent.stderrSoFar)")
            let environment = ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": socket, "HOME": rig.scratch]
            let listed = try CLIProcess.start(["-L"], environment: environment, scratch: rig.scratch, program: "/usr/bin/ssh-add").wait()
            #expect(listed.code == 0 && listed.stdoutText == line + "\n", "\(listed.stdoutText) \(listed.stderr)")

            let pub = rig.scratch + "/laptop.pub", message = rig.scratch + "/message"
            try (line + "\n").write(toFile: pub, atomically: true, encoding: .utf8)
            try "signed through the daemon\n".write(toFile: message, atomically: true, encoding: .utf8)
            func sign(touching id: String) throws -> CLIResult {
                let asked = agent.stderrSoFar.components(separatedBy: "touch the reader (").count
                let signing = try CLIProcess.start(["-Y", "sign", "-f", pub, "-n", "file", message], environment: environment,
                                                   scratch: rig.scratch, program: "/usr/bin/ssh-keygen")
                let deadline = Date().addingTimeInterval(60)
                while Date() < deadline && agent.stderrSoFar.components(separatedBy: "touch the reader (").count <= asked { usleep(20_000) }
                let touched = rig.touch(id)
                let result = signing.wait()
                return touched.code == 0 ? result : CLIResult(code: -1, stdout: [], stderr: "sim touch: \(touched.stderr)")
            }
            let refused = try sign(touching: "mallory")
            #expect(refused.code != 0 && !FileManager.default.fileExists(atPath: message + ".sig"), "\(refused.stderr)")
            let signed = try sign(touching: "alice-finger")
            #expect(signed.code == 0, "\(signed.stderr) \(agent.stderrSoFar)")
            try ("alice@daemon " + line + "\n").write(toFile: rig.scratch + "/allowed", atomically: true, encoding: .utf8)
            let verified = try CLIProcess.start(["-c", "exec ssh-keygen -Y verify -f \"$1\" -I alice@daemon -n file -s \"$2\" < \"$3\"", "sh",
                                                 rig.scratch + "/allowed", message + ".sig", message],
                                                environment: environment, scratch: rig.scratch, program: "/bin/sh").wait()
            #expect(verified.code == 0, "\(verified.stdoutText) \(verified.stderr)")
            #expect(rig.daemonLog.contains("ssh-sign"), "the daemon's log names the call")
        }
    }

    @Test("the agent answers its own user and root only: bob, on a socket he may open, is closed unanswered and logged, while alice and root list her key")
    func agentRefusesOtherUsers() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            try rig.setUp(rig.alice)
            #expect(rig.run(rig.alice, ["ssh-key", "create", "k", "--access", "none"]).code == 0)
            // A folder anyone may enter, and the socket opened to all: only the agent's own check is left.
            let folder = try makeTemporaryDirectory("tsu")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            chmod(folder, 0o777)
            let socket = folder + "/agent.sock"
            let agent = try rig.start(rig.alice, ["ssh-agent", "--socket", socket])
            defer {
                agent.signal(SIGTERM)
                _ = agent.wait(timeout: 60)
            }
            #expect(agent.waitForStderr("listening on"), "\(agent.stderrSoFar)")
            chmod(socket, 0o666)
            func list(as user: TestUser?) throws -> CLIResult {
                try CLIProcess.start(["-l"], environment: ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": socket, "HOME": folder],
                                     scratch: rig.scratch, wrapper: try user?.wrapper() ?? [], program: "/usr/bin/ssh-add").wait()
            }
            let alice = try list(as: rig.alice), root = try list(as: nil), bob = try list(as: rig.bob)
            #expect(alice.code == 0 && alice.stdoutText.contains("(ECDSA)"), "\(alice.stderr)")
            #expect(root.code == 0 && root.stdoutText.contains("(ECDSA)"), "\(root.stderr)")
            #expect(bob.code != 0 && !bob.stdoutText.contains("(ECDSA)"), "\(bob.stdoutText)")
            #expect(agent.stderrSoFar.contains("refused a connection from ssh-add (pid ") && agent.stderrSoFar.contains("of uid \(rig.bob.uid)"),
                    "\(agent.stderrSoFar)")
        }
    }
}

import Foundation
import Testing
import TestRigs

/// git-credential-touchstone as git uses it for real: `git ls-remote` and
/// `git clone` over HTTP against `git http-backend` behind Basic auth on
/// 127.0.0.1 (GitHTTPServer), on the simulator.
@Suite("git-credential-touchstone: git over HTTP with Basic auth")
struct GitHTTPTests {
    @Test("the first ls-remote gets the password from the next helper and git stores it in touchstone (biometry-any); a clone with touchstone alone waits for a touch and clones after a matching one, fails after a stranger's; a wrong stored password is refused by the server and git erases the item: embedded, and through the simulator's touchstoned",
          arguments: [false, true])
    func cloneOverHTTP(throughDaemon: Bool) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let started = sandbox.run(["sim", "start"] + (throughDaemon ? ["--daemon"] : []))
            #expect(started.code == 0, "\(started.stderr)")
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let repositories = sandbox.root + "/repos"
            let plain = try GitRig(sandbox, helpers: [])
            try GitHTTPServer.makeRepository("project", in: repositories, file: "README", content: "hello over http\n", git: plain)
            let server = try GitHTTPServer(root: repositories, user: "alice", password: "http-pass", scratch: sandbox.scratch)
            defer { server.stop() }
            let remote = server.url + "/project.git"
            let host = ["protocol": "http", "host": "127.0.0.1:\(server.port)"]

            // No helper: the server's 401 is git's failure (prompts are off).
            let refused = plain.run(["ls-remote", remote])
            #expect(refused.code == 128)
            #expect(refused.stderr.contains("terminal prompts disabled"), "\(refused.stderr)")

            // First use: touchstone has nothing, the next helper gives the
            // password (as a person would type it), the server takes it, and
            // git stores it with every helper: touchstone's store, no touch.
            let answer = "!f() { test \"$1\" = get && printf 'username=alice\\npassword=http-pass\\n'; }; f"
            let seeding = try GitRig(sandbox, helpers: ["touchstone --access biometry-any", answer])
            let first = seeding.run(["ls-remote", remote])
            #expect(first.code == 0, "\(first.stderr)")
            #expect(first.stdoutText.contains("refs/heads/main"))
            #expect(!first.stderr.contains("touch the reader"))
            #expect(seeding.items().map { [$0["service"], $0["account"], $0["access"]] }
                    == [["git:http://127.0.0.1:\(server.port)", "alice", "biometry-any"]])

            // touchstone alone: the clone waits for a touch.
            let only = try GitRig(sandbox, helpers: ["touchstone --access biometry-any"])
            let cloned = try clone(remote, into: sandbox.root + "/clone", with: only, touch: "alice")
            #expect(cloned.code == 0, "\(cloned.stderr)")
            #expect((try? String(contentsOfFile: sandbox.root + "/clone/README", encoding: .utf8)) == "hello over http\n")

            let stranger = try clone(remote, into: sandbox.root + "/clone2", with: only, touch: "mallory")
            #expect(stranger.code == 128)
            #expect(stranger.stderr.contains("the finger did not match"), "\(stranger.stderr)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.root + "/clone2/README"))
            #expect(only.items().count == 1)

            // A wrong password in the vault: the server refuses it and git
            // rejects the credential, which erases the item.
            #expect(only.approve(host.merging(["username": "alice", "password": "wrong"]) { $1 }).code == 0)
            let wrong = try clone(remote, into: sandbox.root + "/clone3", with: only, touch: "alice")
            #expect(wrong.code == 128)
            #expect(wrong.stderr.contains("Authentication failed"), "\(wrong.stderr)")
            #expect(only.items().isEmpty)
            let log = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(log.contains("get: ok") == throughDaemon, "\(log)")
        }
    }

    /// `git clone -q remote folder`, touched with `id` once the helper asks.
    private func clone(_ remote: String, into folder: String, with git: GitRig, touch id: String) throws -> CLIResult {
        let cloning = try git.start(["clone", "-q", remote, folder])
        guard cloning.waitForStderr("touch the reader") else { return cloning.wait() }
        let touch = git.sandbox.run(["sim", "touch", id, "--wait", "60"])
        let result = cloning.wait()
        return touch.code == 0 ? result : CLIResult(code: -1, stdout: result.stdout, stderr: "sim touch: \(touch.stderr)\n" + result.stderr)
    }
}

import Foundation
import Testing

/// Two touchstone processes that both need the simulated reader: the
/// second is told the reader is busy (exit 4), as with a real reader held
/// by fprintd; the first goes on, and nothing is corrupted.
@Suite("touchstone: two processes, one simulated reader (subprocess)", .serialized)
struct ConcurrencyTests {
    @Test("the second process gets exit 4 (busy); the first completes; the state is intact")
    func busyReader() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.close() }
        #expect(sandbox.setPasscode().code == 0)
        #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
        for account in ["one", "two"] {
            #expect(sandbox.run(["--sim", "add", "s", account, "--access", "biometry-any"], stdin: Array(account.utf8)).code == 0)
        }
        let first = try sandbox.start(["--sim", "get", "s", "one"])
        #expect(first.waitForStderr("touch the reader"))

        let second = sandbox.run(["--sim", "get", "s", "two"])
        #expect(second.code == 4)
        #expect(second.stderr.contains("busy"))
        #expect(second.stderr.contains("hint:"))
        // Commands that need no reader still run meanwhile.
        let status = sandbox.run(["--sim", "status", "--json"])
        #expect(status.code == 0)
        #expect(status.stdoutText.contains(#""available":false"#))
        #expect(sandbox.run(["--sim", "add", "s", "three", "--access", "none"], stdin: Array("three".utf8)).code == 0)

        #expect(sandbox.run(["sim", "touch", "alice"]).code == 0)
        let done = first.wait()
        #expect(done.code == 0, "\(done.stderr)")
        #expect(done.stdoutText == "one")

        let afterwards = sandbox.withTouch("alice", ["--sim", "get", "s", "two"])
        #expect(afterwards.stdoutText == "two")
        let list = sandbox.run(["--sim", "list", "--json"])
        #expect(list.code == 0)
        #expect(list.stdoutText.components(separatedBy: #""state":"ok""#).count - 1 == 3)
    }
}

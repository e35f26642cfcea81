import Foundation
import Testing
import TestRigs

/// passcode change and remove, unenroll, and the reader's retry hints, as a
/// person meets them from the command line.
@Suite("touchstone: passcode, fingers and retry hints (subprocess)", .serialized)
struct PasscodeAndFingerTests {
    @Test("passcode change (fd: current, then new), unenroll one finger then all, passcode remove --yes")
    func lifecycle() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.enroll("left-thumb", as: "carol").code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "protected", "--access", "passcode"], stdin: Array("p".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "open", "--access", "none"], stdin: Array("o".utf8)).code == 0)

            let new = "n3w-pass"
            let change = sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "0"],
                                     stdin: CLISandbox.line(CLISandbox.passcode) + CLISandbox.line(new))
            #expect(change.code == 0, "\(change.stderr)")
            #expect(sandbox.run(["--sim", "get", "s", "protected", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode)).code == 2)
            #expect(sandbox.run(["--sim", "get", "s", "protected", "--passcode-fd", "0"], stdin: CLISandbox.line(new)).stdoutText == "p")

            let notEnrolled = sandbox.run(["--sim", "unenroll", "right-thumb", "--passcode-fd", "0"], stdin: CLISandbox.line(new))
            #expect(notEnrolled.code == 1)
            #expect(notEnrolled.stderr.contains("not enrolled"))
            #expect(sandbox.run(["--sim", "unenroll", "left-thumb", "--passcode-fd", "0"], stdin: CLISandbox.line(new)).code == 0)
            #expect(sandbox.run(["--sim", "fingers"]).stdoutText == "right-index-finger\n")
            #expect(sandbox.run(["--sim", "unenroll", "--all", "--passcode-fd", "0"], stdin: CLISandbox.line(new)).code == 0)
            #expect(sandbox.run(["--sim", "fingers", "--json"]).stdoutText == "[]\n")
            #expect(sandbox.run(["--sim", "unenroll", "--all", "--passcode-fd", "0"], stdin: CLISandbox.line(new)).code == 5)

            #expect(sandbox.run(["--sim", "passcode", "remove", "--yes", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode)).code == 2)
            let removed = sandbox.run(["--sim", "passcode", "remove", "--yes", "--passcode-fd", "0"], stdin: CLISandbox.line(new))
            #expect(removed.code == 0, "\(removed.stderr)")
            #expect(sandbox.run(["--sim", "status", "--json"]).stdoutText.contains(#""passcodeSet":false"#))
            #expect(sandbox.run(["--sim", "get", "s", "protected"]).code == 10)
            #expect(sandbox.run(["--sim", "get", "s", "open"]).stdoutText == "o")
            #expect(sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "0"], stdin: CLISandbox.line(new)).code == 7)
        }
    }

    @Test("with two fingers enrolled on the simulated reader, a touch of either opens a biometry-any item; a stranger's does not")
    func eitherFinger() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.enroll("left-thumb", as: "carol").code == 0)  // first in name order
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "biometry-any"], stdin: Array("both".utf8)).code == 0)
            for id in ["alice", "carol"] {
                let result = sandbox.withTouch(id, ["--sim", "get", "s", "a"])
                #expect(result.code == 0, "\(id): \(result.stderr)")
                #expect(result.stdoutText == "both")
            }
            #expect(sandbox.withTouch("mallory", ["--sim", "get", "s", "a"]).code == 2)
        }
    }

    @Test("a poor scan shows the reader's retry hint on stderr; the command keeps waiting and then succeeds")
    func retryHint() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let waiting = try sandbox.start(["--sim", "verify"])
            #expect(waiting.waitForStderr("touch the reader"))
            #expect(sandbox.run(["sim", "retry", "too-short"]).code == 0)
            #expect(waiting.waitForStderr("swipe too short"))
            #expect(sandbox.run(["sim", "touch", "alice"]).code == 0)
            let result = waiting.wait()
            #expect(result.code == 0, "\(result.stderr)")
        }
    }

    @Test("sim touch with no process waiting for a touch: exit 4 after --wait")
    func touchWithoutReader() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let result = sandbox.run(["sim", "touch", "alice", "--wait", "0.5"])
            #expect(result.code == 4)
            #expect(result.stderr.contains("hint:"))
        }
    }
}

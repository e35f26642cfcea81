import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneSimulator

@Suite("touchstone at a terminal (a pseudo-terminal of the test's)")
struct TerminalTests {
    @Test("Enter while a touch is awaited asks for the passcode, typed with echo off; the secret opens: embedded, and through the simulator's touchstoned (touchstone-get)",
          arguments: [false, true])
    func enterForThePasscode(throughDaemon: Bool) async throws {
        // All of it on a thread of its own, the waits blocking: the Enter
        // must come within the touch prompt's 30 s (then it ends, exit 3,
        // silently), which a test that waits for a pool thread can miss in
        // the whole suite.
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            #expect(sandbox.run(["sim", "start"] + (throughDaemon ? ["--daemon"] : [])).code == 0)
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "user-presence"], stdin: Array("opened".utf8)).code == 0)

            let stdoutPath = sandbox.scratch + "/tty-get.out"
            let terminal = try PseudoTerminal()
            try terminal.spawn(CLIProcess.binary, ["--sim", "get", "s", "a"], stdout: stdoutPath,
                               environment: sandbox.environment, scratch: sandbox.scratch)
            #expect(terminal.blockingWaitForStderr("Enter: use passcode"), "\(terminal.stderr)")
            terminal.type("\n")
            #expect(terminal.blockingWaitForStderr("Passcode: "), "\(terminal.stderr)")
            terminal.type(CLISandbox.passcode + "\n")
            #expect(terminal.blockingWait() == 0, "\(terminal.stderr)")
            #expect((try? String(contentsOfFile: stdoutPath, encoding: .utf8)) == "opened")
            // The terminal echoes what is typed with echo on (the Enter), and
            // not the passcode.
            let echoed = String(decoding: terminal.echoed, as: UTF8.self)
            #expect(echoed.contains("\r\n"), "nothing echoed at all: \(terminal.echoed)")
            #expect(!echoed.contains(CLISandbox.passcode), "the passcode was echoed: \(echoed)")
            if throughDaemon {
                let log = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
                #expect(log.split(separator: "\n").contains { $0.contains("/touchstone-get (touchstone-get, pid ") && $0.contains("): get: ok") }, "\(log)")
            }
        }
    }
}

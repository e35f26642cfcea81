import Foundation
import Glibc
import TestRigs
import Testing
import TouchstoneServer
import TouchstoneSimulator

/// The throttle as one step per uid, against the daemon as outside client
/// processes speak to it (issue 22, item 3).
extension DaemonThrottleTests {
    @Test("32 wrong passcodes at once, from 32 client processes: judged exactly ten times (exit 2), the rest refused as throttled (exit 12), the TPM saw none; the right passcode opens before, is refused during the wait and opens after it")
    func parallelWrongPasscodes() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            // The daemon's clock (debug builds): moved on by the test instead of slept through.
            let clock = rig.root + "/clock"
            func advance(_ seconds: Double) throws {
                let now = Double((try? String(contentsOfFile: clock, encoding: .utf8)) ?? "0") ?? 0
                try "\(now + seconds)".write(toFile: clock, atomically: false, encoding: .utf8)
                #expect(chmod(clock, 0o644) == 0)
            }
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
}

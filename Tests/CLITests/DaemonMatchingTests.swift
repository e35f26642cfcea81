import Foundation
import TestRigs
import Testing

/// Two matching touches (`matching --touches 2`) in daemon mode: the
/// daemon judges both touches and keeps the setting per user; only the
/// passcode changes it, whatever a client sends.
@Suite("touchstoned: two matching touches")
struct DaemonMatchingTests {
    @Test("spoken by hand: the setting refuses 3 and a wrong passcode (unchanged), takes the right one; then a grant needs two touches of one finger (the owner's then a stranger's: refused), where one touch was enough before")
    func rawProtocol() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            // This process (root) speaks the protocol for its own vault.
            try rig.setUpRoot(as: "root-finger")

            /// Asks for matching-touches-set on a connection of its own (a
            /// request that does not decode is refused, and its connection
            /// closed); the answer when it is no success, nil on success.
            func setTouches(_ touches: String, passcode: String) throws -> String? {
                let client = try RawClient(rig.socket)
                client.send(#"{"head":{"operation":"matching-touches-set","program":"hostile","interactive":false},"request":{"touches":\#(touches),"passcode":0}}"#,
                            secrets: [Array(passcode.utf8)])
                let answer = try client.receive()
                if answer.json["success"] != nil { return nil }
                return "\(answer.json)"
            }
            /// A grant asked by hand; `touches` sent to the reader in order once asked. The grant's id, or nil.
            func grant(touching touches: [String]) throws -> UInt64? {
                let client = try RawClient(rig.socket)
                client.send(#"{"head":{"operation":"authenticate","program":"hostile","interactive":false},"request":{"access":{"flags":["biometry-any"],"combination":"any"},"reasonText":"by hand","interactionNotAllowed":false,"touchTimeoutMilliseconds":60000,"reuseSeconds":0}}"#)
                for id in touches { #expect(rig.touch(id).code == 0) }
                let answer = try client.receive()
                let success = (answer.json["success"] as? [String: Any])?["_0"] as? [String: Any]
                return (success?["id"] as? NSNumber)?.uint64Value
            }
            func shown() throws -> String { try rig.asRoot(["matching"]).wait().stdoutText }

            #expect(try grant(touching: ["root-finger"]) != nil, "one touch is enough by default: \(rig.daemonLog)")
            #expect(try setTouches("3", passcode: DaemonRig.passcode) != nil, "3 is no setting")
            #expect(try setTouches("2", passcode: "not-the-passcode") != nil, "a wrong passcode is refused")
            #expect(try shown() == "1\n", "neither changed it")
            #expect(try setTouches("2", passcode: DaemonRig.passcode) == nil)
            #expect(try shown() == "2\n")

            #expect(try grant(touching: ["root-finger", "someone-else"]) == nil, "the second touch is judged too")
            #expect(try grant(touching: ["root-finger", "root-finger"]) != nil, "two touches of the enrolled finger grant")
        }
    }

    @Test("per user: alice's two touches leave bob's one; alice's get opens after two touches of her finger and not after hers then bob's")
    func perUser() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            try rig.setUp(rig.alice, finger: "right-index-finger", as: "alice-finger")
            try rig.setUp(rig.bob, finger: "right-index-finger", as: "bob-finger")
            for user in [rig.alice, rig.bob] {
                #expect(rig.run(user, ["add", "bank", "me", "--access", "biometry-current-set"], stdin: Array("\(user.name)-bank".utf8)).code == 0)
            }
            #expect(rig.run(rig.alice, ["matching", "--touches", "2", "--passcode-fd", "0"], stdin: CLISandbox.line(DaemonRig.passcode)).code == 0)
            #expect(rig.run(rig.alice, ["matching"]).stdoutText == "2\n")
            #expect(rig.run(rig.bob, ["matching"]).stdoutText == "1\n")

            let bobs = rig.withTouch(rig.bob, "bob-finger", ["get", "bank", "me"])
            #expect(bobs.stdoutText == "\(rig.bob.name)-bank" && !bobs.stderr.contains("matched"), "\(bobs.stderr)")
            let refused = rig.withTouches(rig.alice, ["alice-finger", "bob-finger"], ["get", "bank", "me"])
            #expect(refused.code == 2 && refused.stdout.isEmpty, "\(refused.code): \(refused.stderr)")
            let opened = rig.withTouches(rig.alice, ["alice-finger", "alice-finger"], ["get", "bank", "me"])
            #expect(opened.stdoutText == "\(rig.alice.name)-bank", "\(opened.code): \(opened.stderr)")
        }
    }
}

extension DaemonRig {
    /// Runs a command as `user` that waits for touches: the first of `ids`
    /// once it asks for a touch, each next one once it asks again.
    func withTouches(_ user: TestUser, _ ids: [String], _ arguments: [String]) -> CLIResult {
        guard let waiting = try? start(user, arguments) else { return CLIResult(code: -1, stdout: [], stderr: "cannot start") }
        for (index, id) in ids.enumerated() {
            let asked = index == 0 ? "touch the reader" : "(touch \(index + 1) of \(ids.count): the same finger again)"
            guard waiting.waitForStderr(asked) else { return waiting.wait() }
            let touched = touch(id)
            guard touched.code == 0 else { return CLIResult(code: -1, stdout: [], stderr: "sim touch: \(touched.stderr)") }
        }
        return waiting.wait()
    }
}

import Foundation
import Testing
import TestRigs

/// The main journey on the simulator, each step's exit code as the contract
/// says: 7 before a passcode, 1 for a second passcode, 5 with no finger, 0
/// for a matching touch, 2 for a stranger's, 9 for a duplicate, 10 for a
/// biometry-current-set item after the set changed, 8 for a missing item.
@Suite("touchstone: the journey on the simulator (subprocess)", .serialized)
struct JourneyTests {
    @Test("enrol, store, get with a matching touch, refuse a stranger, invalidate on a new finger")
    func journey() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }

            // No passcode yet: exit 7, with the hint.
            let early = sandbox.run(["--sim", "enroll", "--passcode-fd", "0"], stdin: CLISandbox.line("x"))
            #expect(early.code == 7)
            #expect(early.stderr.contains("touchstone: error: no passcode is set"))
            #expect(early.stderr.contains("hint: touchstone passcode set"))
            #expect(sandbox.run(["--sim", "verify"]).code == 7)
            // An item that needs authentication cannot be stored without one.
            #expect(sandbox.run(["--sim", "add", "web", "early"], stdin: Array("x".utf8)).code == 7)

            #expect(sandbox.setPasscode().code == 0)
            let again = sandbox.run(["--sim", "passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line("other"))
            #expect(again.code == 1)
            #expect(again.stderr.contains("already set"))

            // A passcode but no finger: biometry-only verify is exit 5.
            let none = sandbox.run(["--sim", "verify"])
            #expect(none.code == 5)
            #expect(none.stderr.contains("no finger is enrolled"))

            let enrolled = sandbox.enroll("right-index-finger", as: "alice")
            #expect(enrolled.code == 0, "\(enrolled.stderr)")
            #expect(enrolled.stderr.contains("Touch 3 of 5"))
            let fingers = sandbox.run(["--sim", "fingers", "--json"])
            #expect(fingers.code == 0)
            #expect(fingers.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == #"["right-index-finger"]"#)

            #expect(sandbox.run(["--sim", "add", "web", "current", "--access", "biometry-current-set", "--label", "L"],
                                stdin: Array("current-set secret".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "add", "web", "any", "--access", "biometry-any", "--comment", "work laptop"], stdin: Array("any secret".utf8)).code == 0)
            let duplicate = sandbox.run(["--sim", "add", "web", "any"], stdin: Array("x".utf8))
            #expect(duplicate.code == 9)

            let matched = sandbox.withTouch("alice", ["--sim", "get", "web", "current"])
            #expect(matched.code == 0, "\(matched.stderr)")
            #expect(matched.stdoutText == "current-set secret")
            #expect(matched.stderr.contains("touch the reader"))

            let stranger = sandbox.withTouch("mallory", ["--sim", "get", "web", "current"])
            #expect(stranger.code == 2)
            #expect(stranger.stdout.isEmpty)

            // A second finger: the biometry-current-set item is invalidated
            // (exit 10, no touch asked), the biometry-any item still opens.
            #expect(sandbox.enroll("right-thumb", as: "bob").code == 0)
            let invalidated = sandbox.run(["--sim", "get", "web", "current"])
            #expect(invalidated.code == 10)
            #expect(!invalidated.stderr.contains("touch the reader"))
            let listed = sandbox.run(["--sim", "list", "--json"])
            let items = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]])
            let states = Dictionary(uniqueKeysWithValues: items.map { ($0["account"] as? String ?? "?", $0["state"] as? String ?? "?") })
            #expect(states == ["current": "invalidated", "any": "ok"])
            let current = try #require(items.first { $0["account"] as? String == "current" })
            #expect(current["access"] as? String == "biometry-current-set")
            #expect(current["label"] as? String == "L")
            #expect(current["comment"] is NSNull)
            for key in ["service", "account", "label", "comment", "access", "created", "modified", "state"] {
                #expect(current[key] != nil, "list --json lacks \(key)")
            }
            let created = try #require(current["created"] as? String)
            #expect(ISO8601DateFormatter().date(from: created) != nil)
            // The plain list has the same fields, a tab-separated line each:
            // service, account, access, state, created, modified, label, comment.
            let plain = sandbox.run(["--sim", "list"]).stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
            let modified = try #require(current["modified"] as? String)
            #expect(plain.contains("web\tcurrent\tbiometry-current-set\tinvalidated\t\(created)\t\(modified)\tL\t"), "\(plain)")
            #expect(plain.contains { $0.hasPrefix("web\tany\tbiometry-any\tok\t") && $0.hasSuffix("\t\twork laptop") }, "\(plain)")

            let any = sandbox.withTouch("alice", ["--sim", "get", "web", "any"])
            #expect(any.code == 0, "\(any.stderr)")
            #expect(any.stdoutText == "any secret")

            #expect(sandbox.run(["--sim", "get", "web", "missing"]).code == 8)
            #expect(sandbox.run(["--sim", "delete", "web", "any"]).code == 0)
            #expect(sandbox.run(["--sim", "delete", "web", "any"]).code == 8)
            #expect(sandbox.run(["--sim", "get", "web", "any"]).code == 8)
        }
    }

    @Test("update replaces the secret after the item's authentication; status --json has the contract's keys")
    func updateAndStatus() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "svc", "acct", "--access", "passcode"], stdin: Array("old".utf8)).code == 0)
            let updated = sandbox.run(["--sim", "update", "svc", "acct", "--passcode-fd", "3"],
                                      stdin: Array("new value".utf8), fd3: CLISandbox.line(CLISandbox.passcode))
            #expect(updated.code == 0, "\(updated.stderr)")
            let read = sandbox.run(["--sim", "get", "svc", "acct", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode))
            #expect(read.stdoutText == "new value")

            let status = sandbox.run(["--sim", "status", "--json"])
            #expect(status.code == 0)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any])
            #expect((object["reader"] as? [String: Any])?["available"] as? Bool == true)
            #expect((object["tpm"] as? [String: Any])?["available"] as? Bool == true)
            #expect((object["vault"] as? [String: Any])?["available"] as? Bool == true)
            #expect(object["passcodeSet"] as? Bool == true)
            #expect(object["fingers"] as? [String] == [])
            #expect(object["biometryLockout"] as? Bool == false)
            #expect(object["failedAttempts"] as? Int == 0)
            #expect(object["items"] as? Int == 1)
        }
    }
}

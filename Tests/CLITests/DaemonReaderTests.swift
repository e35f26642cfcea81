import Foundation
import Glibc
import TestRigs
import Testing

/// The daemon's reader is every user's: nobody holds it longer than the
/// daemon allows.
@Suite("touchstoned's reader, shared")
struct DaemonReaderTests {
    @Test("a get that asks to wait an hour for a touch is ended by the daemon's cap (60 s: exit 3, no touch came), and the reader is free for another user, whose touch then opens; a touch within the cap opens")
    func touchTimeoutCapped() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            try rig.setUp(rig.alice, finger: "right-index-finger", as: "alice-finger")
            try rig.setUp(rig.bob, finger: "right-index-finger", as: "bob-finger")
            #expect(rig.run(rig.alice, ["add", "bank", "alice", "--access", "biometry-any"], stdin: Array("alice-bank".utf8)).code == 0)
            #expect(rig.run(rig.bob, ["add", "bank", "bob", "--access", "biometry-any"], stdin: Array("bob-bank".utf8)).code == 0)
            let touched = rig.withTouch(rig.alice, "alice-finger", ["--timeout", "3600", "get", "bank", "alice"])
            #expect(touched.stdoutText == "alice-bank", "a touch within the cap: \(touched.stderr)")

            // An hour asked, no touch: the daemon ends it at its cap; the
            // wait here (five minutes) is only how long this test gives it.
            let hour = rig.run(rig.alice, ["--timeout", "3600", "get", "bank", "alice"], timeout: 300)
            #expect(hour.code == 3, "\(hour.code): \(hour.stderr)")
            let after = rig.withTouch(rig.bob, "bob-finger", ["get", "bank", "bob"])
            #expect(after.stdoutText == "bob-bank", "\(after.stderr)")
        }
    }
}

import Foundation
import Glibc
import TestRigs
import Testing

/// The daemon's reader is every user's: nobody holds it longer than the
/// daemon allows.
@Suite("touchstoned's reader, shared")
struct DaemonReaderTests {
    @Test("a one-hour enrolment by bob holds the reader at most the daemon's 60 s touch cap (exit 3, no touch came): alice's get meanwhile waits its turn (never exit 4, busy) and her touch then opens her item; a touch within the cap opens at once")
    func enrolmentHoldsTheReaderOneTouchAtMost() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            try rig.setUp(rig.alice, finger: "right-index-finger", as: "alice-finger")
            try rig.setUp(rig.bob)
            #expect(rig.run(rig.alice, ["add", "bank", "alice", "--access", "biometry-any"], stdin: Array("alice-bank".utf8)).code == 0)
            // The path works: a get with the reader free.
            let free = rig.withTouch(rig.alice, "alice-finger", ["--timeout", "3600", "get", "bank", "alice"])
            #expect(free.stdoutText == "alice-bank", "a touch within the cap: \(free.stderr)")

            // Bob asks an hour for each touch and gives one: he has the reader.
            let enrolling = try rig.start(rig.bob, ["--timeout", "3600", "enroll", "right-index-finger", "--passcode-fd", "0"],
                                          stdin: CLISandbox.line(DaemonRig.passcode))
            #expect(rig.touch("bob-finger").code == 0)
            #expect(enrolling.waitForStderr("Touch 1 of"), "\(enrolling.stderrSoFar)")
            // Alice's get waits its turn, as the daemon logs.
            let getting = try rig.start(rig.alice, ["get", "bank", "alice"])
            let waits = "uid \(rig.alice.uid) waits its turn for the reader (uid \(rig.bob.uid) has it)"
            #expect(blockingEventually { rig.daemonLog.contains(waits) }, "\(rig.daemonLog)")
            // No second touch: the daemon ends bob's enrolment at its cap
            // (the five minutes here are only how long this test gives it).
            let enrolled = enrolling.wait(timeout: 300)
            #expect(enrolled.code == 3, "\(enrolled.code): \(enrolled.stderr)")
            // Then alice has the reader: her touch opens her item.
            #expect(getting.waitForStderr("touch the reader", timeout: 60), "\(getting.stderrSoFar)")
            #expect(rig.touch("alice-finger").code == 0)
            let got = getting.wait()
            #expect(got.code == 0 && got.stdoutText == "alice-bank", "\(got.code): \(got.stderr)")
        }
    }

    @Test("a whole enrolment holds the reader at most the daemon's cap (here set to 40 s): five touches in a row enrol; five touches twelve seconds apart (each well inside the 60 s touch cap) are ended at the cap, exit 3, nothing enrolled")
    func wholeEnrolmentCapped() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            try rig.startDaemon(extraEnvironment: ["TOUCHSTONE_TEST_LONGEST_ENROLMENT_SECONDS": "40"])
            try rig.setUp(rig.bob)
            // Five touches in a row: enrolled.
            try rig.setUpFinger(rig.bob, "right-index-finger", as: "bob-finger")
            #expect(rig.run(rig.bob, ["fingers"]).stdoutText.contains("right-index-finger"))

            // A slow person: a touch every twelve seconds, forty-eight in all.
            let enrolling = try rig.start(rig.bob, ["enroll", "left-index-finger", "--passcode-fd", "0"],
                                          stdin: CLISandbox.line(DaemonRig.passcode))
            for _ in 0..<5 where enrolling.poll() == nil {
                _ = rig.touch("bob-finger-2")
                sleep(12)
            }
            let enrolled = enrolling.wait(timeout: 120)
            #expect(enrolled.code == 3, "\(enrolled.code): \(enrolled.stderr)")
            #expect(!rig.run(rig.bob, ["fingers"]).stdoutText.contains("left-index-finger"))
        }
    }
}

import Foundation
import Testing
import TestRigs

/// Every device error the simulated reader can inject, and the reader
/// unplugged during an enrolment, as a person at the terminal meets them.
@Suite("touchstone: reader faults (subprocess)")
struct ReaderFaultTests {
    /// `sim error CODE` while `verify` waits: the exit code and what the one
    /// error line must say.
    static let expectations: [(code: String, exit: Int32, says: String)] = [
        ("general", 4, "fingerprint unavailable: fingerprint reader not available: an unspecified error occurred"),
        ("not-supported", 4, "the operation is not supported on this device"),
        ("not-open", 4, "the device needs to be opened first"),
        ("already-open", 4, "the device has already been opened"),
        ("busy", 4, "the simulated reader is busy"),
        ("proto", 4, "fingerprint reader protocol error"),
        ("data-invalid", 1, "fingerprint reader rejected the print data as invalid"),
        ("data-not-found", 2, "the finger did not match"),  // a match-on-chip reader's "no such print" is a no-match
        ("data-full", 1, "fingerprint reader storage is full"),
        ("data-duplicate", 1, "this finger is already enrolled on the fingerprint reader"),
        ("removed", 4, "the fingerprint reader was disconnected"),
        ("too-hot", 4, "fingerprint reader is too hot; let it cool down and try again"),
    ]

    @Test("every device error the simulated reader can inject during verify: its exit code and one clear error line")
    func everyInjectableError() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            for (code, exit, says) in Self.expectations {
                let waiting = try sandbox.start(["--sim", "verify"])
                #expect(waiting.waitForStderr("touch the reader"), "\(code)")
                let injected = sandbox.run(["sim", "error", code])
                #expect(injected.code == 0, "sim error \(code): \(injected.stderr)")
                let result = waiting.wait()
                #expect(result.code == exit, "\(code): exit \(result.code): \(result.stderr)")
                let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("touchstone: error: ") }
                #expect(errors.count == 1, "\(code): \(result.stderr)")
                #expect(errors.first?.contains(says) == true, "\(code): \(result.stderr)")
                // libfprint's own punctuation and the real-reader hints stay out.
                #expect(!result.stderr.contains("!"), "\(code): \(result.stderr)")
                #expect(!result.stderr.contains("touchstone status"), "\(code): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
            // The reader still works after all of them.
            let touched = sandbox.withTouch("alice", ["--sim", "verify"])
            #expect(touched.code == 0, "\(touched.stderr)")
        }
    }

    @Test("the reader unplugged in the middle of an enrolment: exit 4, no finger added, the next enrolment works")
    func unpluggedDuringEnrollment() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "biometry-current-set"], stdin: Array("kept".utf8)).code == 0)

            let enrolling = try sandbox.start(["--sim", "enroll", "left-thumb", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode))
            #expect(sandbox.run(["sim", "touch", "bob", "--wait", "60"]).code == 0)
            #expect(enrolling.waitForStderr("Touch 1 of 5"))  // one stage done
            #expect(sandbox.run(["sim", "unplug"]).code == 0)
            let result = enrolling.wait()
            #expect(result.code == 4, "\(result.stderr)")
            #expect(result.stderr.contains("touchstone: error: the fingerprint reader was disconnected"), "\(result.stderr)")

            // Nothing of the half enrolment: the same finger list, and the
            // enrolment set unchanged (the biometry-current-set item still opens
            // with the first finger).
            #expect(sandbox.run(["--sim", "fingers"]).stdoutText == "right-index-finger\n")
            let opened = sandbox.withTouch("alice", ["--sim", "get", "s", "a"])
            #expect(opened.code == 0, "\(opened.stderr)")
            #expect(opened.stdoutText == "kept")
            #expect(sandbox.enroll("left-thumb", as: "bob").code == 0)
            #expect(sandbox.run(["--sim", "fingers"]).stdoutText.split(separator: "\n").sorted() == ["left-thumb", "right-index-finger"])
        }
    }
}

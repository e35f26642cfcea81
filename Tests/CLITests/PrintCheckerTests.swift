import Foundation
import Glibc
import TestRigs
import Testing
import Touchstone
import TouchstoneServer

/// `touchstoned --check-prints`, the daemon's print checker, run as the
/// daemon runs it: a request on stdin, a reply on stdout. Its confinement
/// probed from inside (debug hooks, TOUCHSTONE_TEST_PRINT_CHECK=1: a print
/// whose bytes are `test:...` makes it try a call before or after it
/// confined itself, and say on stderr what happened).
@Suite("The print checker: libfprint's reading, confined")
struct PrintCheckerTests {
    static func checker(_ prints: [[UInt8]], hooks: Bool = false) throws -> CLIResult {
        let scratch = try makeTemporaryDirectory("pc")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var environment = ["SWIFT_BACKTRACE": "enable=no"]
        if hooks { environment["TOUCHSTONE_TEST_PRINT_CHECK"] = "1" }
        return try CLIProcess.start(["--check-prints"], stdin: PrintCheckWire.request(prints), environment: environment,
                                    scratch: scratch, program: DaemonRig.daemonBinary).wait(timeout: 60)
    }

    @Test("a real print is read and re-serialized (virtual_device/0, right-thumb), and its re-serialization reads back the same; junk is refused with libfprint's reason; in the same process, under the confinement")
    func readsPrints() throws {
        let mallory = try DaemonPrintCheckTests.mallory
        let result = try Self.checker([mallory, Array("not a print".utf8), Array("FP".utf8)])
        #expect(result.code == 0, "\(result.stderr)")
        let readings = try PrintCheckWire.readings(inReply: result.stdout, expected: 3)
        guard case .read(let driver, let deviceID, let finger, let data) = readings[0] else {
            Issue.record("the real print: \(readings[0])")
            return
        }
        #expect(driver == "virtual_device" && deviceID == "0" && finger == .rightThumb && !data.isEmpty)
        #expect(readings[1] == .refused("libfprint cannot read it (Data could not be parsed)"))
        #expect(readings[2] == .refused("the print data is truncated (2 bytes)"))
        let again = try Self.checker([data])
        #expect(try PrintCheckWire.readings(inReply: again.stdout, expected: 1) == [readings[0]])
    }

    @Test("once confined it cannot open a file (EPERM) where just before it could; a socket kills it (SIGSYS); it runs with no_new_privs, its seccomp filter and its limits (no core, CPU, address space); without the hooks' variable the markers are junk prints")
    func confined() throws {
        let mallory = try DaemonPrintCheckTests.mallory
        let opening = try Self.checker([Array("test:open-before".utf8), Array("test:open-after".utf8), mallory], hooks: true)
        #expect(opening.code == 0, "\(opening.stderr)")
        #expect(opening.stderr.contains("test: open /etc/passwd before confinement: opened"), "\(opening.stderr)")
        #expect(opening.stderr.contains("test: open /etc/passwd after confinement: Operation not permitted"), "\(opening.stderr)")
        let readings = try PrintCheckWire.readings(inReply: opening.stdout, expected: 3)
        if case .read = readings[2] {} else { Issue.record("the real print after the probes: \(readings[2])") }

        let socket = try Self.checker([Array("test:socket-after".utf8), mallory], hooks: true)
        #expect(socket.code == 128 + SIGSYS, "\(socket.code): \(socket.stderr)")
        #expect(!socket.stderr.contains("socket after confinement"), "\(socket.stderr)")
        #expect(socket.stdout.isEmpty)

        // Paused once confined: no_new_privs, a seccomp filter, the limits.
        let scratch = try makeTemporaryDirectory("pc")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let paused = try CLIProcess.start(["--check-prints"], stdin: PrintCheckWire.request([Array("test:pause-after".utf8)]),
                                          environment: ["SWIFT_BACKTRACE": "enable=no", "TOUCHSTONE_TEST_PRINT_CHECK": "1"],
                                          scratch: scratch, program: DaemonRig.daemonBinary)
        #expect(paused.waitForStderr("test: paused after confinement"), "\(paused.stderrSoFar)")
        let status = (try? String(contentsOfFile: "/proc/\(paused.pid)/status", encoding: .utf8)) ?? ""
        let limits = ((try? String(contentsOfFile: "/proc/\(paused.pid)/limits", encoding: .utf8)) ?? "")
            .split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        paused.signal(SIGKILL)
        _ = paused.wait()
        #expect(status.contains("NoNewPrivs:\t1") && status.contains("Seccomp:\t2"), "\(status)")
        #expect(limits.contains("Max core file size 0 0 bytes"), "\(limits)")
        #expect(limits.contains("Max cpu time 4 5 seconds"), "\(limits)")
        #expect(limits.contains("Max address space 1073741824 1073741824 bytes"), "\(limits)")

        let plain = try Self.checker([Array("test:open-after".utf8), Array("test:socket-after".utf8)])
        #expect(plain.code == 0 && !plain.stderr.contains("test:"), "\(plain.stderr)")
        #expect(try PrintCheckWire.readings(inReply: plain.stdout, expected: 2).allSatisfy { if case .refused = $0 { true } else { false } })
    }

    @Test("the daemon's side: ChildPrintChecker spawns the checker (clean environment, pipes), reads a print in two passes, a junk one in one, and refuses a checker that is not there")
    func parentSide() throws {
        var checker = ChildPrintChecker()
        checker.executable = DaemonRig.daemonBinary
        // Both passes: the print, then libfprint's serialization of it.
        let read = try checker.check([try DaemonPrintCheckTests.mallory])
        guard read.count == 1, case .read("virtual_device", "0", .rightThumb?, let data) = read[0], !data.isEmpty else {
            Issue.record("\(read)")
            return
        }
        let readings = try checker.check([try DaemonPrintCheckTests.mallory, Array("junk".utf8)])
        guard readings.count == 2, readings[0] == read[0], case .refused = readings[1] else {
            Issue.record("\(readings)")
            return
        }
        checker.executable = "/nonexistent/touchstoned"
        #expect { try checker.check([try DaemonPrintCheckTests.mallory]) } throws: { error in
            "\(error)".contains("cannot start the print checker")
        }
    }
}

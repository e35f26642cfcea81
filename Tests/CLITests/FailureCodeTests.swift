import Foundation
import Glibc
import Testing
import TestRigs
@testable import TouchstoneVault
import TouchstoneTPM

/// The exit codes of failures, each reached in the situation the contract
/// names: 3 (Ctrl-C, SIGTERM), 4 (reader unplugged), 6 (biometric lockout),
/// 11 (no simulator), 12 (TPM lockout), 13 (tampered store), 14 (no
/// terminal), 1 (other).
@Suite("touchstone: failure exit codes (subprocess)", .serialized)
struct FailureCodeTests {
    @Test("--sim without a running simulator: exit 11 with the hint to start it")
    func noSimulator() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            for arguments in [["--sim", "fingers"], ["--sim", "list"], ["--tpm", "sim", "status"]] {
                let result = sandbox.run(arguments)
                #expect(result.code == 11, "\(arguments)")
                #expect(result.stderr.contains("touchstone: error: the simulator is not running"))
                #expect(result.stderr.contains("hint: touchstone sim start"))
                if arguments.last == "status" {
                    #expect(result.stdoutText.contains("TPM:       not available: the simulator is not running"), "\(result.stdoutText)")
                    #expect(result.stdoutText.contains("vault:     not open: it needs the TPM"), "\(result.stdoutText)")
                }
            }
            let status = sandbox.run(["sim", "status", "--json"])
            #expect(status.code == 0)
            #expect(status.stdoutText.contains(#""running":false"#))
        }
    }

    @Test("Ctrl-C or SIGTERM while waiting for a touch: exit 3, no error text, and the next command works; embedded, and through the simulator's touchstoned (the get then runs in touchstone-get)",
          arguments: [SIGINT, SIGTERM], [false, true])
    func interrupt(_ signalNumber: Int32, throughDaemon: Bool) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let started = sandbox.run(["sim", "start"] + (throughDaemon ? ["--daemon"] : []))
            #expect(started.code == 0, "\(started.stderr)")
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "biometry-any"], stdin: Array("kept".utf8)).code == 0)

            let waiting = try sandbox.start(["--sim", "get", "s", "a"])
            #expect(waiting.waitForStderr("touch the reader"))
            waiting.signal(signalNumber)
            let result = waiting.wait()
            #expect(result.code == 3)
            #expect(!result.stderr.contains("error"))
            #expect(result.stdout.isEmpty)

            // An update cancelled while waiting for its touch changes nothing.
            let updating = try sandbox.start(["--sim", "update", "s", "a"], stdin: Array("replaced".utf8))
            #expect(updating.waitForStderr("touch the reader"))
            updating.signal(signalNumber)
            #expect(updating.wait().code == 3)

            // The reader was released and nothing was half-written.
            let next = sandbox.withTouch("alice", ["--sim", "get", "s", "a"])
            #expect(next.code == 0, "\(next.stderr)")
            #expect(next.stdoutText == "kept")
            if throughDaemon {
                let log = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
                #expect(log.split(separator: "\n").contains { $0.contains("/touchstone-get (touchstone-get, pid ") && $0.contains("): get: ok") },
                        "the gets went through the daemon: \(log)")
            }
        }
    }

    @Test("no touch before the timeout: exit 3")
    func timeout() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let result = sandbox.run(["--sim", "--timeout", "2", "verify"])
            #expect(result.code == 3)
            #expect(!result.stderr.contains("error"))
        }
    }

    @Test("the reader unplugged while waiting: exit 4")
    func unplugged() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let waiting = try sandbox.start(["--sim", "verify"])
            #expect(waiting.waitForStderr("touch the reader"))
            #expect(sandbox.run(["sim", "unplug"]).code == 0)
            let result = waiting.wait()
            #expect(result.code == 4, "\(result.stderr)")
            #expect(result.stderr.contains("touchstone: error: "))
        }
    }

    @Test("five failed matches lock biometry (exit 6); the passcode clears it")
    func biometricLockout() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            for _ in 0..<4 { #expect(sandbox.withTouch("mallory", ["--sim", "verify"]).code == 2) }
            let fifth = sandbox.withTouch("mallory", ["--sim", "verify"])
            #expect(fifth.code == 6)
            let locked = sandbox.run(["--sim", "verify"])
            #expect(locked.code == 6)
            #expect(locked.stderr.contains("passcode"))
            let status = sandbox.run(["--sim", "status", "--json"])
            #expect(status.stdoutText.contains(#""biometryLockout":true"#))
            #expect(sandbox.run(["--sim", "verify", "--allow-passcode", "--passcode-fd", "0"],
                                stdin: CLISandbox.line(CLISandbox.passcode)).code == 0)
            #expect(sandbox.withTouch("alice", ["--sim", "verify"]).code == 0)
        }
    }

    @Test("wrong passcodes: exit 2, then the TPM's dictionary-attack lockout: exit 12 with when to retry")
    func tpmLockout() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            do {
                // Fewer tries than the simulator's 10, to keep the test short.
                let tpm = try TPM(tcti: "swtpm:path=\(sandbox.home)/sim/tpm/sock")
                try tpm.setDictionaryAttackParameters(maxTries: 2, recoveryTime: 600, lockoutRecovery: 600)
            }
            let change = ["--sim", "passcode", "change", "--passcode-fd", "0"]
            let wrong = CLISandbox.line("wrong") + CLISandbox.line("new")
            for _ in 0..<2 { #expect(sandbox.run(change, stdin: wrong).code == 2) }
            let locked = sandbox.run(change, stdin: CLISandbox.line(CLISandbox.passcode) + CLISandbox.line("new"))
            #expect(locked.code == 12)
            #expect(locked.stderr.contains("lockout"))
            #expect(locked.stderr.contains("600 s"))
        }
    }

    @Test("a tampered item: exit 13")
    func tampered() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "none"], stdin: Array("intact".utf8)).code == 0)
            do {
                let db = try SQLiteDatabase(path: sandbox.home + "/vault.sqlite")
                try db.execute("UPDATE items SET secret = randomblob(length(secret))")
            }
            let result = sandbox.run(["--sim", "get", "s", "a"])
            #expect(result.code == 13)
            #expect(result.stderr.contains("corrupted or tampered"))
            #expect(result.stdout.isEmpty)
        }
    }

    @Test("the passcode needed with no terminal and no --passcode-fd: exit 14")
    func notInteractive() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "passcode"], stdin: Array("p".utf8)).code == 0)
            let result = sandbox.run(["--sim", "get", "s", "a"])
            #expect(result.code == 14)
            #expect(result.stderr.contains("hint:"))
            #expect(sandbox.run(["--sim", "passcode", "change"]).code == 14)
            #expect(sandbox.run(["--sim", "passcode", "set"]).code == 1)  // already set: refused first
        }
    }
}

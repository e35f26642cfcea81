import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

/// Secrets in memory for git-credential-touchstone, as MemoryScanTests
/// does it for touchstone: the helper, stopped just before it exits
/// (TOUCHSTONE_TEST_STOP_BEFORE_EXIT=1), has its whole memory searched for
/// any 16 bytes in a row of the password and of every vault key. The
/// password comes in on stdin (store) and goes out on stdout (get); nothing
/// may be left. The control, which the scan must find, is a random value in
/// the helper's environment.
@Suite("git-credential-touchstone: secrets in memory (subprocess)", .serialized)
struct GitCredentialMemoryTests {
    /// A random password git's protocol can carry: no NUL, LF or CR; not UTF-8.
    static func randomPassword() -> [UInt8] {
        var bytes = SecureBytes.random(count: 96).withUnsafeBytes { Array($0) }.map { [0x00, 0x0a, 0x0d].contains($0) ? 0xfe : $0 }
        bytes[0] = 0xff
        return bytes
    }

    static func randomHex() -> String {
        SecureBytes.random(count: 24).withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
    }

    /// Runs the helper with `arguments` and `stdin` and the stop hook,
    /// scans the stopped process for `needles()`, then lets it exit.
    static func scanStopped(_ git: GitRig, _ arguments: [String], stdin: [UInt8], control: String,
                            needles: () throws -> [ScanNeedle]) throws -> (MemoryScanReport, CLIResult) {
        var environment = git.environment
        environment["TOUCHSTONE_TEST_STOP_BEFORE_EXIT"] = "1"
        environment["TOUCHSTONE_MEMSCAN_CONTROL"] = control
        let running = try CLIProcess.start(arguments, stdin: stdin, environment: environment, scratch: git.sandbox.scratch,
                                           program: GitRig.helper)
        guard running.waitUntilStopped() else {
            let result = running.wait(timeout: 1)
            throw RigFailure("the helper (\(arguments.joined(separator: " "))) did not stop: exit \(result.code), \(result.stderr)")
        }
        let report: MemoryScanReport
        do {
            report = try MemoryScanner.scan(pid: running.pid, needles: try needles())
        } catch {
            running.signal(SIGKILL)
            _ = running.wait()
            throw error
        }
        running.signal(SIGCONT)
        return (report, running.wait())
    }

    @Test("after store and get (access none): no copy of the password or a vault key is left in the helper")
    func storeAndGet() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let git = try GitRig(sandbox, helpers: [])
            // The vault made first, by touchstone: the process that creates a
            // vault keeps a copy of its root key (found by this scan for
            // `touchstone add` too; a vault matter, not the helper's).
            #expect(sandbox.run(["--sim", "list"]).code == 0)
            #expect(FileManager.default.fileExists(atPath: sandbox.home + "/vault.sqlite"))
            let username = "memscan-" + Self.randomHex()
            let password = Self.randomPassword()
            let control = "control-" + Self.randomHex()
            let query = Array("protocol=https\nhost=git.example.com\nusername=\(username)\n".utf8)
            let needles = { () throws -> [ScanNeedle] in
                let tpm = try TPM(tcti: "swtpm:path=\(sandbox.home)/sim/tpm/sock")
                let vault = try Vault(home: URL(fileURLWithPath: sandbox.home), tpm: tpm)
                let proof = VaultProof(biometricMatch: true, passcode: PasscodeAuth(passcode: SecureBytes.random(count: 16)))
                let keys = try vault.keyInventory(tpm: tpm, proof: proof, service: "git:https://git.example.com", accounts: [username])
                return keys.map { ScanNeedle($0.label, $0.key) }
                    + [password.withUnsafeBytes { ScanNeedle("password", $0) },
                       Array(control.utf8).withUnsafeBytes { ScanNeedle("control", $0) }]
            }

            let (stored, storeResult) = try Self.scanStopped(git, ["--access", "none", "store"],
                                                             stdin: query + Array("password=".utf8) + password + [0x0a, 0x0a],
                                                             control: control, needles: needles)
            #expect(storeResult.code == 0, "\(storeResult.stderr)")
            MemoryScanTests.checkScan(stored, control: "control")

            let (given, getResult) = try Self.scanStopped(git, ["get"], stdin: query + [0x0a], control: control, needles: needles)
            #expect(getResult.code == 0, "\(getResult.stderr)")
            #expect(getResult.stdout == Array("username=\(username)\npassword=".utf8) + password + [0x0a])
            MemoryScanTests.checkScan(given, control: "control")
        }
    }
}

import Foundation
import Glibc
import Testing
import TestRigs

/// Secrets: any bytes up to 1 MiB round-trip exactly; empty and oversized
/// ones are refused with nothing stored; a secret or passcode never shows
/// in argv, the environment, stderr or a file; the state is private.
@Suite("touchstone: secrets and files (subprocess)", .serialized)
struct SecretHandlingTests {
    @Test("1 MiB of random non-UTF-8 bytes round-trips exactly")
    func largeSecret() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            var secret = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255) }
            secret[0] = 0xff; secret[1] = 0xfe; secret[2] = 0x00  // never valid UTF-8
            #expect(String(bytes: secret, encoding: .utf8) == nil)
            #expect(sandbox.run(["--sim", "add", "big", "blob", "--access", "none"], stdin: secret).code == 0)
            let read = sandbox.run(["--sim", "get", "big", "blob"])
            #expect(read.code == 0)
            #expect(read.stdout.count == secret.count)
            #expect(read.stdout == secret)
        }
    }

    @Test("an empty secret and one over 1 MiB are refused, and nothing is stored")
    func refusedSizes() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let empty = sandbox.run(["--sim", "add", "s", "empty", "--access", "none"], stdin: [])
            #expect(empty.code == 1)
            #expect(empty.stderr.contains("empty"))
            let over = sandbox.run(["--sim", "add", "s", "big", "--access", "none"], stdin: [UInt8](repeating: 7, count: (1 << 20) + 1))
            #expect(over.code == 1)
            #expect(over.stderr.contains("1 MiB"))
            let list = sandbox.run(["--sim", "list", "--json"])
            #expect(list.code == 0)
            #expect(list.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            #expect(sandbox.run(["--sim", "get", "s", "empty"]).code == 8)
            #expect(sandbox.run(["--sim", "get", "s", "big"]).code == 8)
            // update refuses the same way and keeps the old secret.
            #expect(sandbox.run(["--sim", "add", "s", "kept", "--access", "none"], stdin: Array("old".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "update", "s", "kept"], stdin: []).code == 1)
            #expect(sandbox.run(["--sim", "get", "s", "kept"]).stdoutText == "old")
        }
    }

    @Test("a secret and the passcode never appear in cmdline, environment, stderr or any file under the home")
    func noLeaks() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let secret = "leak-canary-\(UInt64.random(in: 1...UInt64.max))"
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            var stderrs: [String] = []
            let added = sandbox.run(["--sim", "add", "s", "a", "--access", "biometry-any|passcode"], stdin: Array(secret.utf8))
            #expect(added.code == 0)
            stderrs.append(added.stderr)

            // While a get waits for its touch, look at what the process exposes.
            let waiting = try sandbox.start(["--sim", "get", "s", "a"])
            #expect(waiting.waitForStderr("touch the reader"))
            let cmdline = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(waiting.pid)/cmdline"))
            let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(waiting.pid)/environ"))
            #expect(sandbox.run(["sim", "touch", "alice"]).code == 0)
            let got = waiting.wait()
            #expect(got.code == 0)
            #expect(got.stdoutText == secret)
            stderrs.append(got.stderr)

            let byPasscode = sandbox.run(["--sim", "get", "s", "a", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode))
            #expect(byPasscode.stdoutText == secret)
            stderrs.append(byPasscode.stderr)
            let wrong = sandbox.run(["--sim", "get", "s", "a", "--passcode-fd", "0"], stdin: CLISandbox.line(secret))
            #expect(wrong.code == 2)
            stderrs.append(wrong.stderr)

            for needle in [secret, CLISandbox.passcode] {
                let bytes = Data(needle.utf8)
                #expect(cmdline.range(of: bytes) == nil)
                #expect(environ.range(of: bytes) == nil)
                for text in stderrs { #expect(!text.contains(needle)) }
                let files = FileManager.default.enumerator(atPath: sandbox.home)?.allObjects as? [String] ?? []
                #expect(!files.isEmpty)
                for file in files {
                    let path = sandbox.home + "/" + file
                    guard let data = FileManager.default.contents(atPath: path) else { continue }
                    #expect(data.range(of: bytes) == nil, "\(needle == secret ? "the secret" : "the passcode") in \(file)")
                }
            }
        }
    }

    @Test("the state directory and every folder in it are 0700, every file 0600")
    func permissions() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "a"], stdin: Array("x".utf8)).code == 0)
            var checked = 0
            func mode(_ path: String) -> (kind: mode_t, permissions: mode_t) {
                var info = stat()
                _ = lstat(path, &info)
                return (info.st_mode & S_IFMT, info.st_mode & 0o777)
            }
            #expect(mode(sandbox.home).permissions == 0o700)
            for file in FileManager.default.enumerator(atPath: sandbox.home)?.allObjects as? [String] ?? [] {
                let (kind, permissions) = mode(sandbox.home + "/" + file)
                switch kind {
                case S_IFDIR: #expect(permissions == 0o700, "\(file)")
                case S_IFREG: #expect(permissions == 0o600, "\(file)")
                default: continue  // the reader's and swtpm's sockets
                }
                checked += 1
            }
            #expect(checked >= 8)  // vault, prints, sim/tpm state, pid, log, lock...
        }
    }
}

import Foundation
import Testing
import TestRigs

/// Two touchstone processes that both need the simulated reader: the
/// second is told the reader is busy (exit 4), as with a real reader held
/// by fprintd; the first goes on, and nothing is corrupted.
@Suite("touchstone: two processes, one simulated reader (subprocess)", .serialized)
struct ConcurrencyTests {
    @Test("the second process gets exit 4 (busy); the first completes; the state is intact")
    func busyReader() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            for account in ["one", "two"] {
                #expect(sandbox.run(["--sim", "add", "s", account, "--access", "biometry-any"], stdin: Array(account.utf8)).code == 0)
            }
            // It waits for its touch while three other commands run: a wait
            // no load makes it outlast.
            let first = try sandbox.start(["--sim", "--timeout", "600", "get", "s", "one"])
            #expect(first.waitForStderr("touch the reader"))

            let second = sandbox.run(["--sim", "get", "s", "two"])
            #expect(second.code == 4)
            #expect(second.stderr.contains("busy"))
            #expect(second.stderr.contains("hint:"))
            // Commands that need no reader still run meanwhile.
            let status = sandbox.run(["--sim", "status", "--json"])
            #expect(status.code == 0)
            #expect(status.stdoutText.contains(#""available":false"#))
            #expect(sandbox.run(["--sim", "add", "s", "three", "--access", "none"], stdin: Array("three".utf8)).code == 0)

            #expect(sandbox.run(["sim", "touch", "alice"]).code == 0)
            let done = first.wait()
            #expect(done.code == 0, "\(done.stderr)")
            #expect(done.stdoutText == "one")

            let afterwards = sandbox.withTouch("alice", ["--sim", "get", "s", "two"])
            #expect(afterwards.stdoutText == "two")
            let list = sandbox.run(["--sim", "list", "--json"])
            #expect(list.code == 0)
            #expect(list.stdoutText.components(separatedBy: #""state":"ok""#).count - 1 == 3)
        }
    }
}

/// Several processes writing at once: each add lands once, a duplicate is
/// refused once, and the store lists them all.
@Suite("touchstone: concurrent writers (subprocess)", .serialized)
struct ConcurrentWriterTests {
    @Test("five concurrent adds, two of them for the same item: four stored, one exit 9, nothing corrupted")
    func concurrentAdds() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.run(["--sim", "list"]).code == 0)  // the vault exists before the race
            let accounts = ["a", "b", "c", "same", "same"]
            let running = try accounts.enumerated().map { n, account in
                try sandbox.start(["--sim", "add", "s", account, "--access", "none"], stdin: Array("value-\(n)".utf8))
            }
            let codes = running.map { $0.wait().code }
            #expect(codes.prefix(3).allSatisfy { $0 == 0 })
            #expect(codes.suffix(2).sorted() == [0, 9])
            let list = sandbox.run(["--sim", "list", "--json"])
            let items = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [[String: Any]])
            #expect(Set(items.compactMap { $0["account"] as? String }) == ["a", "b", "c", "same"])
            #expect(items.allSatisfy { $0["state"] as? String == "ok" })
            for account in ["a", "b", "c"] {
                let n = accounts.firstIndex(of: account)!
                #expect(sandbox.run(["--sim", "get", "s", account]).stdoutText == "value-\(n)")
            }
            #expect(["value-3", "value-4"].contains(sandbox.run(["--sim", "get", "s", "same"]).stdoutText))
        }
    }
}

import Foundation
import Glibc
import Testing
import TestRigs
@testable import TouchstoneVault

/// Damaged or unusable state, end to end (docs/reliability.md, "Bad input
/// and damaged state"): a truncated vault file, a state folder the user
/// cannot read, a state folder on a read-only mount, undecodable bytes in
/// the arguments. Each: the documented exit code, one clear error line,
/// and nothing lost (the files compared byte for byte).
@Suite("touchstone: damaged and unusable state (subprocess)", .serialized)
struct BadStateTests {
    static let none1 = Array("first secret".utf8)
    static let none2 = [UInt8](repeating: 0xA5, count: 5000)  // a few pages of overflow
    static let withPasscode = Array("behind the passcode".utf8)

    /// A vault with a passcode and three items: two of access `none`, one
    /// of access `passcode`. Returns the sandbox and the vault's path.
    func filled() throws -> (CLISandbox, String) {
        let sandbox = try CLISandbox()
        #expect(sandbox.setPasscode().code == 0)
        #expect(sandbox.run(["--sim", "add", "s", "n1", "--access", "none"], stdin: Self.none1).code == 0)
        #expect(sandbox.run(["--sim", "add", "s", "n2", "--access", "none"], stdin: Self.none2).code == 0)
        #expect(sandbox.run(["--sim", "add", "s", "p1", "--access", "passcode"], stdin: Self.withPasscode).code == 0)
        return (sandbox, sandbox.home + "/" + Vault.databaseName)
    }

    static func contents(_ path: String) -> [UInt8]? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { [UInt8]($0) }
    }

    static func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Everything is there and opens: the three items listed, both
    /// access-none secrets byte for byte.
    func expectIntact(_ sandbox: CLISandbox, sourceLocation: SourceLocation = #_sourceLocation) {
        let list = sandbox.run(["--sim", "list"])
        #expect(list.code == 0, "\(list.stderr)", sourceLocation: sourceLocation)
        for account in ["n1", "n2", "p1"] {
            #expect(list.stdoutText.contains("s\t\(account)\t"), "\(account) not listed", sourceLocation: sourceLocation)
        }
        #expect(sandbox.run(["--sim", "get", "s", "n1"]).stdout == Self.none1, sourceLocation: sourceLocation)
        #expect(sandbox.run(["--sim", "get", "s", "n2"]).stdout == Self.none2, sourceLocation: sourceLocation)
    }

    // MARK: - Truncated database

    static let pageSize = 4096

    /// Where the vault file is cut: no bytes, part of the header, the first
    /// page (which holds the schema), half, all but the last page. With a
    /// write-ahead log, the pages it holds are not lost by a cut: the last
    /// page cut is then the last one the log does not hold.
    static func cuts(_ size: Int, log: Set<Int>) -> [(String, Int)] {
        let pages = size / pageSize
        let lastMissing = (1...pages).last { !log.contains($0) } ?? pages
        return [("0 bytes", 0), ("50 bytes", 50), ("the first page", pageSize), ("half", size / 2),
                ("all but the last page not in the log", (lastMissing - 1) * pageSize)]
    }

    /// The frames of a write-ahead log, as page number and page (a 32-byte
    /// header with the page size at offset 8, then per frame a 24-byte
    /// header starting with the page number, and the page).
    static func frames(_ log: [UInt8]) -> [(page: Int, bytes: [UInt8])] {
        func u32(_ at: Int) -> Int { log[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        guard log.count >= 32 else { return [] }
        let size = u32(8)
        var out: [(page: Int, bytes: [UInt8])] = []
        var offset = 32
        while offset + 24 + size <= log.count {
            out.append((u32(offset), Array(log[offset + 24..<offset + 24 + size])))
            offset += 24 + size
        }
        return out
    }

    /// A crash image of `path`: the files as a process killed after a
    /// commit leaves them, the log not checkpointed. The commit adds a
    /// harmless 10 kB setting, so the database grows by pages that only the
    /// log holds, and page 1 (the header, with the new size) is in the log.
    static func crashImage(_ path: String) throws -> (main: [UInt8], log: [UInt8]) {
        let db = try SQLiteDatabase(path: path, mode: .existing)
        defer { db.close() }
        try db.execute("PRAGMA wal_autocheckpoint=0")
        try db.execute("INSERT INTO meta(key, value) VALUES('setting.test', zeroblob(10000))")
        return (try #require(contents(path)), try #require(contents(path + "-wal")))
    }

    @Test("a truncated vault file, with and without a write-ahead log: exit 13, the files untouched, nothing else lost")
    func truncated() async throws {
        try await blockingTest {
            let (sandbox, path) = try filled()
            defer { sandbox.close() }
            let good = try #require(Self.contents(path))
            #expect(good.count >= 5 * 4096, "the vault is too small to cut meaningfully: \(good.count) bytes")
            #expect(Self.contents(path + "-wal") == nil, "a clean vault has no write-ahead log")

            // A crash image with a write-ahead log: the files as a process
            // killed after a commit leaves them (the log not checkpointed).
            let (imageMain, imageLog) = try Self.crashImage(path)
            let frames = Self.frames(imageLog)
            let logged = Set(frames.map(\.page))
            let pages = imageMain.count / Self.pageSize
            #expect(imageMain.count % Self.pageSize == 0)
            #expect(logged.contains(1) && logged.contains(pages + 1), "the log holds page 1 and new pages: \(logged.sorted())")

            for withLog in [false, true] {
                let main = withLog ? imageMain : good
                // The uncut files open: what follows fails because of the cut.
                for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
                try Self.write(main, path)
                if withLog { try Self.write(imageLog, path + "-wal") }
                #expect(sandbox.run(["--sim", "get", "s", "n2"]).stdout == Self.none2, "uncut, log \(withLog)")

                for (name, length) in Self.cuts(main.count, log: withLog ? logged : []) {
                    let label = "\(name) (\(length) bytes), write-ahead log \(withLog ? "present" : "absent")"
                    for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
                    try Self.write(Array(main.prefix(length)), path)
                    if withLog { try Self.write(imageLog, path + "-wal") }

                    for arguments in [["--sim", "list"], ["--sim", "get", "s", "n1"], ["--sim", "status"]] {
                        let result = sandbox.run(arguments)
                        #expect(result.code == 13, "\(label): \(arguments): \(result.code) \(result.stderr)")
                        #expect(result.stderr.contains("touchstone: error: stored data corrupted or tampered with: "), "\(label): \(result.stderr)")
                        #expect(result.stderr.contains(path), "\(label): the message names the file: \(result.stderr)")
                        #expect(!result.stderr.contains("Fatal error"), "\(label)")
                        if arguments.last == "status" {
                            // The damage is the vault's; the TPM is fine.
                            #expect(result.stdoutText.contains("TPM:       available ("), "\(label): \(result.stdoutText)")
                            #expect(result.stdoutText.contains("vault:     not open: stored data corrupted or tampered with: "),
                                    "\(label): \(result.stdoutText)")
                        }
                    }
                    let add = sandbox.run(["--sim", "add", "s", "new", "--access", "none"], stdin: Array("x".utf8))
                    #expect(add.code == 13, "\(label): add: \(add.code) \(add.stderr)")
                    if length == 0 {
                        // Not taken for a new, empty vault.
                        #expect(add.stderr.contains("is empty (0 bytes)"), "\(add.stderr)")
                    } else if !withLog && length >= 100 {
                        #expect(add.stderr.contains("is truncated: \(length) bytes where the database has \(main.count)"), "\(add.stderr)")
                    }

                    let unchanged = Self.contents(path) == Array(main.prefix(length))
                    #expect(unchanged, "\(label): the vault file changed")
                    if withLog {
                        let logUnchanged = Self.contents(path + "-wal") == imageLog
                        #expect(logUnchanged, "\(label): the write-ahead log changed")
                    } else {
                        #expect((Self.contents(path + "-wal") ?? []).isEmpty, "\(label): a write-ahead log with content appeared")
                    }
                }
            }

            // Not damage: a checkpoint cut short. It wrote page 1 from the log
            // (whose header counts the new pages) but not yet the new pages, so
            // the file is shorter than its header says, and the log holds every
            // missing page. It opens, nothing lost.
            let page1 = try #require(frames.last { $0.page == 1 }?.bytes)
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            try Self.write(page1 + imageMain.dropFirst(Self.pageSize), path)
            try Self.write(imageLog, path + "-wal")
            let cutShort = sandbox.run(["--sim", "get", "s", "n2"])
            #expect(cutShort.code == 0, "checkpoint cut short: \(cutShort.stderr)")
            #expect(cutShort.stdout == Self.none2)
            // The same cut before a page that is in neither the file nor the
            // log (the last such page of the file).
            let missing = try #require((2...pages).last { !logged.contains($0) }, "every page is in the log: \(logged.sorted())")
            let kept = (missing - 1) * Self.pageSize
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            try Self.write(page1 + imageMain.dropFirst(Self.pageSize).prefix(kept - Self.pageSize), path)
            try Self.write(imageLog, path + "-wal")
            let cutShortAndCut = sandbox.run(["--sim", "get", "s", "n2"])
            #expect(cutShortAndCut.code == 13, "checkpoint cut short, then cut before page \(missing): \(cutShortAndCut.stderr)")
            #expect(cutShortAndCut.stderr.contains("is truncated: \(kept) bytes where the database has "),
                    "\(cutShortAndCut.stderr)")

            // The whole file back: nothing else was lost.
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            try Self.write(good, path)
            expectIntact(sandbox)
        }
    }

    // MARK: - Unreadable state folder

    @Test("a state folder the user cannot read, search or write: exit 1 with the chmod to run, nothing lost",
          arguments: [0o000, 0o300, 0o600, 0o500] as [mode_t])
    func unreadableHome(_ mode: mode_t) async throws {
        try await blockingTest {
            let (sandbox, path) = try filled()
            defer { sandbox.close() }
            defer { chmod(sandbox.home, 0o700) }
            let before = try #require(Self.contents(path))
            let wrapper = try Confinement.withoutPrivileges()
            // The wrapper alone changes nothing: with the folder's usual mode it works.
            let control = sandbox.run(["--sim", "get", "s", "n1"], wrapper: wrapper)
            #expect(control.code == 0, "\(control.stderr)")
            #expect(control.stdout == Self.none1)

            #expect(chmod(sandbox.home, mode) == 0)
            let what = mode & 0o500 == 0o500 ? "cannot write to the state folder" : "cannot read the state folder"
            for arguments in [["--sim", "list"], ["--sim", "get", "s", "n1"], ["--sim", "status"],
                              ["--sim", "add", "s", "new", "--access", "none"], ["--sim", "delete", "s", "n1"]] {
                let result = sandbox.run(arguments, stdin: Array("x".utf8), wrapper: wrapper)
                #expect(result.code == 1, "mode \(String(mode, radix: 8)): \(arguments): \(result.code) \(result.stderr)")
                #expect(result.stderr.contains("touchstone: error: storage error: \(what) \(sandbox.home): Permission denied"),
                        "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("hint: chmod 700 \(sandbox.home)"), "\(result.stderr)")
                // Not mistaken for a stopped simulator.
                #expect(!result.stderr.contains("simulator"), "\(result.stderr)")
            }
            #expect(chmod(sandbox.home, 0o700) == 0)
            let unchanged = Self.contents(path) == before
            #expect(unchanged, "the vault file changed")
            expectIntact(sandbox)
        }
    }

    // MARK: - Read-only mount

    @Test("the state folder on a read-only mount: reading works, changes are refused with a clear error, nothing lost")
    func readOnlyHome() async throws {
        try await blockingTest {
            let (sandbox, path) = try filled()
            defer { sandbox.close() }
            // Biometry-only: with no finger enrolled, exit 5 on a writable vault.
            #expect(sandbox.run(["--sim", "add", "s", "b1", "--access", "biometry-any"], stdin: Array("b".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "get", "s", "b1"]).code == 5)
            let before = try #require(Self.contents(path))
            #expect(Self.contents(path + "-wal") == nil)
            let readOnly = try Confinement.readOnly(sandbox.home, environment: sandbox.environment)
            let passcode = CLISandbox.line(CLISandbox.passcode)

            // Reading.
            let list = sandbox.run(["--sim", "list"], wrapper: readOnly)
            #expect(list.code == 0, "\(list.stderr)")
            for account in ["n1", "n2", "p1", "b1"] { #expect(list.stdoutText.contains("s\t\(account)\t"), "\(list.stdoutText)") }
            let n2 = sandbox.run(["--sim", "get", "s", "n2"], wrapper: readOnly)
            #expect(n2.code == 0, "\(n2.stderr)")
            #expect(n2.stdout == Self.none2)
            let p1 = sandbox.run(["--sim", "get", "s", "p1", "--passcode-fd", "0"], stdin: passcode, wrapper: readOnly)
            #expect(p1.code == 0, "\(p1.stderr)")
            #expect(p1.stdout == Self.withPasscode)
            let status = sandbox.run(["--sim", "status", "--json"], wrapper: readOnly)
            #expect(status.code == 0, "\(status.stderr)")
            #expect(status.stdoutText.contains(#""items":4"#), "\(status.stdoutText)")
            // The prints are in the vault: no folder of them, here or made.
            #expect(access(sandbox.home + "/prints", F_OK) != 0)

            // Biometry is off: a failed match could not be counted.
            let b1 = sandbox.run(["--sim", "get", "s", "b1"], wrapper: readOnly)
            #expect(b1.code == 4, "\(b1.stderr)")
            #expect(b1.stderr.contains("touchstone: error: fingerprints are not used: the vault is on a read-only file system"), "\(b1.stderr)")
            #expect(b1.stdout.isEmpty)

            // Changes: refused before anything is touched.
            let changes: [([String], [UInt8])] = [
                (["--sim", "add", "s", "new", "--access", "none"], Array("x".utf8)),
                (["--sim", "update", "s", "n1"], Array("replaced".utf8)),
                (["--sim", "delete", "s", "n1"], []),
                (["--sim", "passcode", "change", "--passcode-fd", "0"], passcode + CLISandbox.line("another passcode")),
            ]
            for (arguments, stdin) in changes {
                let result = sandbox.run(arguments, stdin: stdin, wrapper: readOnly)
                #expect(result.code == 1, "\(arguments): \(result.code) \(result.stderr)")
                #expect(result.stderr.contains("touchstone: error: storage error: cannot change the vault: \(sandbox.home) is on a read-only file system"),
                        "\(arguments): \(result.stderr)")
            }
            let unchanged = Self.contents(path) == before
            #expect(unchanged, "the vault file changed")

            // Outside the mount: all there, and writable again.
            expectIntact(sandbox)
            #expect(sandbox.run(["--sim", "get", "s", "p1", "--passcode-fd", "0"], stdin: passcode).stdout == Self.withPasscode)
            #expect(sandbox.run(["--sim", "add", "s", "new", "--access", "none"], stdin: Array("x".utf8)).code == 0)
        }
    }

    @Test("a read-only mount holding a crashed process's write-ahead log without its index: a clear error, files untouched")
    func readOnlyWithLog() async throws {
        try await blockingTest {
            let (sandbox, path) = try filled()
            defer { sandbox.close() }
            let (imageMain, imageLog) = try Self.crashImage(path)
            unlink(path + "-shm")
            try Self.write(imageMain, path)
            try Self.write(imageLog, path + "-wal")
            let readOnly = try Confinement.readOnly(sandbox.home, environment: sandbox.environment)
            let result = sandbox.run(["--sim", "get", "s", "n1"], wrapper: readOnly)
            #expect(result.code == 1, "\(result.stderr)")
            #expect(result.stderr.contains("on a read-only file system: its write-ahead log (-wal) holds changes"), "\(result.stderr)")
            #expect(result.stderr.contains("mount it read-write once"), "\(result.stderr)")
            let unchanged = Self.contents(path) == imageMain && Self.contents(path + "-wal") == imageLog
            #expect(unchanged, "the files changed")
            // Read-write again, the log is taken in and everything opens.
            expectIntact(sandbox)
        }
    }

    // MARK: - Undecodable arguments

    @Test("service or account bytes that are not UTF-8: exit 64 naming the argument, nothing stored")
    func invalidUTF8() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let s = Array("s".utf8), a = Array("a".utf8)
            let bad: [[UInt8]] = [[0x73, 0xFF], [0xC0, 0x80], [0x61, 0xED, 0xA0, 0x80]]  // a stray byte, overlong NUL, a surrogate
            #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "none"], stdin: Array("kept".utf8)).code == 0)
            for bytes in bad {
                let cases: [([[UInt8]], String)] = [
                    ([Array("--sim".utf8), Array("add".utf8), bytes, a, Array("--access".utf8), Array("none".utf8)], "<service>"),
                    ([Array("--sim".utf8), Array("add".utf8), s, bytes, Array("--access".utf8), Array("none".utf8)], "<account>"),
                    ([Array("--sim".utf8), Array("get".utf8), bytes, a], "<service>"),
                    ([Array("--sim".utf8), Array("delete".utf8), s, bytes], "<account>"),
                    ([Array("--sim".utf8), Array("list".utf8), Array("--service".utf8), bytes], "--service"),
                ]
                for (arguments, what) in cases {
                    let result = sandbox.run(bytes: arguments, stdin: Array("new".utf8))
                    #expect(result.code == 64, "\(bytes) \(what): \(result.code) \(result.stderr)")
                    #expect(result.stderr.contains("touchstone: error: \(what) is not valid UTF-8"), "\(result.stderr)")
                    #expect(result.stdout.isEmpty)
                }
            }
            // Nothing stored, nothing deleted.
            let list = sandbox.run(["--sim", "list"])
            #expect(list.code == 0)
            #expect(list.stdoutText.split(separator: "\n").count == 1, "\(list.stdoutText)")
            #expect(sandbox.run(["--sim", "get", "s", "a"]).stdout == Array("kept".utf8))
        }
    }
}

import Foundation
import Glibc
import Testing
import TestRigs
@testable import TouchstoneVault

/// The small version of scripts/crash-harness: add, update and delete run
/// through the built binary and SIGKILLed at random moments inside them.
/// A killed command may have taken effect or not, never half; a command
/// that finished must have done exactly what its exit code says; the list
/// always matches the model, and SQLite finds the file intact at the end.
@Suite("touchstone: SIGKILL in the middle of add, update, delete (subprocess)", .serialized)
struct CrashSafetyTests {
    static let kills = 24
    static let service = "crash"

    /// As scripts/crash-harness: half the kill moments anywhere in the
    /// command's typical time T, half aimed at its end (the commit).
    static func killMoment(_ typical: TimeInterval, _ rng: inout SystemRandomNumberGenerator) -> TimeInterval {
        Bool.random(using: &rng) ? .random(in: 0...typical, using: &rng) : .random(in: (0.5 * typical)...(1.1 * typical), using: &rng)
    }

    /// Scales the kill moments to how fast the commands run now: a command
    /// that finished before its kill shrinks them, a kill that landed
    /// relaxes them again (the machine's speed changes as other work runs;
    /// the number of kills must not depend on it).
    struct KillPacing {
        private(set) var scale = 1.0
        mutating func finishedFirst() { scale = max(0.02, scale * 0.9) }
        mutating func killed() { scale = min(1.0, scale * 1.05) }
    }

    /// One account of the model: its access and its bytes (nil: absent).
    struct Entry {
        let passcode: Bool
        var bytes: [UInt8]?
    }

    @Test("24 kills at random moments: every item is its old or its new bytes, never anything else")
    func randomKills() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            var rng = SystemRandomNumberGenerator()
            var serial = 0
            func secret() -> [UInt8] {
                serial += 1
                let size = Int.random(in: 1...(Bool.random(using: &rng) ? 48 : 6000), using: &rng)
                return Array("\(serial)\0".utf8) + (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            let fd3 = CLISandbox.line(CLISandbox.passcode)
            func arguments(_ op: String, _ account: String, _ passcode: Bool) -> [String] {
                switch op {
                case "add": return ["--sim", "add", Self.service, account, "--access", passcode ? "passcode" : "none"]
                case "update": return ["--sim", "update", Self.service, account] + (passcode ? ["--passcode-fd", "3"] : [])
                default: return ["--sim", "delete", Self.service, account]
                }
            }

            // The model, every item stored once (unkilled).
            var model: [String: Entry] = [:]
            for (n, account) in ["p0", "p1", "n0", "n1", "n2", "n3"].enumerated() {
                let bytes = secret()
                let added = sandbox.run(arguments("add", account, n < 2), stdin: bytes)
                try #require(added.code == 0, "\(added.stderr)")
                model[account] = Entry(passcode: n < 2, bytes: bytes)
            }

            // The typical wall time of each command, unkilled, on an item of its own.
            var typical: [String: TimeInterval] = [:]
            var walls: [String: [TimeInterval]] = [:]
            for n in 0..<3 {
                for op in ["add", "update", "delete"] {
                    let started = Date()
                    let result = sandbox.run(arguments(op, "calibrate-\(n)", false), stdin: op == "delete" ? [] : secret())
                    walls[op, default: []].append(Date().timeIntervalSince(started))
                    try #require(result.code == 0, "\(op): \(result.stderr)")
                }
            }
            for (op, values) in walls { typical[op] = values.sorted()[values.count / 2] }

            func observe(_ account: String) -> [UInt8]?? {
                let got = sandbox.run(["--sim", "get", Self.service, account] + (model[account]!.passcode ? ["--passcode-fd", "3"] : []),
                                      fd3: fd3)
                if got.code == 0 { return .some(got.stdout) }
                if got.code == 8 { return .some(nil) }
                Issue.record("get \(account): exit \(got.code): \(got.stderr)")
                return nil
            }
            func checkList(_ when: String) throws {
                let listed = sandbox.run(["--sim", "list", "--service", Self.service, "--json"])
                try #require(listed.code == 0, "\(listed.stderr)")
                let items = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]])
                #expect(items.allSatisfy { $0["state"] as? String == "ok" }, "\(when)")
                let shown = Set(items.compactMap { $0["account"] as? String })
                #expect(shown == Set(model.filter { $0.value.bytes != nil }.keys), "\(when)")
            }

            var kills = 0, tookEffect = 0, finished = 0, iterations = 0
            var pacing = KillPacing()
            while kills < Self.kills && iterations < 10 * Self.kills {
                iterations += 1
                let present = model.keys.filter { model[$0]!.bytes != nil }.sorted()
                let absent = model.keys.filter { model[$0]!.bytes == nil }.sorted()
                var op = ["add", "update", "update", "delete"].randomElement(using: &rng)!
                if op == "add" && absent.isEmpty { op = "update" }
                if op != "add" && present.isEmpty { op = "add" }
                let account = (op == "add" ? absent : present).randomElement(using: &rng)!
                let entry = model[account]!
                let data = op == "delete" ? [] : secret()
                let effect: [UInt8]? = op == "delete" ? nil : data

                let delay = Self.killMoment(typical[op]! * pacing.scale, &rng)
                let started = Date()
                let running = try sandbox.start(arguments(op, account, entry.passcode), stdin: data, fd3: fd3)
                let remaining = delay - Date().timeIntervalSince(started)
                if remaining > 0 { usleep(useconds_t(remaining * 1_000_000)) }
                if running.poll() == nil { running.signal(SIGKILL) }
                let result = running.wait()
                let killed = result.code == 128 + SIGKILL
                if killed { pacing.killed() } else { pacing.finishedFirst() }

                guard let seen = observe(account) else { break }
                if killed {
                    kills += 1
                    #expect(seen == entry.bytes || seen == effect,
                            "killed \(op) \(account) after \(Int(delay * 1000)) ms: \(seen?.count ?? -1) bytes, neither old nor new")
                    if seen == effect { tookEffect += 1 }
                } else {
                    finished += 1
                    #expect(result.code == 0, "\(op) \(account): \(result.stderr)")
                    #expect(seen == effect, "\(op) \(account) exited 0 but its effect is not there")
                }
                model[account]!.bytes = seen
                try checkList("after \(killed ? "killed " : "")\(op) \(account)")
            }
            #expect(kills == Self.kills, "only \(kills) of \(Self.kills) kills landed in \(iterations) commands")

            // Everything once more, then the file itself.
            for (account, entry) in model {
                #expect(observe(account) == .some(entry.bytes), "\(account)")
            }
            try checkList("at the end")
            let db = try SQLiteDatabase(path: sandbox.home + "/vault.sqlite")
            #expect(try db.rows("PRAGMA integrity_check", []) { $0.text(0) } == ["ok"])
            #expect(try db.rows("PRAGMA foreign_key_check", []) { $0.text(0) }.isEmpty)
            // Each item's keys record (its ways in) is in its own row (schema 2 on): none empty.
            #expect(try db.rows("SELECT count(*) FROM items WHERE length(keys) = 0", []) { $0.integer(0) } == [0])
            print("CrashSafetyTests: \(kills) kills (\(tookEffect) had taken effect), \(finished) commands finished before their kill moment")
        }
    }

    /// The passcode blobs a passcode change seals anew: the passcode key's,
    /// biometry-any's passcode blob, and the salt they are sealed with.
    static func passcodeBlobs(_ home: String) throws -> [String] {
        let db = try SQLiteDatabase(path: home + "/vault.sqlite")
        return try db.rows("SELECT kind || ' ' || hex(sealed) FROM class_keys WHERE kind = 'passcode' ORDER BY id", []) { $0.text(0) }
            + db.rows("SELECT kind || ' ' || hex(passcode_sealed) FROM class_keys WHERE kind = 'biometry-any' ORDER BY id", []) { $0.text(0) }
            + db.rows("SELECT 'salt ' || hex(value) FROM meta WHERE key = 'passcode_salt'", []) { $0.text(0) }
    }

    @Test("passcode change killed at random moments: the old passcode or the new one, in full; the one in force enrols")
    func passcodeChangeKills() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "s", "p", "--access", "passcode"], stdin: Array("behind the passcode".utf8)).code == 0)
            let change = ["--sim", "passcode", "change", "--passcode-fd", "3"]
            let get = ["--sim", "get", "s", "p", "--passcode-fd", "3"]
            var current = CLISandbox.passcode

            // Its typical wall time, unkilled (and back).
            var walls: [TimeInterval] = []
            for n in 0..<4 {
                let next = "calibrate-\(n)"
                let started = Date()
                let result = sandbox.run(change, fd3: CLISandbox.line(current) + CLISandbox.line(next))
                walls.append(Date().timeIntervalSince(started))
                try #require(result.code == 0, "\(result.stderr)")
                current = next
            }
            let typical = walls.sorted()[walls.count / 2]

            var rng = SystemRandomNumberGenerator()
            var kills = 0, tookEffect = 0
            var pacing = KillPacing()
            for n in 0..<120 where kills < 12 {
                let next = "new-\(n)"
                let before = try Self.passcodeBlobs(sandbox.home)
                let delay = Self.killMoment(typical * pacing.scale, &rng)
                let started = Date()
                let running = try sandbox.start(change, fd3: CLISandbox.line(current) + CLISandbox.line(next))
                let remaining = delay - Date().timeIntervalSince(started)
                if remaining > 0 { usleep(useconds_t(remaining * 1_000_000)) }
                if running.poll() == nil { running.signal(SIGKILL) }
                let result = running.wait()
                let after = try Self.passcodeBlobs(sandbox.home)
                #expect(after.count == before.count)
                // Every re-sealed blob changed, or none did: never half.
                let changed = zip(before, after).filter { $0 != $1 }.count
                #expect(changed == 0 || changed == before.count, "after \(Int(delay * 1000)) ms: \(changed) of \(before.count) blobs changed")
                if result.code == 128 + SIGKILL {
                    pacing.killed()
                    kills += 1
                    if changed > 0 { tookEffect += 1 }
                } else {
                    pacing.finishedFirst()
                    #expect(result.code == 0, "\(result.stderr)")
                    #expect(changed == before.count)
                }
                if changed > 0 { current = next }
                // The passcode in force opens (no wrong try is spent finding out which).
                let opened = sandbox.run(get, fd3: CLISandbox.line(current))
                #expect(opened.code == 0, "\(opened.stderr)")
                #expect(opened.stdoutText == "behind the passcode")
            }
            #expect(kills == 12)
            // The passcode in force also changes the enrolled fingers.
            let enrolling = try sandbox.start(["--sim", "enroll", "right-index-finger", "--passcode-fd", "3"], fd3: CLISandbox.line(current))
            #expect(sandbox.run(["sim", "touch", "alice", "--count", "5", "--wait", "60"]).code == 0)
            let enrolled = enrolling.wait()
            #expect(enrolled.code == 0, "\(enrolled.stderr)")
            #expect(sandbox.run(["--sim", "status", "--json"]).stdoutText.contains(#""failedTries":0"#))
            print("CrashSafetyTests: passcode change: \(kills) kills (\(tookEffect) had taken effect)")
        }
    }
}

import Foundation
import Testing
import TestRigs

/// What one Unlock opens, as a hostile client sees it: a client speaking
/// D-Bus itself (the fixture's `unlock-set`, jeepney's raw messages)
/// Unlocks some of five gated items in one call, runs the prompt, reads
/// all five, and reads them again after the provider's clock (and the
/// daemon's) has moved on.
@Suite("Secret Service: what an Unlock opens, and for how long")
struct SecretServiceUnlockTests {
    static let names = ["alpha", "bravo", "charlie", "delta", "echo"]
    /// Past the reuse window (SecretServiceProvider.unlockDuration, 60 s).
    static let pastTheWindow: Double = 61

    @Test("an Unlock of three gated items: one touch; the prompt, the notification and the log name all three; each opens for that client, two gated items it did not name stay locked for it; past the reuse window all five are locked again")
    func threeItems() async throws {
        try await SecretServiceRig.with { rig in
            let read = try await Self.unlock([["alpha", "bravo", "charlie"]], then: [Self.pastTheWindow], in: rig)
            Self.expectNamed("\u{201C}Alpha\u{201D}, \u{201C}Bravo\u{201D} and \u{201C}Charlie\u{201D}", touches: 1, rig)
            Self.expect(read, "r1", open: ["alpha", "bravo", "charlie"])
            Self.expect(read, "after", open: [])
        }
    }

    @Test("through touchstoned, whose grant would open any item of the user: an Unlock of four is named by three labels and 1 more (the daemon logs the same reason); the fifth stays locked for the client; past the window (the provider's clock and the daemon's) all are locked again")
    func fourItemsThroughDaemon() async throws {
        try await SecretServiceRig.with(daemon: true) { rig in
            let read = try await Self.unlock([["alpha", "bravo", "charlie", "delta"]], then: [Self.pastTheWindow], in: rig)
            let named = "\u{201C}Alpha\u{201D}, \u{201C}Bravo\u{201D}, \u{201C}Charlie\u{201D} and 1 more"
            Self.expectNamed(named, touches: 1, rig)
            let log = (try? String(contentsOfFile: rig.sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(log.contains("asks for \(named))"), "\(log)")
            Self.expect(read, "r1", open: ["alpha", "bravo", "charlie", "delta"])
            Self.expect(read, "after", open: [])
        }
    }

    @Test("two Unlocks of one client are kept apart: the second does not extend the first; 70 s after the first touch and 30 s after the second, only the second's item opens")
    func unlocksKeptApart() async throws {
        try await SecretServiceRig.with { rig in
            let read = try await Self.unlock([["alpha"], ["bravo"]], then: [40, 30], in: rig)
            Self.expectNamed("\u{201C}Bravo\u{201D}", touches: 2, rig)
            Self.expect(read, "r1", open: ["alpha"])
            Self.expect(read, "r2", open: ["alpha", "bravo"])
            Self.expect(read, "after", open: ["bravo"])
        }
    }

    /// Stores the five items (gated, biometry-any), then for each round
    /// Unlocks its items in one call (touched with a matching finger),
    /// reads all five and moves the clock on by that round's seconds;
    /// then reads all five again. What the client read, by key
    /// (`rN:...`, `after:...`; the fixture says which).
    private static func unlock(_ rounds: [[String]], then seconds: [Double], in rig: SecretServiceRig) async throws -> [String: String] {
        #expect(await rig.setPasscode().code == 0)
        #expect(await rig.enroll("right-index-finger", as: "alice").code == 0)
        let notifications = try await NotificationRecorder(address: rig.bus.address)
        try await rig.startProvider(["--access", "biometry-any"])
        for name in names {
            let stored = await rig.secretTool(["store", "--label=\(name.capitalized)", "service", name, "app", "set"], stdin: name + "-secret")
            #expect(stored.code == 0, "\(stored.stderr)")
        }
        let go = rig.sandbox.root + "/go"
        let client = try rig.startPython(["unlock-set", go, rounds.map { $0.joined(separator: ",") }.joined(separator: "+"), "app=set"])
        for (number, advance) in zip(1..., seconds) {
            #expect(await rig.touchWhenAsked("alice", occurrence: number), "\(rig.log)")
            let read = try await offPool { client.waitForStderr("read r\(number)") }
            #expect(read, "\(client.stderrSoFar)")
            try rig.advanceClock(advance)
            try Data().write(to: URL(fileURLWithPath: go + "\(number)"))
        }
        let result = await rig.wait(client)
        #expect(result.code == 0, "\(result.stderr)")
        let summaries = notifications.notifications.map(\.summary)
        #expect(summaries.count == rounds.count && zip(summaries, rounds).allSatisfy { summary, round in
            round.prefix(3).allSatisfy { summary.contains("\u{201C}\($0.capitalized)\u{201D}") }
        }, "\(summaries)")
        for (number, round) in zip(1..., rounds) {
            #expect(result.stdoutText.contains("r\(number):dismissed=False\nr\(number):completed=\(round.sorted().joined(separator: ","))\n"),
                    "\(result.stdoutText)")
        }
        return Dictionary(result.stdoutText.split(separator: "\n").compactMap { line -> (String, String)? in
            guard let equals = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<equals]), String(line[line.index(after: equals)...]))
        }, uniquingKeysWith: { $1 })
    }

    /// One authentication a prompt, and the last prompt's words (`named`)
    /// in its log lines and its notification.
    private static func expectNamed(_ named: String, touches: Int, _ rig: SecretServiceRig) {
        #expect(rig.log.components(separatedBy: "waiting for a touch").count == touches + 1, "\(rig.log)")
        #expect(rig.log.contains("asks for \(named): waiting for a touch"), "\(rig.log)")
        #expect(rig.log.contains("unlocked \(named)"), "\(rig.log)")
    }

    /// In `phase`, the items `open` gave their secrets to the client and
    /// were unlocked for it (GetSecrets, GetSecret, Locked, SearchItems);
    /// every other was IsLocked and Locked for it.
    private static func expect(_ read: [String: String], _ phase: String, open: [String]) {
        let locked = names.filter { !open.contains($0) }
        #expect(read["\(phase):secrets"] == open.sorted().joined(separator: ","), "\(phase): \(read)")
        #expect(read["\(phase):search-locked"] == locked.joined(separator: ","), "\(phase): \(read)")
        for name in open {
            #expect(read["\(phase):secret:\(name)"] == name + "-secret", "\(phase) \(name): \(read)")
            #expect(read["\(phase):locked:\(name)"] == "False", "\(phase) \(name): \(read)")
        }
        for name in locked {
            #expect(read["\(phase):refused:\(name)"] == "org.freedesktop.Secret.Error.IsLocked", "\(phase) \(name): \(read)")
            #expect(read["\(phase):locked:\(name)"] == "True", "\(phase) \(name): \(read)")
        }
    }
}

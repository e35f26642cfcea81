import Foundation
import Testing
import TestRigs

/// What one Unlock opens, as a hostile client sees it: a client speaking
/// D-Bus itself (the fixture's `unlock-set`, jeepney's raw messages) Unlocks
/// some gated items of five in one call, runs the prompt, reads all five,
/// then reads them again after the provider's clock (and the daemon's)
/// has passed the reuse window.
@Suite("Secret Service: what an Unlock opens, and for how long")
struct SecretServiceUnlockTests {
    static let names = ["alpha", "bravo", "charlie", "delta", "echo"]

    @Test("an Unlock of three gated items: one touch; the prompt, the notification and the log name all three; each opens for that client, two gated items it did not name stay locked for it; past the reuse window all five are locked again")
    func threeItems() async throws {
        try await Self.unlock(["alpha", "bravo", "charlie"], named: "\u{201C}Alpha\u{201D}, \u{201C}Bravo\u{201D} and \u{201C}Charlie\u{201D}", daemon: false)
    }

    @Test("through touchstoned, whose grant would open any item of the user: an Unlock of four is named by three labels and 1 more (the daemon logs the same reason); the fifth stays locked for the client; past the window (the provider's clock and the daemon's) all are locked again")
    func fourItemsThroughDaemon() async throws {
        try await Self.unlock(["alpha", "bravo", "charlie", "delta"],
                              named: "\u{201C}Alpha\u{201D}, \u{201C}Bravo\u{201D}, \u{201C}Charlie\u{201D} and 1 more", daemon: true)
    }

    /// Stores the five items (gated, biometry-any), Unlocks `unlocking` in
    /// one call, checks the words of the prompt (`named`) and what each read
    /// gives before and after the reuse window.
    private static func unlock(_ unlocking: [String], named: String, daemon: Bool) async throws {
        try await SecretServiceRig.with(daemon: daemon) { rig in
            #expect(await rig.setPasscode().code == 0)
            #expect(await rig.enroll("right-index-finger", as: "alice").code == 0)
            let notifications = try await NotificationRecorder(address: rig.bus.address)
            try await rig.startProvider(["--access", "biometry-any"])
            for name in names {
                let stored = await rig.secretTool(["store", "--label=\(name.capitalized)", "service", name, "app", "set"], stdin: name + "-secret")
                #expect(stored.code == 0, "\(stored.stderr)")
            }
            let go = rig.sandbox.root + "/go"
            let client = try rig.startPython(["unlock-set", go, unlocking.joined(separator: ","), "app=set"])
            #expect(await rig.touchWhenAsked("alice"), "\(rig.log)")
            let readBefore = try await offPool { client.waitForStderr("read before") }
            #expect(readBefore, "\(client.stderrSoFar)")
            // Past the reuse window (SecretServiceProvider.unlockDuration, 60 s).
            try rig.advanceClock(61)
            try Data().write(to: URL(fileURLWithPath: go))
            let result = await rig.wait(client)
            #expect(result.code == 0, "\(result.stderr)")
            let read = Dictionary(result.stdoutText.split(separator: "\n").compactMap { line -> (String, String)? in
                guard let equals = line.firstIndex(of: "=") else { return nil }
                return (String(line[..<equals]), String(line[line.index(after: equals)...]))
            }, uniquingKeysWith: { $1 })
            let others = names.filter { !unlocking.contains($0) }

            // One authentication for the set, in the same words everywhere.
            #expect(rig.log.components(separatedBy: "waiting for a touch").count == 2, "\(rig.log)")
            #expect(rig.log.contains("asks for \(named): waiting for a touch"), "\(rig.log)")
            #expect(rig.log.contains("unlocked \(named)"), "\(rig.log)")
            #expect(try await eventually { notifications.notifications.contains { $0.summary.hasSuffix("asks for \(named)") } },
                    "\(notifications.notifications)")
            if daemon {
                let log = (try? String(contentsOfFile: rig.sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
                #expect(log.contains("asks for \(named))"), "\(log)")
            }

            // Before the window: what the Unlock named opens for this client, nothing else.
            #expect(read["dismissed"] == "False" && read["completed"] == unlocking.sorted().joined(separator: ","), "\(result.stdoutText)")
            #expect(read["before:secrets"] == unlocking.sorted().joined(separator: ","), "\(result.stdoutText)")
            #expect(read["before:search-locked"] == others.joined(separator: ","), "\(result.stdoutText)")
            for name in unlocking {
                #expect(read["before:secret:\(name)"] == name + "-secret", "\(name): \(result.stdoutText)")
                #expect(read["before:locked:\(name)"] == "False", "\(name): \(result.stdoutText)")
            }
            for name in others {
                #expect(read["before:refused:\(name)"] == "org.freedesktop.Secret.Error.IsLocked", "\(name): \(result.stdoutText)")
                #expect(read["before:locked:\(name)"] == "True", "\(name): \(result.stdoutText)")
            }
            // After it: all locked again for the same connection.
            #expect(read["after:secrets"] == "", "\(result.stdoutText)")
            #expect(read["after:search-locked"] == names.joined(separator: ","), "\(result.stdoutText)")
            for name in names {
                #expect(read["after:refused:\(name)"] == "org.freedesktop.Secret.Error.IsLocked", "\(name): \(result.stdoutText)")
                #expect(read["after:locked:\(name)"] == "True", "\(name): \(result.stdoutText)")
            }
        }
    }
}

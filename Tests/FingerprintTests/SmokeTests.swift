import Testing
@testable import TouchstoneFingerprint

@Suite(.serialized) struct SmokeTests {
    @Test func enrolAndVerify() async throws {
        let rig = try await VirtualRig(.device)
        print(rig.reader)
        for c in ["SCAN a", "SCAN a", "RETRY 1", "SCAN a", "SCAN a", "SCAN a"] { try await rig.send(c) }
        let log = EventLog()
        let p = try await rig.backend.enroll(.rightIndex, username: "alice", on: rig.reader.identity, timeout: .seconds(5), events: log.handler)
        print(log.events, p)
        try await rig.send("SCAN a")
        let ok = try await rig.backend.verify(p, timeout: .seconds(5), events: log.handler)
        try await rig.send("SCAN b")
        let no = try await rig.backend.verify(p, timeout: .seconds(5), events: log.handler)
        print(ok, no)
        try await rig.send("RETRY 2")
        try await rig.send("SCAN a")
        let ok2 = try await rig.backend.verify(p, timeout: .seconds(5), events: log.handler)
        print(ok2, log.events)
        let t0 = ContinuousClock.now
        do { _ = try await rig.backend.verify(p, timeout: .milliseconds(300), events: log.handler) } catch { print("timeout:", error, ContinuousClock.now - t0) }
        try await rig.send("UNPLUG")
        do { _ = try await rig.backend.verify(p, timeout: .seconds(5), events: log.handler) } catch { print("unplug:", error, ContinuousClock.now - t0) }
        await rig.finish()
    }
}

import Foundation
import Testing
@testable import TouchstoneFingerprint

extension VirtualReaderTests {
    /// Verify on the host-matching virtual reader: match, no match,
    /// cancellation and timeout.
    @Suite struct Verify {
        @Test func sameFingerMatchesAndOtherFingerDoesNot() async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "alice-right-index")
                try await rig.send("SCAN alice-right-index")
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == true)
                try await rig.send("SCAN somebody-else")
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == false)
            }
        }

        @Test func cancellingAVerifyReturnsPromptlyAndTheReaderStaysUsable() async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "c")
                let waiting = Task {
                    try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in })
                }
                // Let the verify reach the reader and wait for a finger.
                try await Task.sleep(for: .milliseconds(300))
                let cancelledAt = ContinuousClock.now
                waiting.cancel()
                let error = await fingerprintError { _ = try await waiting.value }
                let latency = ContinuousClock.now - cancelledAt
                #expect(error == .cancelled)
                // A cancel, not the verify's 60 s timeout: the bound tells them
                // apart on any machine (how fast a cancel is, is measured, not
                // tested).
                #expect(latency < .seconds(20), "cancel took \(latency)")

                try await rig.send("SCAN c")
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == true)
            }
        }

        @Test func aTaskCancelledBeforeTheVerifyStartsNeverWaits() async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.leftThumb, as: "early")
                let waiting = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in })
                }
                let error = await fingerprintError { _ = try await waiting.value }
                #expect(error == .cancelled)
                try await rig.send("SCAN early")
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == true)
            }
        }

        @Test func verifyWithNoTouchTimesOut() async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "t")
                let started = ContinuousClock.now
                let error = await fingerprintError {
                    _ = try await rig.backend.verify(print, timeout: .milliseconds(400), events: { _ in })
                }
                let waited = ContinuousClock.now - started
                #expect(error == .timedOut)
                #expect(waited >= .milliseconds(350), "gave up after \(waited)")
                #expect(waited < .seconds(10), "gave up after \(waited)")

                try await rig.send("SCAN t")
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == true)
            }
        }

        @Test func identifyIsRefusedByAReaderThatCannotIdentify() async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "i")
                let error = await fingerprintError {
                    _ = try await rig.backend.identify(among: [print], on: rig.reader.identity,
                                                       timeout: .seconds(5), events: { _ in })
                }
                #expect(error == .notSupported(operation: "identify"))
            }
        }
    }
}

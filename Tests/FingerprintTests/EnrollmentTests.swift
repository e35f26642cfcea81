import Foundation
import Testing
@testable import TouchstoneFingerprint

extension VirtualReaderTests {
    /// Enrolment on the host-matching virtual reader.
    @Suite struct Enrollment {
        @Test func readerIsListedWithItsProperties() async throws {
            try await withRig(.device) { rig in
                #expect(rig.reader.driver == "virtual_device")
                #expect(rig.reader.enrollStages == 5)
                #expect(rig.reader.storesPrintsOnDevice == false)
                #expect(rig.reader.canIdentify == false)
                #expect(!rig.reader.name.isEmpty)
            }
        }

        @Test func enrollmentGoesThroughAllStagesWithARetryInTheMiddle() async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                for command in ["SCAN a", "SCAN a", "RETRY 1", "SCAN a", "SCAN a", "SCAN a"] {
                    try await rig.send(command)
                }
                let log = EventLog()
                let print = try await enrollment.enroll(.rightIndex, timeout: .seconds(60), events: log.handler)

                #expect(log.events == [
                    .stage(completed: 1, total: 5), .stage(completed: 2, total: 5),
                    .retry(.swipeTooShort),
                    .stage(completed: 3, total: 5), .stage(completed: 4, total: 5), .stage(completed: 5, total: 5),
                ])
                #expect(print.finger == .rightIndex)
                #expect(print.reader == rig.reader.identity)
                #expect(print.data.count > PrintCodec.minimumLength)
                #expect(try enrollment.enrolledFingers() == [.rightIndex])
                #expect(try enrollment.store.load(.rightIndex, user: "alice", reader: rig.reader.identity) == print)
            }
        }

        @Test func enrollmentStageCountFollowsTheReader() async throws {
            try await withRig(.device) { rig in
                try await rig.send("SET_ENROLL_STAGES 3")
                for _ in 0..<3 { try await rig.send("SCAN t") }
                let log = EventLog()
                _ = try await rig.backend.enroll(.leftThumb, username: "alice", on: rig.reader.identity,
                                                 timeout: .seconds(60), events: log.handler)
                #expect(log.events == [.stage(completed: 1, total: 3), .stage(completed: 2, total: 3),
                                       .stage(completed: 3, total: 3)])
            }
        }

        @Test func unplugDuringEnrollmentFailsClearlyAndStoresNothing() async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                let log = EventLog()
                let enrolling = Task {
                    try await enrollment.enroll(.leftIndex, timeout: .seconds(20), events: log.handler)
                }
                try await rig.send("SCAN u")
                try await rig.send("SCAN u")
                try await waitUntil("two enrolment stages") { log.events.count == 2 }
                try await rig.send("UNPLUG")

                let error = await fingerprintError { _ = try await enrolling.value }
                #expect(error == .disconnected)
                #expect("\(FingerprintError.disconnected)".contains("disconnected"))
                #expect(try enrollment.enrolledFingers() == [])
                #expect(try enrollment.domainState() == nil)
                // The reader is gone for later operations too.
                let later = await fingerprintError {
                    _ = try await rig.backend.enroll(.leftIndex, username: "alice", on: rig.reader.identity,
                                                     timeout: .seconds(5), events: { _ in })
                }
                #expect(later == .disconnected || later == .readerNotFound(rig.reader.identity))
            }
        }

        @Test func scanTypeFollowsTheReader() async throws {
            try await withRig(.device) { rig in
                try await rig.send("SET_SCAN_TYPE press")
                let pressed = try await rig.backend.readers().first { $0.identity == rig.reader.identity }
                #expect(pressed?.scanType == .press)
                try await rig.send("SET_SCAN_TYPE swipe")
                let swiped = try await rig.backend.readers().first { $0.identity == rig.reader.identity }
                #expect(swiped?.scanType == .swipe)
            }
        }

        @Test func cancellingAnEnrollmentStoresNothingAndTheReaderStaysUsable() async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                let log = EventLog()
                let enrolling = Task {
                    try await enrollment.enroll(.rightRing, timeout: .seconds(60), events: log.handler)
                }
                try await rig.send("SCAN k")
                try await waitUntil("the first enrolment stage") { log.events.count == 1 }
                enrolling.cancel()
                let error = await fingerprintError { _ = try await enrolling.value }
                #expect(error == .cancelled)
                #expect(try enrollment.enrolledFingers() == [])
                #expect(try enrollment.domainState() == nil)

                try await rig.queueEnrollment(of: "k")
                try await enrollment.enroll(.rightRing, timeout: .seconds(60))
                #expect(try enrollment.enrolledFingers() == [.rightRing])
            }
        }

        @Test func unknownReaderIsReported() async throws {
            try await withRig(.device) { rig in
                let missing = ReaderIdentity(driver: "no_such_driver", deviceID: "7")
                let error = await fingerprintError {
                    _ = try await rig.backend.enroll(.leftIndex, username: "alice", on: missing,
                                                     timeout: .seconds(5), events: { _ in })
                }
                #expect(error == .readerNotFound(missing))
            }
        }
    }
}

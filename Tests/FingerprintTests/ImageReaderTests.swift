import Foundation
import TestRigs
import Testing
import TouchstoneSimulator
@testable import TouchstoneFingerprint

extension VirtualReaderTests {
    /// Synthetic impressions through libfprint's `virtual_image` reader:
    /// the image sensor's own pipeline (NBIS mindtct minutiae, bozorth3
    /// matching at libfprint's threshold), not a comparison of ID strings.
    @Suite struct ImageReader {
        /// Fixed IDs: with these, the outcome below is what the generator
        /// gives, every run (it is deterministic). Both are left loops:
        /// measured with `G_MESSAGES_DEBUG=all`, the enrolled finger's
        /// impressions 6 and 7 score 230 and 224, the stranger's 1 and 2 at
        /// best 32 and 35, against libfprint's threshold of 40.
        static let enrolled = "alice-right-index"
        static let stranger = "bob-right-index"

        @Test func impressionsOfTheEnrolledFingerMatchAndAnotherFingerDoesNot() async throws {
            try await withRig(.image) { rig in
                #expect(rig.reader.driver == "virtual_image")
                let print = try await rig.enrollImages(of: Self.enrolled, from: 1)
                #expect(print.reader == rig.reader.identity)

                // Impressions never enrolled: a different touch of the same finger matches.
                for number in 6...7 {
                    try await rig.socket.sendImage(try await impression(Self.enrolled, number))
                    #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == true,
                            "impression \(number) of the enrolled finger")
                }
                // Another finger's touches do not.
                for number in 1...2 {
                    try await rig.socket.sendImage(try await impression(Self.stranger, number))
                    #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == false,
                            "impression \(number) of another finger")
                }
            }
        }

        @Test func aRetryFromTheImageReaderIsReportedAndEnrolmentGoesOn() async throws {
            try await withRig(.image) { rig in
                let log = EventLog()
                let enrolling = Task {
                    try await rig.backend.enroll(.leftThumb, username: "alice", on: rig.reader.identity,
                                                 timeout: .seconds(120), events: log.handler)
                }
                try await rig.socket.sendImage(try await impression(Self.enrolled, 1))
                try await waitUntil("the first stage", limit: .seconds(60)) { log.events.count == 1 }
                try await rig.socket.sendImageRetry(.tooShort)
                try await waitUntil("the retry", limit: .seconds(60)) { log.events.count == 2 }
                for number in 2...5 {
                    try await rig.socket.sendImage(try await impression(Self.enrolled, number))
                    try await waitUntil("stage \(number)", limit: .seconds(60)) { log.events.count == number + 1 }
                }
                let print = try await enrolling.value
                #expect(log.events == [
                    .stage(completed: 1, total: 5), .retry(.swipeTooShort),
                    .stage(completed: 2, total: 5), .stage(completed: 3, total: 5),
                    .stage(completed: 4, total: 5), .stage(completed: 5, total: 5),
                ])
                // An error ends the next operation with that error.
                let verifying = Task { try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) }
                try await rig.socket.sendImageError(.busy)
                let error = await fingerprintError { _ = try await verifying.value }
                #expect(error == .busy)
                // And the reader still verifies after it.
                try await rig.socket.sendImage(try await impression(Self.enrolled, 6))
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == true)
            }
        }
    }
}

extension VirtualRig {
    /// Enrols finger `id` on the image reader with its impressions `first`,
    /// `first + 1`, ...: each image is sent once the previous one's
    /// progress (a stage or a retry) arrived, and none after the last stage.
    func enrollImages(of id: String, from first: Int, user: String = "alice") async throws -> EnrolledPrint {
        let log = EventLog()
        let enrolling = Task {
            try await backend.enroll(.rightIndex, username: user, on: reader.identity,
                                     timeout: .seconds(120), events: log.handler)
        }
        var number = first
        while !log.events.contains(.stage(completed: reader.enrollStages, total: reader.enrollStages)) {
            let seen = log.events.count
            try await socket.sendImage(try await impression(id, number))
            number += 1
            try await waitUntil("progress after impression \(number - 1) of \(id)", limit: .seconds(60)) {
                log.events.count > seen
            }
        }
        return try await enrolling.value
    }
}

/// Impression `number` of synthetic finger `id`, made off the cooperative
/// pool: growing a finger's master print takes seconds in a debug build,
/// and a pool thread held that long stalls other tests' tasks (a daemon's
/// sessions among them).
func impression(_ id: String, _ number: Int) async throws -> GreyImage {
    try await offPool { SyntheticFingerprints.shared.impression(of: id, number: number) }
}

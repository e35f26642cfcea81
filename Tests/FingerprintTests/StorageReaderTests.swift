import Foundation
import Testing
@testable import TouchstoneFingerprint

extension VirtualReaderTests {
    /// The match-on-chip style virtual reader: prints live on the reader.
    @Suite struct StorageReader {
        @Test func readerReportsOnDeviceStorageAndIdentify() async throws {
            try await withRig(.storage) { rig in
                #expect(rig.reader.driver == "virtual_device_storage")
                #expect(rig.reader.storesPrintsOnDevice)
                #expect(rig.reader.canIdentify)
            }
        }

        /// The virtual reader keeps the scanned id as the print's record and
        /// parses it as libfprint's user id when listing
        /// (`FP1-<date>-<finger>-<random>-<user>`); real match-on-chip
        /// readers store that same kind of id.
        static let recordID = "FP1-20261129-7-0000ABCD-alice"

        @Test func enrolledPrintIsListedWithItsFingerAndUser() async throws {
            try await withRig(.storage) { rig in
                let print = try await rig.enroll(.rightIndex, as: Self.recordID, user: "alice")
                let listed = try await rig.backend.devicePrints(on: rig.reader.identity, timeout: .seconds(60))
                #expect(listed.count == 1)
                #expect(listed.first?.finger == .rightIndex)
                #expect(listed.first?.username == "alice")
                #expect(listed.first?.reader == print.reader)
            }
        }

        @Test func aListedPrintCanBeDeleted() async throws {
            try await withRig(.storage) { rig in
                _ = try await rig.enroll(.leftIndex, as: "listed-then-deleted")
                let listed = try await rig.backend.devicePrints(on: rig.reader.identity, timeout: .seconds(60))
                let only = try #require(listed.first)
                try await rig.backend.deleteDevicePrint(only, timeout: .seconds(60))
                #expect(try await rig.backend.devicePrints(on: rig.reader.identity, timeout: .seconds(60)).isEmpty)
            }
        }

        @Test func enrollingTheSameFingerAgainIsRefusedAsDuplicate() async throws {
            try await withRig(.storage) { rig in
                _ = try await rig.enroll(.rightIndex, as: "dup")
                // The reader refuses at the first touch of a print it holds.
                try await rig.send("SCAN dup")
                let error = await fingerprintError {
                    _ = try await rig.backend.enroll(.leftIndex, username: "alice", on: rig.reader.identity,
                                                     timeout: .seconds(60), events: { _ in })
                }
                #expect(error == .dataDuplicate)
                let listed = try await rig.backend.devicePrints(on: rig.reader.identity, timeout: .seconds(60))
                #expect(listed.count == 1)
            }
        }

        @Test func identifyFindsTheTouchedFingerAmongSeveral() async throws {
            try await withRig(.storage) { rig in
                let index = try await rig.enroll(.rightIndex, as: "idx")
                let thumb = try await rig.enroll(.rightThumb, as: "thb")
                try await rig.send("SCAN thb")
                let found = try await rig.backend.identify(among: [index, thumb], on: rig.reader.identity,
                                                           timeout: .seconds(60), events: { _ in })
                #expect(found == thumb)
                try await rig.send("SCAN idx")
                let again = try await rig.backend.identify(among: [index, thumb], on: rig.reader.identity,
                                                           timeout: .seconds(60), events: { _ in })
                #expect(again == index)
            }
        }

        @Test func identifyReturnsNilForAFingerOutsideTheGallery() async throws {
            try await withRig(.storage) { rig in
                let index = try await rig.enroll(.rightIndex, as: "in-gallery")
                _ = try await rig.enroll(.leftIndex, as: "not-in-gallery")
                try await rig.send("SCAN not-in-gallery")
                let found = try await rig.backend.identify(among: [index], on: rig.reader.identity,
                                                           timeout: .seconds(60), events: { _ in })
                #expect(found == nil)
            }
        }

        @Test func identifyRetriesGoOn() async throws {
            try await withRig(.storage) { rig in
                let index = try await rig.enroll(.rightIndex, as: "ir")
                try await rig.send("RETRY 2")
                try await rig.send("SCAN ir")
                let log = EventLog()
                let found = try await rig.backend.identify(among: [index], on: rig.reader.identity,
                                                           timeout: .seconds(60), events: log.handler)
                #expect(found == index)
                #expect(log.events == [.retry(.centerFinger)])
            }
        }

        @Test func deleteRemovesThePrintAndASecondDeleteReportsItMissing() async throws {
            try await withRig(.storage) { rig in
                let print = try await rig.enroll(.leftMiddle, as: "del")
                try await rig.backend.deleteDevicePrint(DevicePrint(print), timeout: .seconds(60))
                let listed = try await rig.backend.devicePrints(on: rig.reader.identity, timeout: .seconds(60))
                #expect(listed.isEmpty)
                let error = await fingerprintError {
                    try await rig.backend.deleteDevicePrint(DevicePrint(print), timeout: .seconds(60))
                }
                #expect(error == .dataNotFound)
            }
        }

        @Test func enrollmentOnAStorageReaderUsesIdentifyAndRemovesFromTheReader() async throws {
            try await withRig(.storage) { rig in
                let enrollment = try rig.enrollment()
                try await rig.queueEnrollment(of: "m1")
                try await enrollment.enroll(.rightIndex, timeout: .seconds(60))
                try await rig.queueEnrollment(of: "m2")
                try await enrollment.enroll(.leftIndex, timeout: .seconds(60))
                try await rig.send("SCAN m2")
                #expect(try await enrollment.verifyAny(timeout: .seconds(60)) == .leftIndex)

                try await enrollment.remove(.leftIndex)
                #expect(try enrollment.enrolledFingers() == [.rightIndex])
                let listed = try await rig.backend.devicePrints(on: rig.reader.identity, timeout: .seconds(60))
                #expect(listed.count == 1)
                let error = await fingerprintError { try await enrollment.remove(.leftIndex) }
                #expect(error == .notEnrolled(.leftIndex))
            }
        }

        @Test func listingIsRefusedByAReaderWithoutStorage() async throws {
            try await withRig(.device) { rig in
                let error = await fingerprintError {
                    _ = try await rig.backend.devicePrints(on: rig.reader.identity, timeout: .seconds(5))
                }
                #expect(error == .notSupported(operation: "listing prints"))
            }
        }
    }
}

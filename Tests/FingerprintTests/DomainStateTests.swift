import Foundation
import Testing
import TouchstoneSecure
@testable import TouchstoneFingerprint

/// The domain state as a pure function of its inputs.
@Suite struct DomainStateComputation {
    let reader = ReaderIdentity(driver: "virtual_device", deviceID: "0")
    let a = EnrolledPrint(finger: .rightIndex, reader: ReaderIdentity(driver: "virtual_device", deviceID: "0"),
                          data: Array("FP3-print-a".utf8))
    let b = EnrolledPrint(finger: .leftThumb, reader: ReaderIdentity(driver: "virtual_device", deviceID: "0"),
                          data: Array("FP3-print-b".utf8))

    @Test func isThirtyTwoBytesAndDeterministic() {
        let epoch = SecureBytes.random(count: 32)
        let first = DomainState.compute(reader: reader, prints: [a, b], epoch: epoch)
        let second = DomainState.compute(reader: reader, prints: [a, b], epoch: epoch)
        #expect(first.count == 32)
        #expect(first == second)
    }

    @Test func doesNotDependOnTheOrderPrintsAreGivenIn() {
        let epoch = SecureBytes.random(count: 32)
        #expect(DomainState.compute(reader: reader, prints: [a, b], epoch: epoch)
                == DomainState.compute(reader: reader, prints: [b, a], epoch: epoch))
    }

    @Test func changesWithEachInput() {
        let epoch = SecureBytes.random(count: 32)
        let base = DomainState.compute(reader: reader, prints: [a, b], epoch: epoch)
        let otherReader = ReaderIdentity(driver: "virtual_device", deviceID: "1")
        let otherData = EnrolledPrint(finger: .rightIndex, reader: reader, data: Array("FP3-print-c".utf8))
        let otherFinger = EnrolledPrint(finger: .rightMiddle, reader: reader, data: a.data)
        #expect(base != DomainState.compute(reader: otherReader, prints: [a, b], epoch: epoch))
        #expect(base != DomainState.compute(reader: reader, prints: [a], epoch: epoch))
        #expect(base != DomainState.compute(reader: reader, prints: [otherData, b], epoch: epoch))
        #expect(base != DomainState.compute(reader: reader, prints: [otherFinger, b], epoch: epoch))
        #expect(base != DomainState.compute(reader: reader, prints: [a, b], epoch: .random(count: 32)))
    }

    /// Length prefixes keep field boundaries: moving a byte from one field
    /// to the next gives another value.
    @Test func fieldBoundariesMatter() {
        let epoch = SecureBytes.random(count: 32)
        let one = ReaderIdentity(driver: "ab", deviceID: "c")
        let two = ReaderIdentity(driver: "a", deviceID: "bc")
        #expect(DomainState.compute(reader: one, prints: [], epoch: epoch)
                != DomainState.compute(reader: two, prints: [], epoch: epoch))
    }
}

extension VirtualReaderTests {
    /// The domain state across real enrolment changes.
    @Suite struct DomainStateLifecycle {
        @Test func changesOnAddAndRemoveIsStableOnReadsAndIsFreshAfterReAdding() async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                #expect(try enrollment.domainState() == nil)

                try await rig.queueEnrollment(of: "one")
                try await enrollment.enroll(.rightIndex, timeout: .seconds(60))
                let afterFirst = try #require(try enrollment.domainState())
                #expect(afterFirst.count == 32)
                #expect(try enrollment.domainState() == afterFirst)

                // Reading prints and matching do not change it.
                _ = try enrollment.enrolledFingers()
                try await rig.send("SCAN one")
                #expect(try await enrollment.verify(.rightIndex, timeout: .seconds(60)))
                #expect(try enrollment.domainState() == afterFirst)

                try await rig.queueEnrollment(of: "two")
                try await enrollment.enroll(.leftIndex, timeout: .seconds(60))
                let afterSecond = try #require(try enrollment.domainState())
                #expect(afterSecond != afterFirst)

                try await enrollment.remove(.leftIndex)
                let afterRemove = try #require(try enrollment.domainState())
                #expect(afterRemove != afterSecond)
                #expect(afterRemove != afterFirst, "same set as after the first enrolment, yet a new value")

                try await rig.queueEnrollment(of: "two")
                try await enrollment.enroll(.leftIndex, timeout: .seconds(60))
                let afterReAdd = try #require(try enrollment.domainState())
                for earlier in [afterFirst, afterSecond, afterRemove] {
                    #expect(afterReAdd != earlier)
                }
            }
        }

        @Test func aFailedEnrollmentLeavesItUnchanged() async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                try await rig.queueEnrollment(of: "kept")
                try await enrollment.enroll(.rightIndex, timeout: .seconds(60))
                let before = try #require(try enrollment.domainState())
                try await rig.send("ERROR 5")
                let error = await fingerprintError { _ = try await enrollment.enroll(.leftIndex, timeout: .seconds(60)) }
                #expect(error == .protocolError)
                #expect(try enrollment.domainState() == before)
            }
        }

        @Test func dependsOnTheReader() async throws {
            try await withRig(.device) { rig in
                let store = try FileEnrollmentStore(root: rig.stateDirectory())
                let epoch = SecureBytes.random(count: 32)
                let other = ReaderIdentity(driver: rig.reader.driver, deviceID: rig.reader.deviceID + "x")
                try store.setEpoch(epoch, user: "alice", reader: rig.reader.identity)
                try store.setEpoch(epoch, user: "alice", reader: other)
                let here = try FingerprintEnrollment(backend: rig.backend, store: store, user: "alice",
                                                     reader: rig.reader).domainState()
                let there = DomainState.compute(reader: other, prints: [], epoch: epoch)
                #expect(here != nil)
                #expect(here != there)
            }
        }
    }
}

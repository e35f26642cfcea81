import Foundation
import Glibc
import Testing
import TouchstoneSecure
@testable import TouchstoneFingerprint

/// The file enrolment store on its own.
@Suite struct EnrollmentStoreFiles {
    let reader = ReaderIdentity(driver: "virtual_device", deviceID: "0")

    /// A fresh state directory, removed by the caller.
    func makeRoot() throws -> URL {
        var template = Array("/tmp/tsfp-store-XXXXXX".utf8CString)
        let made = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) })
        return URL(fileURLWithPath: String(cString: made)).appendingPathComponent("state")
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        stat(path, &info)
        return info.st_mode & 0o777
    }

    @Test func savesLoadsListsAndRemoves() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let store = try FileEnrollmentStore(root: root)
        let thumb = EnrolledPrint(finger: .leftThumb, reader: reader, data: [1, 2, 3, 4, 5])
        let index = EnrolledPrint(finger: .rightIndex, reader: reader, data: [9, 8, 7, 6])
        try store.save(thumb, user: "alice")
        try store.save(index, user: "alice")
        #expect(try store.fingers(user: "alice", reader: reader) == [.leftThumb, .rightIndex])
        #expect(try store.fingers(user: "bob", reader: reader) == [])
        #expect(try store.load(.leftThumb, user: "alice", reader: reader) == thumb)
        try store.remove(.leftThumb, user: "alice", reader: reader)
        #expect(try store.fingers(user: "alice", reader: reader) == [.rightIndex])
        #expect(throws: FingerprintError.notEnrolled(.leftThumb)) {
            try store.load(.leftThumb, user: "alice", reader: reader)
        }
        #expect(throws: FingerprintError.notEnrolled(.leftThumb)) {
            try store.remove(.leftThumb, user: "alice", reader: reader)
        }
    }

    @Test func filesAre0600InDirectories0700UnderFprintdFingerNames() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let store = try FileEnrollmentStore(root: root)
        try store.save(EnrolledPrint(finger: .rightMiddle, reader: reader, data: [1, 2, 3, 4]), user: "alice")
        try store.setEpoch(.random(count: 32), user: "alice", reader: reader)
        let dir = store.directory(user: "alice", reader: reader)
        #expect(mode(root.path) == 0o700)
        #expect(mode(root.appendingPathComponent("alice").path) == 0o700)
        #expect(mode(dir.deletingLastPathComponent().path) == 0o700)
        #expect(mode(dir.path) == 0o700)
        #expect(mode(dir.appendingPathComponent("right-middle-finger.print").path) == 0o600)
        #expect(mode(dir.appendingPathComponent("epoch").path) == 0o600)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(names == ["epoch", "right-middle-finger.print"], "no temporary files left behind")
    }

    @Test func pathComponentsCannotEscapeTheRoot() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let store = try FileEnrollmentStore(root: root)
        let odd = ReaderIdentity(driver: "../..", deviceID: "usb/1-2")
        try store.save(EnrolledPrint(finger: .leftRing, reader: odd, data: [1, 2, 3, 4]), user: "../../etc")
        let dir = store.directory(user: "../../etc", reader: odd)
        #expect(dir.path.hasPrefix(root.path + "/"))
        #expect(!dir.path.contains("/../"))
        #expect(try store.fingers(user: "../../etc", reader: odd) == [.leftRing])
        #expect(FileEnrollmentStore.escape("") == "%")
        #expect(FileEnrollmentStore.escape(".hidden") == "%2Ehidden")
    }

    @Test func epochRoundTripsAndIsAbsentUntilSet() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let store = try FileEnrollmentStore(root: root)
        #expect(try store.epoch(user: "alice", reader: reader) == nil)
        let epoch = SecureBytes.random(count: 32)
        try store.setEpoch(epoch, user: "alice", reader: reader)
        #expect(try store.epoch(user: "alice", reader: reader) == epoch)
    }

    @Test(arguments: [
        ("empty file", [UInt8]()),
        ("junk", Array("this is not a print record at all, just junk".utf8)),
        ("truncated header", Array("TSP1".utf8) + [1, 2, 3]),
    ])
    func aCorruptRecordNamesItsFingerAndOthersStillLoad(what: String, contents: [UInt8]) throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let store = try FileEnrollmentStore(root: root)
        let good = EnrolledPrint(finger: .rightIndex, reader: reader, data: [5, 6, 7, 8, 9])
        try store.save(good, user: "alice")
        try store.save(EnrolledPrint(finger: .leftIndex, reader: reader, data: [1, 2, 3, 4]), user: "alice")
        let path = store.recordPath(.leftIndex, user: "alice", reader: reader)
        try Data(contents).write(to: URL(fileURLWithPath: path))

        let error = #expect(throws: FingerprintError.self) {
            try store.load(.leftIndex, user: "alice", reader: reader)
        }
        guard case .corruptRecord(let finger, _) = error else {
            Issue.record("\(what): expected corruptRecord, got \(String(describing: error))")
            return
        }
        #expect(finger == .leftIndex)
        #expect(error?.description.contains("left-index-finger") == true)
        #expect(try store.load(.rightIndex, user: "alice", reader: reader) == good)
    }

    @Test func aFlippedBitIsCaughtByTheChecksum() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let store = try FileEnrollmentStore(root: root)
        try store.save(EnrolledPrint(finger: .rightThumb, reader: reader, data: Array(repeating: 7, count: 64)),
                       user: "alice")
        let url = URL(fileURLWithPath: store.recordPath(.rightThumb, user: "alice", reader: reader))
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count - 1] ^= 0x01
        try bytes.write(to: url)
        #expect(throws: FingerprintError.corruptRecord(finger: .rightThumb, reason: "checksum mismatch")) {
            try store.load(.rightThumb, user: "alice", reader: reader)
        }
    }

    @Test func emptyPrintDataIsNeverSaved() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let store = try FileEnrollmentStore(root: root)
        #expect(throws: FingerprintError.self) {
            try store.save(EnrolledPrint(finger: .rightThumb, reader: reader, data: []), user: "alice")
        }
        #expect(try store.fingers(user: "alice", reader: reader) == [])
    }
}

extension VirtualReaderTests {
    /// Damaged prints reaching the reader: clear errors, never an abort.
    @Suite struct DamagedPrints {
        @Test func aCorruptStoredPrintNamesTheFingerAndOtherFingersStillVerify() async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                try await rig.queueEnrollment(of: "first")
                try await enrollment.enroll(.rightIndex, timeout: .seconds(60))
                try await rig.queueEnrollment(of: "second")
                try await enrollment.enroll(.rightMiddle, timeout: .seconds(60))

                let store = try #require(enrollment.store as? FileEnrollmentStore)
                let path = store.recordPath(.rightIndex, user: "alice", reader: rig.reader.identity)
                try Data("garbage where a print was".utf8).write(to: URL(fileURLWithPath: path))

                let error = await fingerprintError { _ = try await enrollment.verify(.rightIndex, timeout: .seconds(5)) }
                guard case .corruptRecord(let finger, _) = error else {
                    Issue.record("expected corruptRecord, got \(String(describing: error))")
                    return
                }
                #expect(finger == .rightIndex)
                #expect(error?.description.contains("right-index-finger") == true)

                try await rig.send("SCAN second")
                #expect(try await enrollment.verify(.rightMiddle, timeout: .seconds(60)))
                // Any-finger verification skips the unreadable record.
                try await rig.send("SCAN second")
                #expect(try await enrollment.verifyAny(timeout: .seconds(60)) == .rightMiddle)
            }
        }

        /// Data that passes the store but not libfprint: refused before or by
        /// libfprint with a typed error; the process survives and the reader
        /// still works.
        @Test(arguments: [
            ("empty", [UInt8]()),
            ("shorter than the format tag", Array("FP3".utf8)),
            ("unknown format", Array("XYZ-not-a-print".utf8)),
            ("right tag, junk body", Array("FP3".utf8) + Array(repeating: 0xA5, count: 40)),
            ("right tag, no body", Array("FP3".utf8) + [0]),
        ])
        func unusablePrintDataIsAClearErrorAndTheReaderStaysUsable(what: String, data: [UInt8]) async throws {
            try await withRig(.device) { rig in
                let good = try await rig.enroll(.leftThumb, as: "ok")
                let bad = EnrolledPrint(finger: .rightRing, reader: rig.reader.identity, data: data)
                let error = await fingerprintError {
                    _ = try await rig.backend.verify(bad, timeout: .seconds(5), events: { _ in })
                }
                guard case .invalidPrint(let finger, let reason) = error else {
                    Issue.record("\(what): expected invalidPrint, got \(String(describing: error))")
                    return
                }
                #expect(finger == .rightRing)
                #expect(!reason.isEmpty)
                try await rig.send("SCAN ok")
                #expect(try await rig.backend.verify(good, timeout: .seconds(60), events: { _ in }))
            }
        }

        @Test func aPrintFromAnotherReaderIsRefused() async throws {
            try await withRig(.device) { rig in
                let good = try await rig.enroll(.leftThumb, as: "mine")
                let elsewhere = ReaderIdentity(driver: "virtual_device", deviceID: "other")
                let moved = EnrolledPrint(finger: .leftThumb, reader: elsewhere, data: good.data)
                let error = await fingerprintError {
                    _ = try await rig.backend.identify(among: [moved], on: rig.reader.identity,
                                                       timeout: .seconds(5), events: { _ in })
                }
                #expect(error == .wrongReader(expected: rig.reader.identity, actual: elsewhere))
            }
        }
    }
}

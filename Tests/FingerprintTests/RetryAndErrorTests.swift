import CFPrint
import Foundation
import Testing
@testable import TouchstoneFingerprint

extension VirtualReaderTests {
    /// libfprint's retry codes become events and the operation goes on; its
    /// device error codes become typed errors.
    @Suite struct RetryAndError {
        /// FP_DEVICE_RETRY code -> the hint fprintd would show.
        static let retries: [(code: Int, hint: RetryHint)] = [
            (0, .tryAgain), (1, .swipeTooShort), (2, .centerFinger), (3, .removeFinger),
        ]

        @Test(arguments: retries)
        func retryDuringVerifyIsAnEventAndVerifyGoesOn(code: Int, hint: RetryHint) async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "r")
                try await rig.send("RETRY \(code)")
                try await rig.send("SCAN r")
                let log = EventLog()
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: log.handler) == true)
                #expect(log.events == [.retry(hint)])
            }
        }

        @Test(arguments: retries)
        func retryDuringEnrollmentIsAnEventAndEnrollmentGoesOn(code: Int, hint: RetryHint) async throws {
            try await withRig(.device) { rig in
                try await rig.send("SCAN e")
                try await rig.send("RETRY \(code)")
                for _ in 0..<4 { try await rig.send("SCAN e") }
                let log = EventLog()
                _ = try await rig.backend.enroll(.leftRing, username: "alice", on: rig.reader.identity,
                                                 timeout: .seconds(60), events: log.handler)
                #expect(log.events.count == 6)
                #expect(log.events.dropFirst().first == .retry(hint))
                #expect(log.events.last == .stage(completed: 5, total: 5))
            }
        }

        @Test func hintsUseFprintdWording() {
            #expect(RetryHint.swipeTooShort.message == "swipe too short")
            #expect(RetryHint.centerFinger.message == "centre your finger")
            #expect(RetryHint.removeFinger.message == "remove your finger and try again")
            #expect(RetryHint.tryAgain.message == "try again")
        }

        /// FpDeviceError code -> the error callers see.
        static let errors: [(code: Int, error: FingerprintError)] = [
            (4, .busy), (5, .protocolError), (6, .dataInvalid),
            (8, .dataFull), (9, .dataDuplicate), (256, .disconnected), (257, .tooHot),
        ]

        @Test(arguments: errors)
        func deviceErrorDuringVerifyIsMapped(code: Int, expected: FingerprintError) async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "x")
                try await rig.send("ERROR \(code)")
                let error = await fingerprintError {
                    _ = try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in })
                }
                #expect(error == expected)
            }
        }

        /// During enrolment every specific code, DATA_NOT_FOUND included,
        /// is an error, and nothing is stored.
        @Test(arguments: errors + [(7, .dataNotFound)])
        func deviceErrorDuringEnrollmentIsMapped(code: Int, expected: FingerprintError) async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                try await rig.send("SCAN q")
                try await rig.send("ERROR \(code)")
                let error = await fingerprintError {
                    _ = try await enrollment.enroll(.leftLittle, timeout: .seconds(60))
                }
                #expect(error == expected)
                #expect(try enrollment.enrolledFingers() == [])
            }
        }

        /// DATA_NOT_FOUND during a match means the touched finger is not
        /// one the reader holds: no match, as fprintd treats it. (As an
        /// error it surfaces from delete; see the storage reader tests.)
        @Test func dataNotFoundDuringVerifyIsNoMatch() async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "nf")
                try await rig.send("ERROR 7")
                #expect(try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in }) == false)
            }
        }

        @Test func dataNotFoundDuringIdentifyIsNoMatch() async throws {
            try await withRig(.storage) { rig in
                let print = try await rig.enroll(.rightIndex, as: "held")
                try await rig.send("SCAN never-enrolled")
                let found = try await rig.backend.identify(among: [print], on: rig.reader.identity,
                                                           timeout: .seconds(60), events: { _ in })
                #expect(found == nil)
            }
        }

        @Test func errorsAreMappedFromTheirDomainAndCode() {
            let device = fp_device_error_quark()
            let retry = fp_device_retry_quark()
            #expect(GLibError(domain: device, code: 7, message: "").fingerprintError == .dataNotFound)
            #expect(GLibError(domain: device, code: 8, message: "").fingerprintError == .dataFull)
            #expect(GLibError(domain: retry, code: 1, message: "").retryHint == .swipeTooShort)
            #expect(GLibError(domain: retry, code: 99, message: "").retryHint == .tryAgain)
            // Same code in another domain is not a device error.
            #expect(GLibError(domain: g_quark_from_string("some-other-domain"), code: 4, message: "x")
                        .fingerprintError == .notAvailable(reason: "x"))
            #expect(GLibError(domain: retry, code: 0, message: "").fingerprintError != .busy)
            #expect(GLibError(domain: device, code: 4, message: "").meansReaderHeld)
            #expect(GLibError(domain: g_quark_from_string("g-usb-device-error-quark"), code: 0,
                              message: "Resource busy").meansReaderHeld)
        }

        /// GENERAL, NOT_SUPPORTED, NOT_OPEN and ALREADY_OPEN all mean the
        /// reader cannot be used now.
        @Test(arguments: [0, 1, 2, 3])
        func generalDeviceErrorsMeanNotAvailable(code: Int) async throws {
            try await withRig(.device) { rig in
                let print = try await rig.enroll(.rightIndex, as: "g")
                try await rig.send("ERROR \(code)")
                let error = await fingerprintError {
                    _ = try await rig.backend.verify(print, timeout: .seconds(60), events: { _ in })
                }
                guard case .notAvailable(let reason) = error else {
                    Issue.record("expected notAvailable, got \(String(describing: error))")
                    return
                }
                #expect(!reason.isEmpty)
            }
        }

        @Test func errorDuringEnrollmentIsMappedAndTheReaderStaysUsable() async throws {
            try await withRig(.device) { rig in
                let enrollment = try rig.enrollment()
                try await rig.send("SCAN h")
                try await rig.send("ERROR 257")
                let error = await fingerprintError {
                    _ = try await enrollment.enroll(.rightThumb, timeout: .seconds(60))
                }
                #expect(error == .tooHot)
                #expect(try enrollment.enrolledFingers() == [])

                try await rig.queueEnrollment(of: "h")
                try await enrollment.enroll(.rightThumb, timeout: .seconds(60))
                #expect(try enrollment.enrolledFingers() == [.rightThumb])
            }
        }

        @Test func busyNamesFprintd() {
            #expect(FingerprintError.busy.description.contains("fprintd"))
        }
    }
}

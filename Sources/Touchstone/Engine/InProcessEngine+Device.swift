import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// The passcode and the fingers.
extension InProcessEngine {
    package func passcodeIsSet() async throws(DeviceError) -> Bool { vault.isPasscodeSet }

    package func setPasscode(_ passcode: SecureBytes) async throws(DeviceError) {
        try await device {
            guard passcode.count > 0 else { throw BackendFailure.invalidInput("the passcode is empty") }
            try vault.setPasscode(PasscodeAuth(passcode: passcode), domainState: Self.freshState())
        }
    }

    package func changePasscode(from old: SecureBytes, to new: SecureBytes) async throws(DeviceError) {
        try await device {
            guard new.count > 0 else { throw BackendFailure.invalidInput("the new passcode is empty") }
            try vault.changePasscode(from: PasscodeAuth(passcode: old), to: PasscodeAuth(passcode: new))
        }
    }

    package func removePasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int {
        try await device {
            let deleted = try vault.removePasscode(PasscodeAuth(passcode: passcode))
            if let recorded = try enrolledReader() {
                for finger in (try? store.fingers(user: configuration.user, reader: recorded)) ?? [] {
                    try? store.remove(finger, user: configuration.user, reader: recorded)
                }
            }
            if let open = reader, open.enrollment.reader.storesPrintsOnDevice {
                for finger in (try? open.enrollment.enrolledFingers()) ?? [] { try? await open.enrollment.remove(finger) }
            }
            try vault.setSetting("reader", nil)
            return deleted
        }
    }

    package func enrolledFingers() async throws(DeviceError) -> [Finger] {
        try await device { try enrolledFingerList() }
    }

    package func enroll(_ finger: Finger, passcode: SecureBytes, timeout: Duration,
                        events: @escaping @Sendable (ScanEvent) -> Void) async throws(DeviceError) {
        try await device {
            try vault.requireWritable()
            let auth = PasscodeAuth(passcode: passcode)
            try vault.verifyPasscode(auth)
            let enrollment = try await openReader()
            if let recorded = try enrolledReader(), recorded != enrollment.reader.identity,
               !(try store.fingers(user: configuration.user, reader: recorded)).isEmpty {
                throw BackendFailure.enrolledOnAnotherReader(recorded.description)
            }
            try await enrollment.enroll(finger, timeout: timeout, events: events)
            try vault.setSetting("reader", enrollment.reader.identity.description)
            let state = try enrollment.domainState().map { $0.withUnsafeBytes { Array($0) } } ?? Self.freshState()
            try vault.enrollmentChanged(to: state, passcode: auth)
        }
    }

    package func unenroll(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError) {
        try await device {
            try vault.requireWritable()
            let auth = PasscodeAuth(passcode: passcode)
            try vault.verifyPasscode(auth)
            guard let recorded = try enrolledReader() else { throw FingerprintError.nothingEnrolled }
            let fingers = try store.fingers(user: configuration.user, reader: recorded)
            if let finger, !fingers.contains(finger) { throw FingerprintError.notEnrolled(finger) }
            let doomed = finger.map { [$0] } ?? fingers
            guard !doomed.isEmpty else { throw FingerprintError.nothingEnrolled }
            // Host-side prints go without the reader; match-on-chip prints need it.
            for f in doomed {
                if let open = reader, open.enrollment.reader.identity == recorded {
                    try await open.enrollment.remove(f)
                } else {
                    try store.remove(f, user: configuration.user, reader: recorded)
                    try store.setEpoch(.random(count: 32), user: configuration.user, reader: recorded)
                }
            }
            let state = try domainState(reader: recorded) ?? Self.freshState()
            try vault.enrollmentChanged(to: state, passcode: auth)
        }
    }

    // MARK: - Helpers

    /// The reader, opened (claimed) on first use.
    func openReader() async throws -> FingerprintEnrollment {
        if let reader { return reader.enrollment }
        let opened = try await ReaderConnection.open(readerTarget, store: store, user: configuration.user)
        if let raced = reader {
            // Another call opened it while this one waited.
            await opened.close()
            return raced.enrollment
        }
        reader = opened
        return opened.enrollment
    }

    /// The reader the fingers were enrolled on, as recorded.
    func enrolledReader() throws -> ReaderIdentity? {
        guard let text = try vault.setting("reader"), let slash = text.firstIndex(of: "/") else { return nil }
        return ReaderIdentity(driver: String(text[..<slash]), deviceID: String(text[text.index(after: slash)...]))
    }

    /// The enrolled fingers (no reader needed).
    func enrolledFingerList() throws -> [Finger] {
        guard let recorded = try enrolledReader() else { return [] }
        return try store.fingers(user: configuration.user, reader: recorded)
    }

    /// The domain state of the fingers enrolled on `reader`, from the store.
    func domainState(reader: ReaderIdentity) throws -> [UInt8]? {
        guard let epoch = try store.epoch(user: configuration.user, reader: reader) else { return nil }
        let prints = try store.fingers(user: configuration.user, reader: reader).map {
            try store.load($0, user: configuration.user, reader: reader)
        }
        return DomainState.compute(reader: reader, prints: prints, epoch: epoch).withUnsafeBytes { Array($0) }
    }

    static func freshState() -> [UInt8] { SecureBytes.random(count: 32).withUnsafeBytes { Array($0) } }
}

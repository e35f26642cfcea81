import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// The passcode and the fingers.
extension InProcessEngine {
    package func passcodeIsSet() async throws(DeviceError) -> Bool { vault.isPasscodeSet }

    package func setPasscode(_ passcode: SecureBytes) async throws(DeviceError) {
        daemon?.warm.forget()
        try await device {
            guard passcode.count > 0 else { throw BackendFailure.invalidInput("the passcode is empty") }
            try vault.setPasscode(PasscodeAuth(passcode: passcode))
        }
        daemon?.throttle.recordSuccess(passcode)
    }

    package func changePasscode(from old: SecureBytes, to new: SecureBytes) async throws(DeviceError) {
        daemon?.warm.forget()
        try await throttled(old) { () async throws(DeviceError) in
            try await device {
                guard new.count > 0 else { throw BackendFailure.invalidInput("the new passcode is empty") }
                try vault.changePasscode(from: PasscodeAuth(passcode: old), to: PasscodeAuth(passcode: new))
            }
        }
        daemon?.throttle.recordSuccess(new)
    }

    package func removePasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int {
        daemon?.warm.forget()
        let removed = try await throttled(passcode) { () async throws(DeviceError) in try await removingPasscode(passcode) }
        daemon?.throttle.forget()
        return removed
    }

    private func removingPasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int {
        try await device {
            // The set as it was, for a match-on-chip reader's own copies.
            let enrolled = try? vault.enrolledFingers()
            let deleted = try vault.removePasscode(PasscodeAuth(passcode: passcode))
            if let enrolled, let open = reader, open.session.reader.storesPrintsOnDevice,
               open.session.reader.identity == enrolled.reader {
                for print in enrolled.prints { try? await open.session.deleteFromDevice(print) }
            }
            return deleted
        }
    }

    package func enrolledFingers() async throws(DeviceError) -> [Finger] {
        try await device { try vault.enrolledFingerNames() }
    }

    /// Enrols `finger`: the passcode checked, the print captured, then the
    /// vault's change (new keys sealed, one commit, the enrolment counter
    /// incremented). A failed or cancelled capture changes nothing.
    package func enroll(_ finger: Finger, passcode: SecureBytes, timeout: Duration,
                        events: @escaping @Sendable (ScanEvent) -> Void) async throws(DeviceError) {
        try await throttled(passcode) { () async throws(DeviceError) in
            try await enrolling(finger, passcode: passcode, timeout: timeout, events: events)
        }
    }

    private func enrolling(_ finger: Finger, passcode: SecureBytes, timeout: Duration,
                           events: @escaping @Sendable (ScanEvent) -> Void) async throws(DeviceError) {
        try await device {
            try vault.requireWritable()
            let proof = try vault.verifyPasscode(PasscodeAuth(passcode: passcode))
            let current = try vault.enrolledFingers()
            let session = try await openReader()
            if let recorded = current.reader, recorded != session.reader.identity {
                throw BackendFailure.enrolledOnAnotherReader(recorded.description)
            }
            let existing = current.prints.first { $0.finger == finger }
            let print = try await session.capture(finger, replacing: existing, timeout: timeout, events: events)
            let prints = current.prints.filter { $0.finger != finger } + [print]
            try vault.changeFingers(to: prints, reader: session.reader.identity, proof: proof)
        }
    }

    /// Unenrols `finger` (nil: every finger). With the fingers' store found
    /// altered, only every finger can be unenrolled: that is how the
    /// passcode's owner starts again.
    package func unenroll(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError) {
        try await throttled(passcode) { () async throws(DeviceError) in try await unenrolling(finger, passcode: passcode) }
    }

    private func unenrolling(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError) {
        try await device {
            try vault.requireWritable()
            let proof = try vault.verifyPasscode(PasscodeAuth(passcode: passcode))
            let current: EnrolledFingers?
            do {
                current = try vault.enrolledFingers()
            } catch VaultError.fingersTampered where finger == nil {
                current = nil
            }
            if let current {
                if let finger, !current.fingers.contains(finger) { throw FingerprintError.notEnrolled(finger) }
                guard !current.prints.isEmpty else { throw FingerprintError.nothingEnrolled }
            }
            let remaining = current?.prints.filter { finger != nil && $0.finger != finger } ?? []
            try vault.changeFingers(to: remaining, reader: current?.reader, proof: proof)
            // A match-on-chip reader's own copies: after the change, so a
            // failure here leaves a print no set names (never matched).
            if let current, let open = reader, open.session.reader.storesPrintsOnDevice,
               open.session.reader.identity == current.reader {
                for print in current.prints where !remaining.contains(print) { try? await open.session.deleteFromDevice(print) }
            }
        }
    }

    // MARK: - Helpers

    /// The reader, opened (claimed) on first use.
    func openReader() async throws -> ReaderSession {
        if let reader { return reader.session }
        let opened = try await ReaderConnection.open(readerTarget, user: configuration.user)
        if let raced = reader {
            // Another call opened it while this one waited.
            await opened.close()
            return raced.session
        }
        reader = opened
        return opened.session
    }
}

import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// The passcode and the fingers.
extension InProcessEngine {
    package func passcodeIsSet() async throws(DeviceError) -> Bool { vault.isPasscodeSet }

    package func setPasscode(_ passcode: SecureBytes) async throws(DeviceError) {
        try reserveNVWrite()
        daemon?.warm.forget()
        try await device { () throws(BackendFailure) in
            guard passcode.count > 0 else { throw BackendFailure.invalidInput("the passcode is empty") }
            try vaultCall(vault.setPasscode(PasscodeAuth(passcode: passcode)))
        }
        daemon?.throttle.recordSuccess(passcode)
    }

    package func changePasscode(from old: SecureBytes, to new: SecureBytes) async throws(DeviceError) {
        daemon?.warm.forget()
        try await throttled(old, writesNV: true) { () async throws(DeviceError) in
            try await device { () throws(BackendFailure) in
                guard new.count > 0 else { throw BackendFailure.invalidInput("the new passcode is empty") }
                try vaultCall(vault.changePasscode(from: PasscodeAuth(passcode: old), to: PasscodeAuth(passcode: new)))
            }
        }
        daemon?.throttle.recordSuccess(new)
    }

    package func removePasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int {
        daemon?.warm.forget()
        let removed = try await throttled(passcode, writesNV: true) { () async throws(DeviceError) in
            try await removingPasscode(passcode)
        }
        daemon?.throttle.forget()
        return removed
    }

    private func removingPasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int {
        try await device { () async throws(BackendFailure) in
            // The set as it was, for a match-on-chip reader's own copies.
            let enrolled = try? vault.enrolledFingers()
            let deleted = try vaultCall(vault.removePasscode(PasscodeAuth(passcode: passcode)))
            if let enrolled, let open = reader, open.session.reader.storesPrintsOnDevice,
               open.session.reader.identity == enrolled.reader {
                for print in enrolled.prints { try? await open.session.deleteFromDevice(print) }
            }
            return deleted
        }
    }

    package func enrolledFingers() async throws(DeviceError) -> [Finger] {
        try await device { () throws(BackendFailure) in try vaultCall(vault.enrolledFingerNames()) }
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
        try await device { () async throws(BackendFailure) in
            try vaultCall(vault.requireWritable())
            let proof = try vaultCall(vault.verifyPasscode(PasscodeAuth(passcode: passcode)))
            let current = try vaultCall(vault.enrolledFingers())
            let session = try await readerCall(await openReader())
            if let recorded = current.reader, recorded != session.reader.identity {
                throw BackendFailure.enrolledOnAnotherReader(recorded.description)
            }
            let existing = current.prints.first { $0.finger == finger }
            // The daemon bounds the whole enrolment too: the reader is
            // every user's.
            let print = try await readerCall(await session.capture(finger, replacing: existing, timeout: timeout,
                                                                   longest: daemon?.longestEnrolment, events: events))
            let prints = current.prints.filter { $0.finger != finger } + [print]
            try vaultCall(vault.changeFingers(to: prints, reader: session.reader.identity, proof: proof))
        }
    }

    /// Unenrols `finger` (nil: every finger). With the fingers' store found
    /// altered, only every finger can be unenrolled: that is how the
    /// passcode's owner starts again.
    package func unenroll(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError) {
        try await throttled(passcode, writesNV: true) { () async throws(DeviceError) in try await unenrolling(finger, passcode: passcode) }
    }

    private func unenrolling(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError) {
        try await device { () async throws(BackendFailure) in
            try vaultCall(vault.requireWritable())
            let proof = try vaultCall(vault.verifyPasscode(PasscodeAuth(passcode: passcode)))
            let current: EnrolledFingers?
            do throws(VaultError) {
                current = try vault.enrolledFingers()
            } catch {
                guard case .fingersTampered = error, finger == nil else { throw BackendFailure(vault: error) }
                current = nil
            }
            if let current {
                if let finger, !current.fingers.contains(finger) { throw BackendFailure(reader: .notEnrolled(finger)) }
                guard !current.prints.isEmpty else { throw BackendFailure(reader: .nothingEnrolled) }
            }
            let remaining = current?.prints.filter { finger != nil && $0.finger != finger } ?? []
            try vaultCall(vault.changeFingers(to: remaining, reader: current?.reader, proof: proof))
            // A match-on-chip reader's own copies: after the change, so a
            // failure here leaves a print no set names (never matched).
            if let current, let open = reader, open.session.reader.storesPrintsOnDevice,
               open.session.reader.identity == current.reader {
                for print in current.prints where !remaining.contains(print) { try? await open.session.deleteFromDevice(print) }
            }
        }
    }

    // MARK: - Matching

    /// Sets how many matching touches of one finger a biometric
    /// authentication takes. Needs the passcode, as an enrolment does: it
    /// changes what a touch opens.
    package func setMatchingTouches(_ touches: MatchingTouches, passcode: SecureBytes) async throws(DeviceError) {
        try await throttled(passcode) { () async throws(DeviceError) in
            try await device { () throws(BackendFailure) in
                try vaultCall(vault.requireWritable())
                let proof = try vaultCall(vault.verifyPasscode(PasscodeAuth(passcode: passcode)))
                try vaultCall(vault.setMatchingTouches(touches, proof: proof))
            }
        }
    }

    // MARK: - Helpers

    /// The reader, opened (claimed) on first use. In the daemon, after
    /// the user's turn at it came (another user's request may have it).
    func openReader() async throws(FingerprintError) -> ReaderSession {
        if let reader { return reader.session }
        var turn: ReaderTurn?
        if let daemon {
            do { turn = try await daemon.takeReaderTurn() } catch { throw .cancelled }
            // Another call of this user's opened it while this one waited.
            if let reader {
                turn?.end()
                return reader.session
            }
        }
        let opened: ReaderConnection
        do {
            opened = try await ReaderConnection.open(readerTarget, user: configuration.user)
        } catch {
            turn?.end()
            throw error
        }
        if let raced = reader {
            // Another call opened it while this one waited.
            await opened.close()
            turn?.end()
            return raced.session
        }
        reader = opened
        readerTurn = turn
        return opened.session
    }
}

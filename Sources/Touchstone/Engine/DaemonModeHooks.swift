import Synchronization
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// What `touchstoned` lends a user's in-process engine (daemon mode only;
/// the server module implements them): the user's passcode throttle and
/// verifier, the user's last right passcode kept warm, and the checker of
/// a client's print bytes.
package struct DaemonModeHooks: Sendable {
    package var throttle: any PasscodeThrottle
    package var warm: any WarmPasscodeKeeping
    /// The reader as the daemon's command line chose it (`sim`, `auto`, an
    /// id), which `status` reports.
    package var readerChoice: String
    /// Waits for the user's turn at the daemon's reader (every user's):
    /// the engine takes it before it opens the reader and ends it when it
    /// closes it. Throws when the call is cancelled while waiting.
    package var takeReaderTurn: @Sendable () async throws(CancellationError) -> ReaderTurn
    /// The longest a whole enrolment may hold the reader, whatever touches
    /// come (each touch is capped by the daemon as well).
    package var longestEnrolment: Duration
    /// Reads an import's prints outside the daemon's process.
    package var printChecker: any PrintChecking

    package init(throttle: any PasscodeThrottle, warm: any WarmPasscodeKeeping, readerChoice: String,
                 longestEnrolment: Duration, printChecker: any PrintChecking,
                 takeReaderTurn: @escaping @Sendable () async throws(CancellationError) -> ReaderTurn) {
        self.throttle = throttle
        self.warm = warm
        self.readerChoice = readerChoice
        self.longestEnrolment = longestEnrolment
        self.printChecker = printChecker
        self.takeReaderTurn = takeReaderTurn
    }
}

/// One request's use of the reader: `end()` gives it to the next (once;
/// later calls do nothing).
package final class ReaderTurn: Sendable {
    private let release: Mutex<(@Sendable () -> Void)?>

    package init(release: @escaping @Sendable () -> Void) { self.release = Mutex(release) }

    package func end() {
        let release = self.release.withLock { value in
            defer { value = nil }
            return value
        }
        release?()
    }

    deinit { end() }
}

/// Reads print bytes a client sent (an import's) with libfprint in a
/// process that holds no gate and no other user's data, so that a print
/// crafted to break libfprint's deserializer breaks only that process
/// (daemon mode; the server module spawns it).
package protocol PrintChecking: Sendable {
    /// libfprint's reading of each of `prints`, in order. Blocks (for at
    /// most the checker's bound); throws when the check could not be made:
    /// the checking process crashed, timed out, or answered what is no
    /// answer.
    func check(_ prints: [[UInt8]]) throws(PrintCheckFailure) -> [PrintReading]
}

/// What libfprint made of one print's bytes.
package enum PrintReading: Sendable, Hashable {
    /// It read them: the print's driver, device id and finger as libfprint
    /// holds them, and libfprint's own serialization of the print it read
    /// (what the daemon stores instead of the client's bytes).
    case read(driver: String, deviceID: String, finger: Finger?, data: [UInt8])
    /// It refused them, and why (libfprint's message).
    case refused(String)
}

/// Why an import's prints could not be checked (the import is refused).
package struct PrintCheckFailure: Error, Sendable, Hashable, CustomStringConvertible {
    package let reason: String

    package init(_ reason: String) { self.reason = reason }

    package var description: String { reason }
}

/// How the daemon's gate admitted one passcode attempt.
package enum PasscodeAdmission: Sendable, Equatable {
    /// The verifier (or the engine's warm passcode) knows it is right;
    /// `clearing`: failures came before it.
    case right(clearing: Bool)
    /// The verifier knows it is wrong: counted already.
    case wrong
    /// No verifier yet (the TPM decides): counted as a failure already,
    /// until the TPM's answer clears it (`recordSuccess`) or the TPM did
    /// not judge it (`refund`).
    case undecided
}

/// One user's passcode throttle and verifier in the daemon: every passcode
/// the user gives is judged here before the TPM sees it, and its outcome
/// recorded before the answer goes back.
package protocol PasscodeThrottle: Sendable {
    /// Throws while throttled (or `.storage` when the count cannot be
    /// read); returns how many failures came before.
    func check() throws(AuthenticationError) -> Int
    /// One attempt as one step: checked, judged, and (wrong or undecided)
    /// a failure written, before it returns. `knownRight`: the engine
    /// knows it right (its warm passcode). `writesNV`: the operation
    /// writes the TPM's NV (its rate limit applies). Throws
    /// `.passcodeThrottled`, or `.storage` when the daemon cannot record
    /// the attempt (the attempt is refused).
    func admit(_ passcode: SecureBytes, knownRight: Bool, writesNV: Bool) throws(AuthenticationError) -> PasscodeAdmission
    /// Takes a slot of the NV-write rate limit (setting a passcode).
    func reserveNVWrite() throws(AuthenticationError)
    /// An undecided attempt the TPM did not judge: its failure given back.
    func refund()
    /// A right passcode: failures cleared, the verifier made from it.
    func recordSuccess(_ passcode: SecureBytes)
    func clearFailures()
    /// The passcode was removed: the verifier and failures go.
    func forget()
}

/// One user's last right passcode, kept warm by the daemon.
package protocol WarmPasscodeKeeping: Sendable {
    /// The secret and record kept for `passcode`, if it is the warm one.
    func opened(for passcode: SecureBytes) -> (secret: SecureBytes, record: [UInt8])?
    func remember(_ passcode: SecureBytes, secret: SecureBytes, record: [UInt8])
    func forget()
}

extension InProcessEngine {
    /// Judges a passcode typed at a prompt (daemon mode), as one step of
    /// the daemon's gate: throws while throttled, when the attempt cannot
    /// be recorded, or when the verifier knows it is wrong (counted before
    /// the answer). Nil in embedded mode.
    func admitTyped(_ passcode: SecureBytes) throws(AuthenticationError) -> PasscodeAdmission? {
        guard let daemon else { return nil }
        // The warm passcode is known right without Argon2id (the engine
        // then opens nothing with it that the TPM did not open for it).
        let warm = daemon.warm.opened(for: passcode) != nil
        let admission = try daemon.throttle.admit(passcode, knownRight: warm, writesNV: false)
        if case .wrong = admission { throw .authenticationFailed }
        return admission
    }

    /// Records what the TPM made of a passcode `admission` let through:
    /// `right` true or false, nil when the TPM did not judge it.
    func settle(_ admission: PasscodeAdmission?, passcode: SecureBytes, right: Bool?) {
        guard let daemon, let admission else { return }
        switch (admission, right) {
        case (.undecided, true?): daemon.throttle.recordSuccess(passcode)
        case (.undecided, false?): break // counted when admitted
        case (.undecided, nil): daemon.throttle.refund()
        case (.right(clearing: true), true?): daemon.throttle.clearFailures()
        case (.right, _), (.wrong, _): break
        }
    }

    /// Runs `body`, an operation that the TPM checks `passcode` for, behind
    /// the daemon's throttle and verifier (daemon mode), admitted as one
    /// step of the gate: refused while throttled or when the attempt cannot
    /// be recorded; a passcode the verifier knows is wrong never reaches the
    /// TPM; one it could not tell is counted until the TPM accepts it.
    /// `writesNV`: the operation writes the TPM's NV (passcode change,
    /// remove), rate-limited per uid.
    func throttled<R>(_ passcode: SecureBytes, writesNV: Bool = false,
                      _ body: () async throws(DeviceError) -> R) async throws(DeviceError) -> R {
        guard let daemon else { return try await body() }
        let admission: PasscodeAdmission
        do {
            admission = try daemon.throttle.admit(passcode, knownRight: false, writesNV: writesNV)
        } catch {
            throw .authentication(error)
        }
        if case .wrong = admission { throw .authentication(.authenticationFailed) }
        do {
            let result = try await body()
            settle(admission, passcode: passcode, right: true)
            return result
        } catch {
            if case .authentication(.authenticationFailed) = error {
                settle(admission, passcode: passcode, right: false)
            } else {
                settle(admission, passcode: passcode, right: nil)
            }
            throw error
        }
    }

    /// Takes a slot of the daemon's NV-write rate limit (daemon mode).
    func reserveNVWrite() throws(DeviceError) {
        guard let daemon else { return }
        do {
            try daemon.throttle.reserveNVWrite()
        } catch {
            throw .authentication(error)
        }
    }
}

extension DeviceError {
    /// What a vault (or its database's) error means as a device error, for
    /// the daemon's own uses of the backends.
    package init(vault error: VaultError) { self.init(BackendFailure(vault: error)) }

    /// What a TPM error means as a device error, for the daemon's own uses
    /// of the backends.
    package init(tpm error: TPMError) { self.init(BackendFailure(tpm: error)) }
}

import TouchstoneFingerprint
import TouchstoneSecure

/// How an authentication talks to the person: the CLI's prompts, an app's
/// UI, or a test's script. The system prompt of iOS, made pluggable.
public protocol AuthenticationInteraction: Sendable {
    /// A touch is awaited: show `reason` and what to do. Return only when
    /// the person asks for the passcode instead (offered when
    /// `passcodeAllowed`); otherwise wait until cancelled (the touch ended).
    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async

    /// Reader events during the touch: retry hints, stage progress.
    func scanEvent(_ event: ScanEvent)

    /// The passcode, as typed (never echoed). Throw
    /// `AuthenticationError.userCancel` to cancel.
    func passcode(reason: String) async throws -> SecureBytes
}

extension AuthenticationInteraction {
    public func scanEvent(_ event: ScanEvent) {}
}

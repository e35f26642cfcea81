/// How an authentication talks to the person: the terminal
/// (`TerminalInteraction`), an app's UI, or a test's script. The system
/// prompt of iOS, made pluggable.
///
/// The methods are `async` and the type `Sendable`, so an implementation
/// may be isolated to its own actor (`@MainActor` for a UI): Touchstone
/// awaits it and never calls it on libfprint's thread. Scan events arrive
/// in order.
public protocol AuthenticationInteraction: Sendable {
    /// A touch is awaited: show `reason` and what to do. Return only when
    /// the person asks for the passcode instead (offered when
    /// `passcodeAllowed`); otherwise wait until cancelled (the touch ended).
    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async

    /// Reader events during the touch: retry hints.
    func scanEvent(_ event: ScanEvent) async

    /// The passcode, as typed (never echoed). Throw `.userCancel` to cancel.
    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes
}

extension AuthenticationInteraction {
    public func scanEvent(_ event: ScanEvent) async {}
}

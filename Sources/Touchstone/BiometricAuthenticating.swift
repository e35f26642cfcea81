/// The seam an app depends on (seeds/002): what the device offers, and an
/// authentication that returns only on success. `AuthenticationContext`
/// conforms; `TouchstoneTestSupport.StubBiometrics` is the test double, so
/// an app's own tests need no hardware. `Keychain` reads take one: a
/// device's own context opens its items; on a test device
/// (`TouchstoneTestSupport`) the stub's answer decides.
public protocol BiometricAuthenticating: Sendable {
    /// What can be used right now, without prompting.
    func availability() async -> Availability
    /// Prompts (finger, or the passcode); returns only on success.
    func authenticate(reason: String) async throws(AuthenticationError)
}

extension AuthenticationContext: BiometricAuthenticating {
    public func availability() async -> Availability { await canEvaluate(.deviceOwnerAuthentication) }
    public func authenticate(reason: String) async throws(AuthenticationError) {
        try await evaluate(.deviceOwnerAuthentication, reason: reason)
    }
}

import Touchstone

/// A stand-in for `AuthenticationContext` in an app's own tests (seeds/002):
/// reports the availability it was given and succeeds or throws the error
/// it was given. No reader, no TPM, no prompt.
public struct StubBiometrics: BiometricAuthenticating {
    // Named `reportedAvailability`: a stored `availability` would collide
    // with the protocol's `availability()` method.
    public var reportedAvailability: Availability
    public var error: AuthenticationError?

    public init(reporting availability: Availability = .available(.fingerprint), error: AuthenticationError? = nil) {
        reportedAvailability = availability
        self.error = error
    }

    public func availability() async -> Availability { reportedAvailability }

    public func authenticate(reason: String) async throws(AuthenticationError) {
        if let error { throw error }
    }
}

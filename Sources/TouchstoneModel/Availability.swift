/// The kind of biometry available.
public enum BiometryType: String, Sendable, Hashable, Codable {
    case none
    case fingerprint
}

/// The policies of LocalAuthentication.
public enum AuthenticationPolicy: Sendable, Hashable, Codable {
    /// A finger only.
    case deviceOwnerAuthenticationWithBiometrics
    /// A finger, or the passcode.
    case deviceOwnerAuthentication
}

/// What can be evaluated right now, found without prompting.
public enum Availability: Sendable, Hashable, Codable {
    case available(BiometryType)
    /// A reader exists, but no finger is enrolled.
    case notEnrolled(BiometryType)
    /// Too many failed matches: only the passcode clears it.
    case lockedOut(BiometryType)
    /// No passcode is set (so no biometry either).
    case passcodeNotSet
    /// Cannot be used, and why (no reader, reader busy, TPM unreachable).
    case unavailable(reason: String)
}

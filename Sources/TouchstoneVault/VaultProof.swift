import TouchstoneTPM
import TouchstoneSecure

/// What the caller proved before asking for a secret.
package struct VaultProof: Sendable {
    /// A finger matched (host-side, by libfprint) in this authentication.
    package var biometricMatch: Bool
    /// The passcode, if the user gave it; the TPM checks it.
    package var passcode: PasscodeAuth?

    /// Class keys already opened while proving (the passcode class key, when
    /// the TPM checked the passcode by opening it): reused instead of asking
    /// the TPM again. Wiped with the proof.
    var openedClassKeys: [Int64: SecureBytes] = [:]

    package init(biometricMatch: Bool = false, passcode: PasscodeAuth? = nil) {
        self.biometricMatch = biometricMatch
        self.passcode = passcode
    }

    /// This proof with a match added (for access controls that need both).
    package func addingBiometricMatch() -> VaultProof {
        var proof = self
        proof.biometricMatch = true
        return proof
    }

    package static let none = VaultProof()
}

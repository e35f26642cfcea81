internal import CSodium
import TouchstoneSecure

/// The condition of the biometric branch: the enrolment-state NV index holds
/// the domain state it held when the key was sealed, and optionally PCR 7
/// (the Secure Boot policy) is unchanged.
package struct BiometricCondition: Equatable, Sendable {
    /// The enrolment-state NV index handle (0x01xxxxxx).
    package var nvIndex: UInt32
    /// The 32-byte domain state the index must hold.
    package var domainState: [UInt8]
    /// Bind PCR 7 as well.
    package var bindPCR7: Bool

    package init(nvIndex: UInt32, domainState: [UInt8], bindPCR7: Bool = false) {
        self.nvIndex = nvIndex
        self.domainState = domainState
        self.bindPCR7 = bindPCR7
    }
}

/// Which ways a sealed key can be opened.
///
/// - both: PolicyOR(A: [PolicyPCR(7)] + PolicyNV(E == state), B: PolicyAuthValue)
/// - biometric only: A
/// - passcode only: B
/// - neither ("device-bound"): PolicyCommandCode(Unseal): any process that
///   can use this TPM opens it; the key never leaves this TPM's protection.
package struct SealPolicy: Equatable, Sendable {
    package var biometric: BiometricCondition?
    package var passcode: Bool

    package init(biometric: BiometricCondition?, passcode: Bool) {
        self.biometric = biometric
        self.passcode = passcode
    }

    package static func biometricOrPasscode(_ condition: BiometricCondition) -> SealPolicy {
        SealPolicy(biometric: condition, passcode: true)
    }
    package static func biometricOnly(_ condition: BiometricCondition) -> SealPolicy {
        SealPolicy(biometric: condition, passcode: false)
    }
    package static let passcodeOnly = SealPolicy(biometric: nil, passcode: true)
    package static let deviceBound = SealPolicy(biometric: nil, passcode: false)
}

/// How to open a sealed key.
package enum UnsealBranch: Sendable {
    /// Branch A: the enrolment state (and PCR 7 if bound) must match.
    case biometric
    /// Branch B: the TPM checks the passcode (PolicyAuthValue, salted session).
    case passcode(PasscodeAuth)
    /// The device-bound form.
    case device
}

/// The TPM authValue derived from a passcode: BLAKE2b-256 of the passcode
/// under a fixed domain-separation key. It is never compared in software;
/// only the TPM checks it, under its dictionary-attack protection, so a fast
/// derivation loses nothing: guessing needs the TPM, which locks out.
package struct PasscodeAuth: Sendable {
    package let value: SecureBytes

    package static let size = 32
    private static let domain = Array("touchstone/passcode-auth/v1".utf8)

    /// Derives the authValue from the passcode's bytes (UTF-8 as typed).
    package init(passcode: SecureBytes) {
        ensureSodium()
        let out = SecureBytes(count: Self.size)
        out.withUnsafeMutableBytes { dst in
            passcode.withUnsafeBytes { src in
                Self.domain.withUnsafeBytes { key in
                    _ = crypto_generichash(dst.baseAddress!.assumingMemoryBound(to: UInt8.self), Self.size,
                                           src.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                           UInt64(src.count),
                                           key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
                }
            }
        }
        value = out
    }

    /// Convenience for tests and callers that hold the passcode as a String.
    /// The String's own storage cannot be wiped; prefer `init(passcode:)`.
    package init(passcodeString: String) {
        var bytes = Array(passcodeString.utf8)
        self.init(passcode: SecureBytes(consuming: &bytes))
    }
}

internal import CSodium
internal import CTSS2
import TouchstoneSecure

/// The condition of the biometric branch, and optionally PCR 7 (the Secure
/// Boot policy) unchanged. Two forms:
///
/// - the first release's: the enrolment-state NV index (32 bytes) holds the
///   domain state it held when the key was sealed (PolicyNV, EQ);
/// - scheme 2's: the enrolment counter, a TPM NV counter, is at most the
///   generation the key was sealed for (PolicyNV, UNSIGNED_LE on its 8
///   bytes): one increment per enrolment change closes every key sealed
///   before it, and a counter never goes back, even deleted and defined
///   again (docs/tpm.md).
package struct BiometricCondition: Equatable, Sendable {
    /// The NV index handle (0x01xxxxxx): the enrolment-state index, or the
    /// enrolment counter.
    package var nvIndex: UInt32
    /// The first release's form: the 32-byte domain state the index must
    /// hold. Empty in scheme 2's.
    package var domainState: [UInt8]
    /// Scheme 2's form: the generation the counter must not exceed.
    package var counterAtMost: UInt64?
    /// Bind PCR 7 as well.
    package var bindPCR7: Bool

    /// The first release's form.
    package init(nvIndex: UInt32, domainState: [UInt8], bindPCR7: Bool = false) {
        self.nvIndex = nvIndex
        self.domainState = domainState
        counterAtMost = nil
        self.bindPCR7 = bindPCR7
    }

    /// Scheme 2's form: counter `index` at most `generation`.
    package init(counter index: UInt32, atMost generation: UInt64, bindPCR7: Bool = false) {
        nvIndex = index
        domainState = []
        counterAtMost = generation
        self.bindPCR7 = bindPCR7
    }

    /// PolicyNV's operandB and operation for this condition.
    var policyNV: (operand: [UInt8], operation: UInt16) {
        if let counterAtMost { return (counterOperand(counterAtMost), UInt16(ts_EO_UNSIGNED_LE)) }
        return (domainState, UInt16(ts_EO_EQ))
    }
}

/// The condition scheme 2 adds to the passcode branch: the passcode
/// counter at most the generation the key was sealed for. A passcode change
/// seals new keys for the next generation, then increments the counter: the
/// keys of the old passcode, and every copy of them, never open again.
package struct CounterCondition: Equatable, Sendable {
    package var nvIndex: UInt32
    package var atMost: UInt64

    package init(counter index: UInt32, atMost generation: UInt64) {
        nvIndex = index
        atMost = generation
    }
}

/// A counter value as PolicyNV compares it: 8 bytes, big-endian.
func counterOperand(_ value: UInt64) -> [UInt8] {
    withUnsafeBytes(of: value.bigEndian) { Array($0) }
}

/// Which ways a sealed key can be opened.
///
/// - both: PolicyOR(A: [PolicyPCR(7)] + PolicyNV(biometric condition),
///   B: PolicyAuthValue [+ PolicyNV(passcode counter)])
/// - biometric only: A
/// - passcode only: B
/// - neither ("device-bound"): PolicyCommandCode(Unseal): any process that
///   can use this TPM opens it; the key never leaves this TPM's protection.
package struct SealPolicy: Equatable, Sendable {
    package var biometric: BiometricCondition?
    package var passcode: Bool
    /// Scheme 2: the passcode branch also needs the passcode counter at
    /// most this (PolicyAuthValue, then PolicyNV).
    package var passcodeCounter: CounterCondition?
    /// Daemon mode: the name of the daemon's gate object, whose
    /// PolicySecret heads every branch (set by `seal` from the TPM's
    /// installed gate).
    package var gateName: [UInt8]?

    package init(biometric: BiometricCondition?, passcode: Bool, passcodeCounter: CounterCondition? = nil) {
        precondition(passcodeCounter == nil || passcode, "a passcode counter needs the passcode branch")
        self.biometric = biometric
        self.passcode = passcode
        self.passcodeCounter = passcodeCounter
    }

    /// Scheme 2's passcode-only key: the passcode, and the passcode counter
    /// at most `generation`.
    package static func passcode(counter: CounterCondition) -> SealPolicy {
        SealPolicy(biometric: nil, passcode: true, passcodeCounter: counter)
    }

    /// Whether any condition is scheme 2's (a counter).
    var usesCounters: Bool { biometric?.counterAtMost != nil || passcodeCounter != nil }

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

    /// An authValue given as is (a key derived elsewhere: the vault's
    /// counters take one derived from its root key).
    package init(authValue: SecureBytes) {
        precondition(authValue.count == Self.size, "an authValue is \(Self.size) bytes")
        value = authValue
    }

    /// Scheme 2's authValue: this one under keyed BLAKE2b-256 with the
    /// vault's random salt (32 bytes), so that one vault's authValue says
    /// nothing about another's, even for the same passcode.
    package func salted(with salt: [UInt8]) -> PasscodeAuth {
        precondition(salt.count == Self.saltSize, "a passcode salt is \(Self.saltSize) bytes")
        ensureSodium()
        var input = Self.saltedDomain
        value.withUnsafeBytes { input.append(contentsOf: $0) }
        defer { secureWipe(&input) }
        let out = SecureBytes(count: Self.size)
        out.withUnsafeMutableBytes { dst in
            _ = crypto_generichash(dst.baseAddress!.assumingMemoryBound(to: UInt8.self), Self.size,
                                   input, UInt64(input.count), salt, salt.count)
        }
        return PasscodeAuth(authValue: out)
    }

    package static let saltSize = 32
    private static let saltedDomain = Array("touchstone/passcode-auth/v2".utf8)

    /// Convenience for tests and callers that hold the passcode as a String.
    /// The String's own storage cannot be wiped; prefer `init(passcode:)`.
    package init(passcodeString: String) {
        var bytes = Array(passcodeString.utf8)
        self.init(passcode: SecureBytes(consuming: &bytes))
    }
}

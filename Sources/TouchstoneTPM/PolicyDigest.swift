internal import CSodium
internal import CTSS2
import TouchstoneSecure

/// TPM policy digests computed in software (TPM 2.0 Part 3, each policy
/// command's "policyDigest update"), SHA-256 only.
///
/// The seal path computes the authPolicy here instead of running a trial
/// session on the TPM; a test checks these against tpm2-tools' trial sessions.
package struct PolicyDigest: Equatable, Sendable, CustomStringConvertible {
    package static let size = 32
    package private(set) var bytes: [UInt8]

    /// The empty policy: 32 zero bytes.
    package init() { bytes = [UInt8](repeating: 0, count: Self.size) }

    package init(bytes: [UInt8]) {
        precondition(bytes.count == Self.size, "a SHA-256 policy digest is 32 bytes")
        self.bytes = bytes
    }

    package var description: String { bytes.map { String(format2: $0) }.joined() }

    static func sha256(_ data: [UInt8]) -> [UInt8] {
        ensureSodium()
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256(&out, data, UInt64(data.count))
        return out
    }

    private mutating func extend(_ commandCode: TPM2_CC, _ rest: [UInt8]) {
        var w = ByteWriter()
        w.raw(bytes)
        w.u32(commandCode)
        w.raw(rest)
        bytes = Self.sha256(w.bytes)
    }

    /// TPM2_PolicySecret with the entity named `authName` and an empty
    /// policyRef: PolicyUpdate extends with the command code and the name,
    /// then hashes again with the policyRef.
    package mutating func policySecret(authName: [UInt8], policyRef: [UInt8] = []) {
        extend(ts_CC_PolicySecret, authName)
        bytes = Self.sha256(bytes + policyRef)
    }

    /// TPM2_PolicyAuthValue.
    package mutating func policyAuthValue() { extend(ts_CC_PolicyAuthValue, []) }

    /// TPM2_PolicyCommandCode(code).
    package mutating func policyCommandCode(_ code: UInt32) {
        var w = ByteWriter(); w.u32(code)
        extend(ts_CC_PolicyCommandCode, w.bytes)
    }

    /// TPM2_PolicyPCR over SHA-256 PCRs `pcrs` whose current values are
    /// `values` (in ascending PCR order).
    package mutating func policyPCR(pcrs: [Int], values: [[UInt8]]) {
        var pcrDigestInput: [UInt8] = []
        for v in values { pcrDigestInput += v }
        extend(ts_CC_PolicyPCR, Self.pcrSelection(pcrs) + Self.sha256(pcrDigestInput))
    }

    /// TPM2_PolicyNV(operandB, offset, operation) against the NV index whose
    /// name (nameAlg || H(public), as after its first write) is `nvName`.
    package mutating func policyNV(operandB: [UInt8], offset: UInt16 = 0, operation: UInt16 = UInt16(ts_EO_EQ),
                                  nvName: [UInt8]) {
        var args = ByteWriter()
        args.raw(operandB); args.u16(offset); args.u16(operation)
        extend(ts_CC_PolicyNV, Self.sha256(args.bytes) + nvName)
    }

    /// TPM2_PolicyOR over `branches` (2 to 8): the digest is reset to zero,
    /// then extended with the concatenated branch digests.
    package static func or(_ branches: [PolicyDigest]) -> PolicyDigest {
        precondition((2...8).contains(branches.count), "PolicyOR takes 2 to 8 branches")
        var d = PolicyDigest()
        d.extend(ts_CC_PolicyOR, branches.flatMap(\.bytes))
        return d
    }

    /// A marshalled TPML_PCR_SELECTION for SHA-256 PCRs `pcrs` (0...23).
    static func pcrSelection(_ pcrs: [Int]) -> [UInt8] {
        var select: [UInt8] = [0, 0, 0]
        for p in pcrs { precondition((0..<24).contains(p)); select[p / 8] |= UInt8(1 << (p % 8)) }
        var w = ByteWriter()
        w.u32(1)                 // count
        w.u16(ts_ALG_SHA256)     // hash
        w.u8(3)                  // sizeofSelect
        w.raw(select)
        return w.bytes
    }
}

extension String {
    /// Two lowercase hex digits.
    init(format2 byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }
}

/// Hex encoding for names and digests in messages and tests.
package func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format2: $0) }.joined() }

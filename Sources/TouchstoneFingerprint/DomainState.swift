internal import CSodium
import TouchstoneSecure

/// The enrolment-set domain state: Touchstone's analogue of
/// `LAContext.evaluatedPolicyDomainState`.
///
/// 32 bytes of BLAKE2b-256 (libsodium `crypto_generichash`) over a
/// length-prefixed encoding of: a version label, the reader identity, the
/// enrolled fingers sorted by fprintd name with their print data, and the
/// 32-byte random epoch drawn anew at every enrolment change. The epoch makes
/// the value fresh after every change, so a finger removed and enrolled again
/// (even with identical data) never brings an old value back.
package enum DomainState {
    /// Bytes in a domain state.
    package static let length = 32
    static let label = Array("touchstone.fingerprint.domain-state.v1".utf8)

    /// Computes the domain state.
    package static func compute(reader: ReaderIdentity, prints: [EnrolledPrint], epoch: SecureBytes) -> SecureBytes {
        precondition(epoch.count == 32, "the epoch is 32 bytes")
        ensureSodium()
        var input: [UInt8] = []
        defer { secureWipe(&input) }
        func field(_ bytes: [UInt8]) {
            withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { input.append(contentsOf: $0) }
            input.append(contentsOf: bytes)
        }
        field(label)
        field(Array(reader.driver.utf8))
        field(Array(reader.deviceID.utf8))
        let sorted = prints.sorted { $0.finger < $1.finger }
        withUnsafeBytes(of: UInt64(sorted.count).littleEndian) { input.append(contentsOf: $0) }
        for print in sorted {
            field(Array(print.finger.fprintdName.utf8))
            field(print.data)
        }
        epoch.withUnsafeBytes { input.append(contentsOf: $0) }
        let out = SecureBytes(count: length)
        out.withUnsafeMutableBytes { digest in
            input.withUnsafeBufferPointer { message in
                _ = crypto_generichash(digest.baseAddress!.assumingMemoryBound(to: UInt8.self), length,
                                       message.baseAddress, UInt64(message.count), nil, 0)
            }
        }
        return out
    }
}

import Foundation
internal import CSodium
import TouchstoneSecure

/// OpenSSH's wire encoding (RFC 4251 section 5): what the agent protocol,
/// public key blobs and signatures are made of.
package enum SSHWire {
    package static func uint32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    package static func string(_ bytes: [UInt8]) -> [UInt8] { uint32(UInt32(bytes.count)) + bytes }

    package static func string(_ text: String) -> [UInt8] { string(Array(text.utf8)) }

    /// A non-negative integer given as big-endian bytes, as an mpint: no
    /// leading zero bytes, one added when the high bit is set.
    package static func mpint(_ magnitude: [UInt8]) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if let first = bytes.first, first & 0x80 != 0 { bytes.insert(0, at: 0) }
        return string(bytes)
    }

    /// Reads the wire format from a message, every length checked.
    package struct Reader {
        private let bytes: [UInt8]
        private var at = 0

        package init(_ bytes: [UInt8]) { self.bytes = bytes }

        package var isAtEnd: Bool { at == bytes.count }

        package mutating func byte() throws(SSHWireError) -> UInt8 {
            guard at < bytes.count else { throw .truncated }
            defer { at += 1 }
            return bytes[at]
        }

        package mutating func uint32() throws(SSHWireError) -> UInt32 {
            guard bytes.count - at >= 4 else { throw .truncated }
            defer { at += 4 }
            return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }

        package mutating func string() throws(SSHWireError) -> [UInt8] {
            let count = Int(try uint32())
            guard bytes.count - at >= count else { throw .truncated }
            defer { at += count }
            return Array(bytes[at..<at + count])
        }
    }

    /// SHA-256 of `bytes` (libsodium's).
    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        ensureSodium()
        crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
        return out
    }
}

package enum SSHWireError: Error, Sendable, Equatable {
    case truncated
}

/// An ECDSA P-256 public key as OpenSSH names it (`ecdsa-sha2-nistp256`).
package struct SSHPublicKey: Sendable, Hashable {
    package static let type = "ecdsa-sha2-nistp256"
    package static let curve = "nistp256"

    /// The uncompressed point: 0x04, X, Y (65 bytes).
    package let point: [UInt8]
    package let comment: String

    package init?(point: [UInt8], comment: String) {
        guard point.count == 65, point[0] == 0x04 else { return nil }
        self.point = point
        self.comment = comment
    }

    /// The key blob: string type, string curve, string point.
    package var blob: [UInt8] { SSHWire.string(Self.type) + SSHWire.string(Self.curve) + SSHWire.string(point) }

    /// The line of an `.pub` file and of `ssh-add -L`.
    package var line: String {
        Self.type + " " + Data(blob).base64EncodedString() + (comment.isEmpty ? "" : " " + comment)
    }

    /// As `ssh-keygen -l` prints it: SHA256: and the unpadded base64 of the
    /// blob's SHA-256.
    package var fingerprint: String {
        "SHA256:" + Data(SSHWire.sha256(blob)).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    /// An ECDSA signature (r, s: big-endian) as the agent returns it.
    package static func signature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        SSHWire.string(type) + SSHWire.string(SSHWire.mpint(r) + SSHWire.mpint(s))
    }
}

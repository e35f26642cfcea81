import Foundation
internal import CSodium
import TouchstoneSecure

/// OpenSSH's signature files (PROTOCOL.sshsig), as `ssh-keygen -Y sign`
/// writes and `ssh-keygen -Y verify` and git read them: the signed data
/// binds a namespace and the SHA-512 of the message; the armored file
/// holds the public key, the namespace and the signature.
package enum SSHSignatureFile {
    static let magic = Array("SSHSIG".utf8)
    static let hashAlgorithm = "sha512"

    /// What the key signs for `message` in `namespace`.
    package static func signedData(message: [UInt8], namespace: String) -> [UInt8] {
        magic + SSHWire.string(namespace) + SSHWire.string("") + SSHWire.string(hashAlgorithm) + SSHWire.string(sha512(message))
    }

    /// The armored signature file.
    package static func armored(publicKey: SSHPublicKey, namespace: String, r: [UInt8], s: [UInt8]) -> String {
        let blob = magic + SSHWire.uint32(1) + SSHWire.string(publicKey.blob) + SSHWire.string(namespace) + SSHWire.string("")
            + SSHWire.string(hashAlgorithm) + SSHWire.string(SSHPublicKey.signature(r: r, s: s))
        let base64 = Data(blob).base64EncodedString()
        var lines: [Substring] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(rest.prefix(70))
            rest = rest.dropFirst(70)
        }
        return "-----BEGIN SSH SIGNATURE-----\n" + lines.joined(separator: "\n") + "\n-----END SSH SIGNATURE-----\n"
    }

    static func sha512(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        ensureSodium()
        crypto_hash_sha512(&out, bytes, UInt64(bytes.count))
        return out
    }
}

internal import COpenSSL

/// WebAuthn's authenticator data (CTAP 2.1, 6.1; WebAuthn 6.1) and the
/// pieces around it that Touchstone's FIDO credentials sign:
/// rpIdHash (32) || flags (1) || signCount (4, big-endian)
/// [|| attested credential data] [|| extensions (a CBOR map)].
package enum AuthenticatorData {
    /// User present.
    package static let userPresent: UInt8 = 0x01
    /// User verified.
    package static let userVerified: UInt8 = 0x04
    /// Attested credential data included.
    package static let attestedCredential: UInt8 = 0x40
    /// Extension data included.
    package static let extensionData: UInt8 = 0x80

    /// Touchstone's AAGUID: the same for every Touchstone authenticator
    /// (it names the model, not the device).
    package static let aaguid: [UInt8] = [0x7f, 0x3c, 0x51, 0x8e, 0x2b, 0x64, 0x4d, 0x0a, 0x9e, 0x21, 0x5c, 0x8b, 0x17, 0xd4, 0x06, 0xe3]

    /// COSE's ES256 algorithm number.
    package static let es256 = -7

    /// The ES256 public key as COSE writes it:
    /// {1 (kty): 2 (EC2), 3 (alg): -7, -1 (crv): 1 (P-256), -2: x, -3: y},
    /// from the uncompressed point (0x04 || x || y); nil for another size.
    package static func coseKey(publicPoint: [UInt8]) -> CBOR? {
        guard publicPoint.count == 65, publicPoint[0] == 0x04 else { return nil }
        return .map([
            .init(.int(1), .int(2)), .init(.int(3), .int(es256)), .init(.int(-1), .int(1)),
            .init(.int(-2), .bytes(Array(publicPoint[1..<33]))), .init(.int(-3), .bytes(Array(publicPoint[33..<65]))),
        ])
    }

    /// AAGUID || credential id length (2, big-endian) || id || COSE key.
    package static func attestedCredentialData(id: [UInt8], publicPoint: [UInt8]) -> [UInt8]? {
        guard id.count <= Int(UInt16.max), let key = coseKey(publicPoint: publicPoint) else { return nil }
        return aaguid + [UInt8(id.count >> 8), UInt8(id.count & 0xff)] + id + key.encoded()
    }

    /// The whole authenticator data.
    package static func encode(rpIDHash: [UInt8], flags: UInt8, signCount: UInt32, attested: [UInt8]?, extensions: [UInt8]?) -> [UInt8] {
        var flags = flags
        if attested != nil { flags |= attestedCredential }
        if extensions != nil { flags |= extensionData }
        return rpIDHash + [flags] + [UInt8(signCount >> 24), UInt8(signCount >> 16 & 0xff), UInt8(signCount >> 8 & 0xff), UInt8(signCount & 0xff)]
            + (attested ?? []) + (extensions ?? [])
    }

    /// SHA-256, by OpenSSL (a relying party id's hash).
    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let done = EVP_Digest(bytes, bytes.count, &out, &size, EVP_sha256(), nil)
        precondition(done == 1 && size == 32, "OpenSSL's SHA-256 failed")
        return out
    }

    /// An ECDSA signature (r, s: big-endian integers) in the DER form
    /// WebAuthn carries (SEQUENCE { INTEGER r, INTEGER s }), by OpenSSL.
    package static func derSignature(r: [UInt8], s: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard let bigR = BN_bin2bn(r, Int32(r.count), nil) else { return nil }
        guard let bigS = BN_bin2bn(s, Int32(s.count), nil) else {
            BN_free(bigR)
            return nil
        }
        guard ECDSA_SIG_set0(signature, bigR, bigS) == 1 else {
            BN_free(bigR)
            BN_free(bigS)
            return nil
        }
        let size = i2d_ECDSA_SIG(signature, nil)
        guard size > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(size))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == size ? out : nil
    }
}

internal import COpenSSL
import TouchstoneSecure

/// PIN/UV auth protocol 2 (CTAP 2.1, 6.5.7), by OpenSSL: the
/// authenticator's key agreement key (P-256, made anew for each process),
/// the shared secret with a platform's key (ECDH, then HKDF-SHA-256 into
/// an HMAC key and an AES key), AES-256-CBC without padding (a random IV
/// before the ciphertext) and HMAC-SHA-256. What hmac-secret (WebAuthn's
/// PRF) encrypts its salts and outputs with.
package enum PinUvAuthProtocolTwo {
    package static let version = 2

    /// The authenticator's key agreement key.
    package final class KeyAgreement: @unchecked Sendable {
        // @unchecked Sendable: the EVP_PKEY is only read after init (OpenSSL
        // allows concurrent derivations from one key).
        private let key: OpaquePointer
        /// 0x04 || x || y.
        package let publicPoint: [UInt8]

        package init() throws(CTAP2.Status) {
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .other }
            defer { EVP_PKEY_CTX_free(context) }
            var made: OpaquePointer?
            guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
                  EVP_PKEY_generate(context, &made) == 1, let made else { throw .other }
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            guard EVP_PKEY_get_octet_string_param(made, "pub", &point, 65, &length) == 1, length == 65, point[0] == 0x04 else {
                EVP_PKEY_free(made)
                throw .other
            }
            key = made
            publicPoint = point
        }

        deinit { EVP_PKEY_free(key) }

        /// The public key as COSE writes it for key agreement:
        /// {1: 2 (EC2), 3: -25 (ECDH-ES+HKDF-256), -1: 1, -2: x, -3: y}.
        package var coseKey: CBOR {
            .map([
                .init(.int(1), .int(2)), .init(.int(3), .int(-25)), .init(.int(-1), .int(1)),
                .init(.int(-2), .bytes(Array(publicPoint[1..<33]))), .init(.int(-3), .bytes(Array(publicPoint[33..<65]))),
            ])
        }

        /// The shared secret with the platform's COSE key: HMAC key (32)
        /// || AES key (32). A key that is not a P-256 point on the curve is
        /// INVALID_PARAMETER.
        package func sharedSecret(platform: CBOR) throws(CTAP2.Status) -> SecureBytes {
            guard platform.mapValue != nil else { throw .cborUnexpectedType }
            guard platform[1] == .int(2), platform[-1] == .int(1), let x = platform[-2]?.bytesValue, let y = platform[-3]?.bytesValue,
                  x.count == 32, y.count == 32 else { throw .invalidParameter }
            let peer = try Self.publicKey([0x04] + x + y)
            defer { EVP_PKEY_free(peer) }
            guard let derivation = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { throw .other }
            defer { EVP_PKEY_CTX_free(derivation) }
            var length = 32
            let z = SecureBytes(count: 32)
            let derived = z.withUnsafeMutableBytes { out in
                EVP_PKEY_derive_init(derivation) == 1 && EVP_PKEY_derive_set_peer(derivation, peer) == 1
                    && EVP_PKEY_derive(derivation, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1
            }
            guard derived, length == 32 else { throw .invalidParameter }
            let hmacKey = try hkdf(z, info: "CTAP2 HMAC key")
            let aesKey = try hkdf(z, info: "CTAP2 AES key")
            return SecureBytes(count: 64) { out in
                hmacKey.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 32) }
                aesKey.withUnsafeBytes { out.baseAddress!.advanced(by: 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
            }
        }

        /// A public key from its uncompressed point (OpenSSL checks it is on the curve).
        private static func publicKey(_ point: [UInt8]) throws(CTAP2.Status) -> OpaquePointer {
            guard let builder = OSSL_PARAM_BLD_new() else { throw .other }
            defer { OSSL_PARAM_BLD_free(builder) }
            guard OSSL_PARAM_BLD_push_utf8_string(builder, name("group"), name("prime256v1"), 0) == 1,
                  OSSL_PARAM_BLD_push_octet_string(builder, name("pub"), point, point.count) == 1,
                  let parameters = OSSL_PARAM_BLD_to_param(builder) else { throw .other }
            defer { OSSL_PARAM_free(parameters) }
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .other }
            defer { EVP_PKEY_CTX_free(context) }
            var key: OpaquePointer?
            // OSSL_KEYMGMT_SELECT_ALL_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY (macros Swift does not import).
            guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &key, 0x84 | 0x02, parameters) == 1, let key else {
                throw .invalidParameter
            }
            return key
        }

        /// HKDF-SHA-256 of `secret`, salt 32 zero bytes, to 32 bytes.
        private func hkdf(_ secret: SecureBytes, info: StaticString) throws(CTAP2.Status) -> SecureBytes {
            guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw .other }
            defer { EVP_KDF_free(kdf) }
            guard let context = EVP_KDF_CTX_new(kdf) else { throw .other }
            defer { EVP_KDF_CTX_free(context) }
            let out = SecureBytes(count: 32)
            var salt = [UInt8](repeating: 0, count: 32)
            let rc = secret.withUnsafeBytes { input in
                out.withUnsafeMutableBytes { derived in
                    salt.withUnsafeMutableBytes { saltBytes in
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(name("digest"), UnsafeMutablePointer(mutating: name("SHA256")), 0),
                            OSSL_PARAM_construct_octet_string(name("key"), UnsafeMutableRawPointer(mutating: input.baseAddress!), input.count),
                            OSSL_PARAM_construct_octet_string(name("salt"), saltBytes.baseAddress!, 32),
                            OSSL_PARAM_construct_octet_string(name("info"), UnsafeMutableRawPointer(mutating: info.utf8Start), info.utf8CodeUnitCount),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_KDF_derive(context, derived.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, &parameters)
                    }
                }
            }
            guard rc == 1 else { throw .other }
            return out
        }
    }

    /// An OSSL_PARAM key or value OpenSSL may keep: a static string's bytes.
    static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// encrypt(shared, plaintext): a random IV || AES-256-CBC (the AES key,
    /// the shared secret's second half; no padding: the plaintext is whole blocks).
    package static func encrypt(_ shared: SecureBytes, _ plaintext: [UInt8]) throws(CTAP2.Status) -> [UInt8] {
        guard shared.count == 64, plaintext.count % 16 == 0 else { throw .invalidLength }
        var iv = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&iv, 16) == 1 else { throw .other }
        return iv + (try cipher(encrypt: true, shared, iv: iv, plaintext))
    }

    /// decrypt(shared, IV || ciphertext); INVALID_LENGTH when it is not whole blocks.
    package static func decrypt(_ shared: SecureBytes, _ message: [UInt8]) throws(CTAP2.Status) -> [UInt8] {
        guard shared.count == 64, message.count >= 32, message.count % 16 == 0 else { throw .invalidLength }
        return try cipher(encrypt: false, shared, iv: Array(message.prefix(16)), Array(message.dropFirst(16)))
    }

    /// authenticate(key, message): HMAC-SHA-256 (all 32 bytes) under the
    /// shared secret's HMAC key (its first 32 bytes), or a token (a whole
    /// 32-byte key: the same first 32 bytes).
    package static func authenticate(_ key: SecureBytes, _ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        key.withUnsafeBytes { bytes in
            _ = HMAC(EVP_sha256(), bytes.baseAddress, 32, message, message.count, &out, &length)
        }
        return out
    }

    /// Whether `tag` is `authenticate(key, message)` (in constant time);
    /// `wholeKey`: `key` is a token, not a shared secret.
    package static func verify(_ key: SecureBytes, _ message: [UInt8], tag: [UInt8], wholeKey: Bool = false) -> Bool {
        guard key.count >= 32, !wholeKey || key.count == 32 else { return false }
        let expected = authenticate(key, message)
        guard tag.count == expected.count else { return false }
        return CRYPTO_memcmp(expected, tag, expected.count) == 0
    }

    private static func cipher(encrypt: Bool, _ shared: SecureBytes, iv: [UInt8], _ input: [UInt8]) throws(CTAP2.Status) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw .other }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        let ok = shared.withUnsafeBytes { key -> Bool in
            let aesKey = key.baseAddress!.advanced(by: 32).assumingMemoryBound(to: UInt8.self)
            let begun = encrypt ? EVP_EncryptInit_ex2(context, EVP_aes_256_cbc(), aesKey, iv, nil)
                                : EVP_DecryptInit_ex2(context, EVP_aes_256_cbc(), aesKey, iv, nil)
            guard begun == 1, EVP_CIPHER_CTX_set_padding(context, 0) == 1 else { return false }
            let updated = encrypt ? EVP_EncryptUpdate(context, &out, &written, input, Int32(input.count))
                                  : EVP_DecryptUpdate(context, &out, &written, input, Int32(input.count))
            return updated == 1
        }
        guard ok, Int(written) == input.count else { throw .other }
        return Array(out.prefix(input.count))
    }
}

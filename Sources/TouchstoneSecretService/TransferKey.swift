internal import COpenSSL
import TouchstoneSecure

/// The Secret Service's encrypted session, `dh-ietf1024-sha256-aes128-cbc-pkcs7`
/// (the Secret Service API, "Transfer of Secrets"): a Diffie-Hellman
/// exchange in the 1024-bit Second Oakley Group (RFC 2409, generator 2),
/// the shared secret (left-padded to 128 bytes) through HKDF-SHA256 with no
/// salt and no info to a 128-bit key, and each secret AES-128-CBC with
/// PKCS7 padding under a fresh random IV, which travels as the secret's
/// parameters. All of it is OpenSSL's (libcrypto 3); nothing is done by
/// hand but the byte layout.
package struct TransferKey: Sendable {
    package static let algorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
    /// The group's size: public keys and the shared secret are this long.
    package static let groupBytes = 128

    /// This side's public key, for the other side (`groupBytes`, big-endian).
    package let publicKey: [UInt8]
    private let key: SecureBytes

    /// What went wrong with a session's input.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// Answers the other side's public key: a key pair of this side's, the
    /// shared secret, the AES key. A public key that is empty, longer than
    /// the group, or not in 2...p-2 is refused.
    package init(peerPublicKey: [UInt8]) throws(Failure) {
        let pair = try KeyPair()
        self = try pair.agree(peerPublicKey: peerPublicKey)
    }

    private init(publicKey: [UInt8], key: SecureBytes) {
        self.publicKey = publicKey
        self.key = key
    }

    /// This side's key pair, made before the other side's public key is
    /// known: a client sends its public key in OpenSession and gets the
    /// provider's in the answer.
    package final class KeyPair: @unchecked Sendable {
        // @unchecked Sendable: the EVP_PKEY is only read after init.
        /// `groupBytes`, big-endian.
        package let publicKey: [UInt8]
        private let pair: OpaquePointer

        package init() throws(Failure) {
            var ours: [UInt8] = []
            pair = try TransferKey.generate(publicKey: &ours)
            publicKey = ours
        }

        deinit { EVP_PKEY_free(pair) }

        /// The session's key, with the other side's public key (empty,
        /// longer than the group, or not in 2...p-2: refused).
        package func agree(peerPublicKey: [UInt8]) throws(Failure) -> TransferKey {
            guard !peerPublicKey.isEmpty, peerPublicKey.count <= TransferKey.groupBytes else {
                throw Failure("a public key of \(peerPublicKey.count) bytes (at most \(TransferKey.groupBytes))")
            }
            let secret = try TransferKey.derive(pair, peer: peerPublicKey)
            return TransferKey(publicKey: publicKey, key: try TransferKey.hkdf(secret))
        }
    }

    /// `secret` encrypted: the IV (the Secret struct's parameters) and the
    /// ciphertext (its value).
    package func encrypt(_ secret: SecureBytes) throws(Failure) -> (iv: [UInt8], ciphertext: [UInt8]) {
        var iv = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&iv, 16) == 1 else { throw Failure("no random bytes for the IV") }
        let ciphertext = try secret.withUnsafeBytes { plain in
            Result { () throws(Failure) in try Self.cipher(encrypt: true, key: key, iv: iv, plain) }
        }.get()
        return (iv, ciphertext.withUnsafeBytes { Array($0) })
    }

    /// The secret in `ciphertext` (with its `iv`); a wrong IV length, a
    /// length that is not whole blocks or a bad padding is refused.
    package func decrypt(iv: [UInt8], ciphertext: [UInt8]) throws(Failure) -> SecureBytes {
        guard iv.count == 16 else { throw Failure("an IV of \(iv.count) bytes (16)") }
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else {
            throw Failure("a ciphertext of \(ciphertext.count) bytes (whole 16-byte blocks)")
        }
        return try ciphertext.withUnsafeBytes { raw in
            Result { () throws(Failure) in try Self.cipher(encrypt: false, key: key, iv: iv, raw) }
        }.get()
    }

    // MARK: - OpenSSL

    /// OpenSSL's reason for the last failure (its error queue emptied).
    private static func openSSLReason() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        let message = text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return " (" + String(decoding: message, as: UTF8.self) + ")"
    }

    /// An OSSL_PARAM key: OpenSSL keeps the pointer (OSSL_PARAM_BLD until
    /// it builds, an OSSL_PARAM for its life), so it must outlive the call:
    /// a static string's bytes, never a temporary bridged String.
    private static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// EVP_PKEY_fromdata's selections (macros Swift does not import):
    /// OSSL_KEYMGMT_SELECT_ALL_PARAMETERS, and with the public key.
    private static let selectParameters: Int32 = 0x04 | 0x80
    private static let selectPublicKey: Int32 = 0x04 | 0x80 | 0x02

    /// The group's parameters, with `publicKey` when given, as a DH key.
    private static func dhKey(publicKey: [UInt8]?) throws(Failure) -> OpaquePointer {
        guard let prime = BN_get_rfc2409_prime_1024(nil), let generator = BN_new() else { throw Failure("out of memory") }
        // The group: the prime of RFC 2409's Second Oakley Group, generator 2.
        defer { BN_free(prime); BN_free(generator) }
        BN_set_word(generator, 2)
        var peer: OpaquePointer?
        defer { if let peer { BN_free(peer) } }
        if let publicKey {
            peer = publicKey.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
            // 2 <= y <= p - 2: not 0, 1 or p - 1, which would give a shared
            // secret anyone knows.
            guard let peer, let top = BN_dup(prime) else { throw Failure("out of memory") }
            defer { BN_free(top) }
            BN_sub_word(top, 1)
            guard BN_cmp(peer, BN_value_one()) > 0, BN_cmp(peer, top) < 0 else {
                throw Failure("a public key outside the group (it must be 2 to p-2)")
            }
        }
        guard let builder = OSSL_PARAM_BLD_new() else { throw Failure("out of memory") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard OSSL_PARAM_BLD_push_BN(builder, name("p"), prime) == 1, OSSL_PARAM_BLD_push_BN(builder, name("g"), generator) == 1,
              peer.map({ OSSL_PARAM_BLD_push_BN(builder, name("pub"), $0) == 1 }) ?? true,
              let parameters = OSSL_PARAM_BLD_to_param(builder) else { throw Failure("cannot build the DH parameters") }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "DH", nil) else { throw Failure("OpenSSL has no DH") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
              EVP_PKEY_fromdata(context, &key, publicKey == nil ? selectParameters : selectPublicKey, parameters) == 1,
              let key else { throw Failure("cannot make a DH key of the group" + openSSLReason()) }
        return key
    }

    /// A key pair of the group (the caller frees it); its public half into `publicKey`.
    private static func generate(publicKey: inout [UInt8]) throws(Failure) -> OpaquePointer {
        let domain = try dhKey(publicKey: nil)
        defer { EVP_PKEY_free(domain) }
        guard let generation = EVP_PKEY_CTX_new_from_pkey(nil, domain, nil) else { throw Failure("out of memory") }
        defer { EVP_PKEY_CTX_free(generation) }
        var made: OpaquePointer?
        guard EVP_PKEY_keygen_init(generation) == 1, EVP_PKEY_generate(generation, &made) == 1, let ours = made else {
            throw Failure("cannot generate a DH key pair" + openSSLReason())
        }
        var exported: OpaquePointer?
        guard EVP_PKEY_get_bn_param(ours, name("pub"), &exported) == 1, let exported else {
            EVP_PKEY_free(ours)
            throw Failure("no public key")
        }
        defer { BN_free(exported) }
        publicKey = [UInt8](repeating: 0, count: groupBytes)
        guard BN_bn2binpad(exported, &publicKey, Int32(groupBytes)) == Int32(groupBytes) else {
            EVP_PKEY_free(ours)
            throw Failure("a public key too long")
        }
        return ours
    }

    /// The shared secret of `ours` with `peer`, left-padded to the group's size.
    private static func derive(_ ours: OpaquePointer, peer: [UInt8]) throws(Failure) -> SecureBytes {
        let peerKey = try dhKey(publicKey: peer)
        defer { EVP_PKEY_free(peerKey) }

        guard let derivation = EVP_PKEY_CTX_new_from_pkey(nil, ours, nil) else { throw Failure("out of memory") }
        defer { EVP_PKEY_CTX_free(derivation) }
        var length = 0
        guard EVP_PKEY_derive_init(derivation) == 1, EVP_PKEY_derive_set_peer(derivation, peerKey) == 1,
              EVP_PKEY_derive(derivation, nil, &length) == 1, length > 0, length <= groupBytes else {
            throw Failure("the DH exchange failed (a public key the group refuses)" + openSSLReason())
        }
        let raw = SecureBytes(count: length)
        var written = length
        let derived = raw.withUnsafeMutableBytes { out in
            EVP_PKEY_derive(derivation, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written)
        }
        guard derived == 1, written <= groupBytes else { throw Failure("the DH exchange failed") }
        // Left-padded to the group's size, as libsecret and gnome-keyring take it.
        return SecureBytes(count: groupBytes) { out in
            raw.withUnsafeBytes { bytes in
                out.baseAddress!.advanced(by: groupBytes - written).copyMemory(from: bytes.baseAddress!, byteCount: written)
            }
        }
    }

    /// HKDF-SHA256 of `secret`, no salt, no info, to 16 bytes.
    private static func hkdf(_ secret: SecureBytes) throws(Failure) -> SecureBytes {
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw Failure("OpenSSL has no HKDF") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw Failure("out of memory") }
        defer { EVP_KDF_CTX_free(context) }
        let out = SecureBytes(count: 16)
        let rc = secret.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { key in
                "SHA256".withCString { digest in
                    var parameters = [
                        OSSL_PARAM_construct_utf8_string(name("digest"), UnsafeMutablePointer(mutating: digest), 0),
                        OSSL_PARAM_construct_octet_string(name("key"), UnsafeMutableRawPointer(mutating: input.baseAddress!), input.count),
                        OSSL_PARAM_construct_end(),
                    ]
                    return EVP_KDF_derive(context, key.baseAddress!.assumingMemoryBound(to: UInt8.self), 16, &parameters)
                }
            }
        }
        guard rc == 1 else { throw Failure("HKDF failed") }
        return out
    }

    /// AES-128-CBC with PKCS7 padding, either way.
    private static func cipher(encrypt: Bool, key: SecureBytes, iv: [UInt8], _ input: UnsafeRawBufferPointer) throws(Failure) -> SecureBytes {
        guard let context = EVP_CIPHER_CTX_new() else { throw Failure("out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        let buffer = SecureBytes(count: input.count + 16)
        var total: Int32 = 0
        let ok = key.withUnsafeBytes { k in
            buffer.withUnsafeMutableBytes { out -> Bool in
                let keyBytes = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let begun = iv.withUnsafeBufferPointer { vector in
                    encrypt ? EVP_EncryptInit_ex2(context, EVP_aes_128_cbc(), keyBytes, vector.baseAddress, nil)
                            : EVP_DecryptInit_ex2(context, EVP_aes_128_cbc(), keyBytes, vector.baseAddress, nil)
                }
                guard begun == 1 else { return false }
                let target = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
                var written: Int32 = 0
                let source = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
                let updated = encrypt ? EVP_EncryptUpdate(context, target, &written, source, Int32(input.count))
                                      : EVP_DecryptUpdate(context, target, &written, source, Int32(input.count))
                guard updated == 1 else { return false }
                var last: Int32 = 0
                let finished = encrypt ? EVP_EncryptFinal_ex(context, target.advanced(by: Int(written)), &last)
                                       : EVP_DecryptFinal_ex(context, target.advanced(by: Int(written)), &last)
                total = written + last
                return finished == 1
            }
        }
        guard ok else { throw Failure(encrypt ? "AES encryption failed" : "the secret does not decrypt (a wrong key, or bad padding)") }
        return SecureBytes(count: Int(total)) { out in
            buffer.withUnsafeBytes { all in
                if total > 0 { out.baseAddress!.copyMemory(from: all.baseAddress!, byteCount: Int(total)) }
            }
        }
    }
}

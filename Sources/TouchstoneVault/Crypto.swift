internal import CSodium
import Glibc
import TouchstoneSecure

/// The vault's symmetric cryptography, all from libsodium:
/// XChaCha20-Poly1305 (IETF) on raw keys (the rows' other cipher,
/// AES-256-GCM, is in RecordCipher.swift), keyed BLAKE2b for lookup hashes
/// and subkeys.
enum Crypto {
    static let keySize = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagSize = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// nonce || ciphertext || tag of `plaintext` under `key`, bound to `ad`.
    static func seal(_ plaintext: UnsafeRawBufferPointer, key: SecureBytes, ad: [UInt8]) -> [UInt8] {
        ensureSodium()
        precondition(key.count == keySize)
        var out = [UInt8](repeating: 0, count: nonceSize + plaintext.count + tagSize)
        out.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            randombytes_buf(base, nonceSize)
            var written: UInt64 = 0
            key.withUnsafeBytes { k in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    base + nonceSize, &written,
                    plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                    ad, UInt64(ad.count), nil, base, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return out
    }

    static func seal(_ plaintext: SecureBytes, key: SecureBytes, ad: [UInt8]) -> [UInt8] {
        plaintext.withUnsafeBytes { seal($0, key: key, ad: ad) }
    }

    static func seal(_ plaintext: [UInt8], key: SecureBytes, ad: [UInt8]) -> [UInt8] {
        plaintext.withUnsafeBytes { seal($0, key: key, ad: ad) }
    }

    /// Keyed BLAKE2b-256 of `parts`, each length-prefixed (so no two
    /// different lists of parts hash alike).
    static func keyedHash(_ key: SecureBytes, _ parts: [[UInt8]]) -> [UInt8] {
        ensureSodium()
        var input: [UInt8] = []
        for part in parts {
            withUnsafeBytes(of: UInt32(part.count).bigEndian) { input += $0 }
            input += part
        }
        defer { secureWipe(&input) }
        var out = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBytes { k in
            _ = crypto_generichash(&out, 32, input, UInt64(input.count), k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
        return out
    }

    /// `keyedHash(key, [Array(first.utf8), Array(second.utf8)])`, the same
    /// hash, without building arrays (a lookup hash is computed on every
    /// read).
    static func keyedHash(_ key: SecureBytes, _ first: String, _ second: String) -> [UInt8] {
        ensureSodium()
        var first = first, second = second
        return first.withUTF8 { a in
            second.withUTF8 { b in
                // The length-prefixed input in a temporary buffer (on the
                // stack when short), wiped after: it names an item.
                let count = 8 + a.count + b.count
                return withUnsafeTemporaryAllocation(byteCount: count, alignment: 4) { input in
                    defer { sodium_memzero(input.baseAddress, count) }
                    var offset = 0
                    func put(_ part: UnsafeBufferPointer<UInt8>) {
                        input.storeBytes(of: UInt32(part.count).bigEndian, toByteOffset: offset, as: UInt32.self)
                        if let base = part.baseAddress { (input.baseAddress! + offset + 4).copyMemory(from: base, byteCount: part.count) }
                        offset += 4 + part.count
                    }
                    put(a)
                    put(b)
                    var out = [UInt8](repeating: 0, count: 32)
                    key.withUnsafeBytes { k in
                        _ = crypto_generichash(&out, 32, input.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(count),
                                               k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                    }
                    return out
                }
            }
        }
    }

    /// Whether two strings hold the same UTF-8 bytes (not String's ==,
    /// which equates canonically equivalent strings that hash differently).
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0) } }
    }

    /// Whether `raw` holds exactly the UTF-8 bytes of `text`.
    static func sameBytes(_ raw: UnsafeRawBufferPointer, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { t in t.count == raw.count && (t.isEmpty || memcmp(t.baseAddress!, raw.baseAddress!, t.count) == 0) }
    }

    /// A 32-byte subkey of `key` for `purpose` (keyed BLAKE2b; purposes are
    /// distinct constant labels).
    static func subkey(_ key: SecureBytes, _ purpose: String) -> SecureBytes {
        var derived = keyedHash(key, [Array("touchstone/subkey/v1".utf8), Array(purpose.utf8)])
        return SecureBytes(consuming: &derived)
    }

    /// A key from several keys, all needed (for access control joined by &).
    static func combine(_ keys: [SecureBytes]) -> SecureBytes {
        precondition(!keys.isEmpty)
        if keys.count == 1 { return keys[0] }
        let joined = keys.dropFirst().reduce(keys[0]) { $0.appending($1) }
        var out = [UInt8](repeating: 0, count: 32)
        joined.withUnsafeBytes { j in
            _ = crypto_generichash(&out, 32, j.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(j.count),
                                   Array("touchstone/and/v1".utf8), 17)
        }
        return SecureBytes(consuming: &out)
    }
}

extension Crypto {
    static let publicKeySize = Int(crypto_box_PUBLICKEYBYTES)
    static let sealSize = Int(crypto_box_sealbytes())

    /// A new X25519 key pair (public, secret).
    static func keyPair() -> ([UInt8], SecureBytes) {
        ensureSodium()
        var pk = [UInt8](repeating: 0, count: publicKeySize)
        let sk = SecureBytes(count: Int(crypto_box_SECRETKEYBYTES))
        sk.withUnsafeMutableBytes { _ = crypto_box_keypair(&pk, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return (pk, sk)
    }

    /// The public key of a secret key.
    static func publicKey(of sk: SecureBytes) -> [UInt8] {
        var pk = [UInt8](repeating: 0, count: publicKeySize)
        sk.withUnsafeBytes { _ = crypto_scalarmult_base(&pk, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return pk
    }

    /// An anonymous sealed box of `message` to `publicKey`: anyone can make
    /// one, only the secret key's holder opens it (libsodium crypto_box_seal).
    static func sealBox(_ message: UnsafeRawBufferPointer, to publicKey: [UInt8]) -> [UInt8] {
        ensureSodium()
        var out = [UInt8](repeating: 0, count: message.count + sealSize)
        _ = crypto_box_seal(&out, message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count), publicKey)
        return out
    }

    /// Opens a sealed box; nil if it was altered or is for another key.
    static func openBox(_ box: [UInt8], publicKey: [UInt8], secretKey: SecureBytes) -> SecureBytes? {
        ensureSodium()
        guard box.count > sealSize, publicKey.count == publicKeySize else { return nil }
        let out = SecureBytes(count: box.count - sealSize)
        let ok = out.withUnsafeMutableBytes { o in
            secretKey.withUnsafeBytes { s in
                crypto_box_seal_open(o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                     box, UInt64(box.count), publicKey,
                                     s.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
            }
        }
        return ok ? out : nil
    }
}

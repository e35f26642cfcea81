internal import CSodium
import TouchstoneSecure

/// The AEAD of an item row's symmetric boxes: its attributes, its secret
/// and, for access `none`, its wrapped item key. Each row names its cipher
/// (the `cipher` column, schema 3); a row keeps it for life, so one vault
/// can hold rows of both. Both come from libsodium; boxes are
/// nonce || ciphertext || tag, with a random nonce.
enum RecordCipher: Int64, Sendable, CaseIterable, CustomStringConvertible {
    /// XChaCha20-Poly1305 (IETF), 24-byte nonces: every row written before
    /// schema 3, and new rows on a CPU without AES-NI.
    case xchacha20poly1305 = 1
    /// AES-256-GCM, 12-byte nonces: new rows where the CPU has AES-NI and
    /// PCLMULQDQ (libsodium's only AES-GCM). About three times faster than
    /// XChaCha20-Poly1305 for an item's short records on such a CPU.
    case aes256gcm = 2

    static let aesAvailable: Bool = {
        ensureSodium()
        return crypto_aead_aes256gcm_is_available() == 1
    }()

    /// What new rows are written with.
    static var preferred: RecordCipher { aesAvailable ? .aes256gcm : .xchacha20poly1305 }

    var isAvailable: Bool { self == .xchacha20poly1305 || Self.aesAvailable }

    var nonceSize: Int {
        switch self {
        case .xchacha20poly1305: return Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
        case .aes256gcm: return Int(crypto_aead_aes256gcm_NPUBBYTES)
        }
    }

    var description: String {
        switch self {
        case .xchacha20poly1305: return "XChaCha20-Poly1305"
        case .aes256gcm: return "AES-256-GCM"
        }
    }

    /// The error for a row whose cipher this CPU cannot run (a vault moved
    /// to a machine without AES-NI; its TPM would not open it anyway).
    var unavailable: VaultError {
        .storage(StorageFailure(.database, "an item was stored with \(self), which this CPU does not provide (it needs AES-NI); open the vault on the machine that wrote it"))
    }
}

/// A 32-byte key made ready for one cipher. For AES-256-GCM that is
/// libsodium's expanded state (key schedule and hash powers), computed
/// once: 512 bytes in locked memory, wiped on release like the key.
struct AEADKey: @unchecked Sendable {
    // @unchecked Sendable: `material` is never written after init.
    let cipher: RecordCipher
    /// The key, or for AES-256-GCM the state holding its schedule (which
    /// begins with the key). Read outside this type only by the
    /// memory-scan tests, to tell the vault's own buffers.
    let material: SecureBytes

    /// Nil when this CPU cannot run `cipher`.
    init?(_ key: SecureBytes, cipher: RecordCipher) {
        precondition(key.count == Crypto.keySize)
        guard cipher.isAvailable else { return nil }
        self.cipher = cipher
        switch cipher {
        case .xchacha20poly1305:
            material = key
        case .aes256gcm:
            let state = SecureBytes(count: crypto_aead_aes256gcm_statebytes())
            state.withUnsafeMutableBytes { s in
                // libsodium needs the state 16-byte aligned; slab slots are.
                precondition(UInt(bitPattern: s.baseAddress!) % 16 == 0)
                key.withUnsafeBytes { k in
                    _ = crypto_aead_aes256gcm_beforenm(s.baseAddress!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self), k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            material = state
        }
    }

    /// nonce || ciphertext || tag of `plaintext`, bound to `ad`.
    func seal(_ plaintext: UnsafeRawBufferPointer, ad: [UInt8]) -> [UInt8] {
        if cipher == .xchacha20poly1305 { return Crypto.seal(plaintext, key: material, ad: ad) }
        let n = cipher.nonceSize
        var out = [UInt8](repeating: 0, count: n + plaintext.count + Crypto.tagSize)
        out.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            randombytes_buf(base, n)
            material.withUnsafeBytes { s in
                _ = crypto_aead_aes256gcm_encrypt_afternm(
                    base + n, nil, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                    ad, UInt64(ad.count), nil, base, s.baseAddress!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self))
            }
        }
        return out
    }

    func seal(_ plaintext: SecureBytes, ad: [UInt8]) -> [UInt8] { plaintext.withUnsafeBytes { seal($0, ad: ad) } }
    func seal(_ plaintext: [UInt8], ad: [UInt8]) -> [UInt8] { plaintext.withUnsafeBytes { seal($0, ad: ad) } }

    /// The plaintext's size in `box`, nil when the box is too short.
    private func plaintextCount(_ box: UnsafeBufferPointer<UInt8>) -> Int? {
        let count = box.count - cipher.nonceSize - Crypto.tagSize
        return count >= 0 ? count : nil
    }

    /// Decrypts `box` into `out` (the plaintext's size); false when the box
    /// was altered, truncated, or made with another key or `ad`.
    private func decrypt(_ box: UnsafeBufferPointer<UInt8>, ad: [UInt8], into out: UnsafeMutableRawBufferPointer) -> Bool {
        let n = cipher.nonceSize
        let o = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
        return material.withUnsafeBytes { k in
            switch cipher {
            case .xchacha20poly1305:
                return crypto_aead_xchacha20poly1305_ietf_decrypt(
                    o, nil, nil, box.baseAddress! + n, UInt64(box.count - n), ad, UInt64(ad.count),
                    box.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
            case .aes256gcm:
                return crypto_aead_aes256gcm_decrypt_afternm(
                    o, nil, nil, box.baseAddress! + n, UInt64(box.count - n), ad, UInt64(ad.count),
                    box.baseAddress!, k.baseAddress!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self)) == 0
            }
        }
    }

    /// The plaintext in locked memory, or nil when the box does not open.
    func open(_ box: UnsafeBufferPointer<UInt8>, ad: [UInt8]) -> SecureBytes? {
        guard let count = plaintextCount(box) else { return nil }
        let out = SecureBytes(count: count)
        return out.withUnsafeMutableBytes { decrypt(box, ad: ad, into: $0) } ? out : nil
    }

    func open(_ box: [UInt8], ad: [UInt8]) -> SecureBytes? {
        box.withUnsafeBufferPointer { open($0, ad: ad) }
    }

    /// Opens `box` into a temporary buffer, passes the plaintext to `body`
    /// and wipes the buffer; nil (and `body` not called) when the box does
    /// not open. For plaintext that is not key material and is used only
    /// briefly (an item's attributes on a read): no locked page is taken.
    func open<R, E: Error>(_ box: UnsafeBufferPointer<UInt8>, ad: [UInt8],
                           _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R? {
        guard let count = plaintextCount(box) else { return nil }
        // The outcome leaves the allocation's (untyped) closure as a Result.
        let outcome: Result<R, E>? = withUnsafeTemporaryAllocation(byteCount: max(count, 1), alignment: 16) { out in
            defer { sodium_memzero(out.baseAddress, out.count) }
            let plain = UnsafeMutableRawBufferPointer(rebasing: out[0..<count])
            guard decrypt(box, ad: ad, into: plain) else { return nil }
            return Result { () throws(E) in try body(UnsafeRawBufferPointer(plain)) }
        }
        return try outcome?.get()
    }

    func open<R, E: Error>(_ box: [UInt8], ad: [UInt8], _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R? {
        try box.withUnsafeBufferPointer { pointer in Result { () throws(E) in try open(pointer, ad: ad, body) } }.get()
    }
}

/// A long-lived key of the vault (the metadata key, the device wrap key)
/// for each record cipher. The AES-256-GCM key is its own subkey of the
/// root key: no key is used with two ciphers.
struct CipherKeys: Sendable {
    let xchacha: AEADKey
    let aes: AEADKey?

    /// `xchacha`: the key rows have used since the first release, the
    /// root key's subkey for `purpose`; the AES key is the subkey for
    /// `purpose`/aes-256-gcm.
    init(root: SecureBytes, purpose: String, xchacha key: SecureBytes) {
        xchacha = AEADKey(key, cipher: .xchacha20poly1305)!
        aes = RecordCipher.aesAvailable ? AEADKey(Crypto.subkey(root, Self.aesPurpose(purpose)), cipher: .aes256gcm) : nil
    }

    static func aesPurpose(_ purpose: String) -> String { purpose + "/aes-256-gcm" }

    func key(_ cipher: RecordCipher) throws(VaultError) -> AEADKey {
        switch cipher {
        case .xchacha20poly1305: return xchacha
        case .aes256gcm:
            guard let aes else { throw cipher.unavailable }
            return aes
        }
    }
}

import TouchstoneSecure

/// An item's record (docs/vault.md), one `items` row per item:
/// - `lookup`: keyed BLAKE2b of (service, account) under the lookup key;
/// - `metadata`: AEAD of the attributes (AttributeCodec) under the metadata
///   key; the lookup is recomputed from them and must match;
/// - `secret`: AEAD of the secret under the item key (for access `none`,
///   under the device key), with the item's lookup and access control as
///   associated data;
/// - `keys`: the ways in, with the item key wrapped once per way (WrapCodec):
///   sealed boxes to class keys (nested for "and"), so adding needs no
///   authentication and opening needs the class key that the TPM releases
///   only under its policy. Access `none` has one way in, the device key,
///   with no wrapped key (rows before schema 3: the item key, AEAD under the
///   device key);
/// - `cipher`: the AEAD of the three (RecordCipher): AES-256-GCM or
///   XChaCha20-Poly1305.
extension Vault {
    func lookupHash(service: String, account: String) -> [UInt8] {
        Crypto.keyedHash(lookupKey, service, account)
    }

    private static let secretADLabel = Array("touchstone/item-secret/v1".utf8)
    private static let deviceWrapADLabel = Array("touchstone/device-wrap/v1".utf8)

    static func secretAD(lookup: [UInt8], access: AccessControl) -> [UInt8] {
        var ad = secretADLabel
        ad.reserveCapacity(ad.count + lookup.count + 64)
        ad += lookup
        ad += access.description.utf8
        return ad
    }

    static let metadataAD = Array("touchstone/item-metadata/v1".utf8)

    static func deviceWrapAD(lookup: [UInt8]) -> [UInt8] {
        deviceWrapADLabel + lookup
    }

    struct Wrap {
        let alternative: Int
        let classKeyIDs: [Int64]
        let wrapped: [UInt8]
    }

    struct StoredItem {
        let id: Int64
        let lookup: [UInt8]
        let metadata: [UInt8]
        let secret: [UInt8]
        /// The wrapped item keys (WrapCodec).
        let keys: [UInt8]
        /// RecordCipher's raw value, as stored.
        let cipher: Int64
    }

    /// The row's record cipher; an unknown one is damage.
    static func cipher(of item: StoredItem) throws(VaultError) -> RecordCipher {
        guard let cipher = RecordCipher(rawValue: item.cipher) else {
            throw VaultError.corrupted("an item's record names an unknown cipher (\(item.cipher))")
        }
        return cipher
    }

    static let itemColumns = "id, lookup, metadata, secret, keys, cipher"

    static func storedItem(_ row: SQLRow) -> StoredItem {
        StoredItem(id: row.integer(0), lookup: row.blob(1), metadata: row.blob(2), secret: row.blob(3), keys: row.blob(4),
                   cipher: row.integer(5))
    }

    static let damagedWrap = VaultError.corrupted("an item's wrapped keys are damaged")

    /// The item's wrapped keys, one per way in.
    func wraps(of item: StoredItem) throws(VaultError) -> [Wrap] {
        guard let wraps = WrapCodec.decode(item.keys) else { throw Self.damagedWrap }
        return wraps
    }

    func sealMetadata(_ attributes: ItemAttributes, _ cipher: RecordCipher) throws(VaultError) -> [UInt8] {
        var plain = AttributeCodec.encode(attributes)
        defer { secureWipe(&plain) }
        return try metadataKeys.key(cipher).seal(plain, ad: Self.metadataAD)
    }

    /// The item's attributes, checked against its lookup hash. `expected`:
    /// the (service, account) whose hash found the row; when the attributes
    /// name exactly these, the row's lookup is their hash already (it was
    /// found by it), and the hash is not computed again.
    func openMetadata(_ item: StoredItem, expected: (service: String, account: String)? = nil) throws(VaultError) -> ItemAttributes {
        guard let plain = try metadataKeys.key(Self.cipher(of: item)).open(item.metadata, ad: Self.metadataAD) else {
            throw VaultError.corrupted("an item's attributes do not decrypt")
        }
        let attributes = try plain.withUnsafeBytes { bytes in Result { () throws(VaultError) in try Self.decodeAttributes(bytes) } }.get()
        // Bytes, not String ==: canonically equivalent strings hash differently.
        if let expected, Crypto.sameBytes(attributes.service, expected.service),
           Crypto.sameBytes(attributes.account, expected.account) {
            return attributes
        }
        guard lookupHash(service: attributes.service, account: attributes.account) == item.lookup else {
            throw VaultError.corrupted("the item \(attributes.service)/\(attributes.account) does not match its lookup hash")
        }
        return attributes
    }
}

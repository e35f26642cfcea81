import TouchstoneSecure

/// Item keys: each wrapped once per way into the item (WrapCodec), and
/// opened again through a way that a proof satisfies.
extension Vault {
    /// `key` ready for the row cipher `cipher`.
    static func itemAEAD(_ key: SecureBytes, _ cipher: RecordCipher) throws(VaultError) -> AEADKey {
        guard let aead = AEADKey(key, cipher: cipher) else { throw cipher.unavailable }
        return aead
    }

    /// The item key wrapped once per alternative of `access`: sealed boxes
    /// to the alternative's class keys (nested for "and"), so adding needs no
    /// authentication.
    func wrap(_ itemKey: SecureBytes, for access: AccessControl) throws(VaultError) -> [Wrap] {
        var wraps: [Wrap] = []
        for (n, alternative) in access.alternatives.enumerated() {
            let keys: [(Int64, [UInt8])] = try alternative.map { flag throws(VaultError) in let k = try activeClassKey(for: flag); return (k.id, k.publicKey) }
            // The first box is the item key itself: wiped once sealed. The
            // array is the only reference to its storage when it is wiped
            // (a copy would make the wipe land on a copy).
            var box = itemKey.withUnsafeBytes { Array($0) }
            for (_, publicKey) in keys {
                let sealed = box.withUnsafeBytes { Crypto.sealBox($0, to: publicKey) }
                secureWipe(&box)
                box = sealed
            }
            wraps.append(Wrap(alternative: n, classKeyIDs: keys.map(\.0), wrapped: box))
        }
        return wraps
    }

    /// Whether an item's ways in fit its access control: one per
    /// alternative, and the device key is the one way into an access-`none`
    /// item and no way into any other.
    static func ways(_ wraps: [Wrap], match access: AccessControl) -> Bool {
        wraps.count == access.alternativeCount
            && wraps.allSatisfy { ($0.classKeyIDs == [ClassKey.deviceID]) == access.flags.isEmpty }
    }

    /// The key the item's secret is sealed under: its item key, or for an
    /// access-`none` item of schema 3 the device key itself.
    func secretKey(_ item: StoredItem, access: AccessControl, name: (service: String, account: String),
                   proof: VaultProof) throws(VaultError) -> AEADKey {
        let cipher = try Self.cipher(of: item)
        guard let itemKey = try openItemKey(item, access: access, name: name, proof: proof) else { return try deviceKeys.key(cipher) }
        return try Self.itemAEAD(itemKey, cipher)
    }

    /// Tries each way into the item that `proof` can satisfy: the item key,
    /// or nil when the item has none (access `none`, its secret sealed to
    /// the device key). `name`: the item's service and account, for
    /// messages.
    func openItemKey(_ item: StoredItem, access: AccessControl, name: (service: String, account: String),
                     proof: VaultProof) throws(VaultError) -> SecureBytes? {
        let wraps = try wraps(of: item)
        guard Self.ways(wraps, match: access) else {
            throw VaultError.corrupted("the wrapped keys of \(name.service)/\(name.account) do not match its access control (\(wraps.count) for \(access.alternativeCount) ways in)")
        }
        // Items wrapped only to the device key (access none) need no class
        // key record: skip that query for them.
        let needsClassKeys = wraps.contains { $0.classKeyIDs.contains { $0 != ClassKey.deviceID } }
        let classKeys = needsClassKeys ? try classKeys() : [:]
        var closed = 0
        for wrap in wraps {
            if wrap.classKeyIDs == [ClassKey.deviceID] {
                if wrap.wrapped.isEmpty { return nil }
                guard let itemKey = try deviceKeys.key(Self.cipher(of: item)).open(wrap.wrapped, ad: Self.deviceWrapAD(lookup: item.lookup)),
                      itemKey.count == Crypto.keySize else {
                    throw VaultError.corrupted("a wrapped key of \(name.service)/\(name.account) does not open")
                }
                return itemKey
            }
            var keys: [ClassKey] = []
            for id in wrap.classKeyIDs where id != ClassKey.deviceID {
                if let key = classKeys[id] { keys.append(key) }
            }
            guard keys.count == wrap.classKeyIDs.count, !keys.isEmpty else { closed += 1; continue }  // removed with the passcode
            let needsPasscode = keys.contains { $0.kind == .passcode }
            let needsMatch = keys.contains { $0.kind == .biometryAny || $0.kind == .biometryCurrentSet }
            if (needsPasscode && proof.passcode == nil) || (needsMatch && !proof.biometricMatch) {
                continue
            }
            do throws(VaultError) {
                var box = wrap.wrapped
                for key in keys.reversed() {
                    let secretKey = try openClassKey(key, proof: proof)
                    guard let opened = Crypto.openBox(box, publicKey: key.publicKey, secretKey: secretKey) else {
                        throw VaultError.corrupted("a wrapped key of \(name.service)/\(name.account) does not open")
                    }
                    box = opened.withUnsafeBytes { Array($0) }
                }
                defer { secureWipe(&box) }
                guard box.count == Crypto.keySize else { throw VaultError.corrupted("a wrapped key has the wrong size") }
                return SecureBytes(consuming: &box)
            } catch VaultError.itemInvalidated {
                closed += 1
            }
        }
        if closed == wraps.count { throw VaultError.itemInvalidated }
        throw VaultError.authenticationRequired
    }

    /// The item's ways in that are still open, as an access control: a
    /// biometry-current-set alternative whose enrolment set is gone, or one
    /// whose class key went with the passcode, is dropped. Throws
    /// `itemInvalidated` when none is left.
    package func openAccess(service: String, account: String) throws(VaultError) -> AccessControl {
        let (item, attributes) = try load(service: service, account: account)
        return try openAccess(item, attributes)
    }

    /// The ways in of a loaded item that are still open.
    func openAccess(_ item: StoredItem, _ attributes: ItemAttributes) throws(VaultError) -> AccessControl {
        let (service, account) = (attributes.service, attributes.account)
        let classKeys = try classKeys()
        let wraps = try wraps(of: item)
        // The generation the vault's set is for, from the database: which
        // ways to offer. No TPM command: the match that follows reads the
        // counter (the live set), and the TPM checks it at the unseal, so
        // a vault rolled back to an older copy gets no further than it.
        let needsGeneration = wraps.contains { $0.classKeyIDs.contains { classKeys[$0]?.kind == .biometryCurrentSet } }
        let generation = needsGeneration ? try committedGeneration(.enrollment) : nil
        let alternatives = attributes.access.alternatives
        guard wraps.count == alternatives.count else {
            throw VaultError.corrupted("the item \(service)/\(account) has \(wraps.count) wrapped keys for \(alternatives.count) ways in")
        }
        let open = zip(wraps, alternatives).filter { wrap, _ in Self.isOpen(wrap, classKeys, generation) }.map(\.1)
        guard !open.isEmpty else { throw VaultError.itemInvalidated }
        if attributes.access.flags.isEmpty { return .none }
        if attributes.access.combination == .all { return attributes.access }
        return AccessControl(stored: open.flatMap { $0 }, combination: .any)
    }

    /// Whether each class key of the way is still there and, for a
    /// current-set key, sealed for the enrolment generation the counter is
    /// at (`generation`).
    static func isOpen(_ wrap: Wrap, _ classKeys: [Int64: ClassKey], _ generation: UInt64?) -> Bool {
        wrap.classKeyIDs.allSatisfy { id in
            if id == ClassKey.deviceID { return true }
            guard let key = classKeys[id] else { return false }
            return key.kind != .biometryCurrentSet || (!key.sealed.isEmpty && key.generation == generation)
        }
    }
}

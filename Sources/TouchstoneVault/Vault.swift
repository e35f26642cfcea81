import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// The encrypted item store: one SQLite database in the state directory,
/// keys sealed to the TPM. See docs/vault.md for the scheme.
///
/// Key hierarchy:
/// - root key R: sealed device-bound (this TPM only); gives the metadata
///   key, the lookup key and the device wrap key (access `none`);
/// - class keys: one per access class, sealed by the TPM under the policy of
///   that class (passcode; biometry-any = enrolment state or passcode;
///   biometry-current-set = the enrolment state at seal time, one per state);
/// - item keys: random per item, wrapped once per way in (AEAD under the
///   class key, or under a combination of class keys for "and").
public final class Vault: @unchecked Sendable {
    // @unchecked Sendable: the database and TPM serialise themselves; the
    // derived keys are immutable after init.
    public let home: URL
    public let tpm: TPM
    let db: SQLiteDatabase
    let metadataKey: SecureBytes
    let lookupKey: SecureBytes
    /// Wraps item keys of access `none`. It is in memory whenever the vault
    /// is open, so a public-key box would protect nothing more: those items
    /// are wrapped with XChaCha20-Poly1305 under it.
    let deviceKey: SecureBytes

    public static let databaseName = "vault.sqlite"
    /// The largest secret an item holds (1 MiB).
    public static let maximumSecretSize = 1 << 20

    /// Opens (creating on first use) the vault in `home`.
    ///
    /// The folder must be private: created 0700, and an existing one that
    /// group or others can read is refused (fix it with chmod 700).
    public init(home: URL, tpm: TPM) throws {
        self.home = home
        self.tpm = tpm
        try Self.preparePrivateDirectory(home)
        db = try SQLiteDatabase(path: home.appendingPathComponent(Self.databaseName).path)
        try Schema.migrate(db)
        let root = try Self.rootKey(db, tpm)
        metadataKey = Crypto.subkey(root, "metadata")
        lookupKey = Crypto.subkey(root, "lookup")
        deviceKey = Crypto.subkey(root, "device-wrap")
    }

    static func preparePrivateDirectory(_ url: URL) throws {
        let path = url.path
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw VaultError.storage("\(path) is not a directory") }
            guard info.st_mode & 0o077 == 0 else {
                throw VaultError.storage("\(path) is readable by other users (mode \(String(info.st_mode & 0o777, radix: 8))); run: chmod 700 \(path)")
            }
            guard access(path, R_OK | W_OK | X_OK) == 0 else {
                throw VaultError.storage("\(path) is not writable: \(String(cString: strerror(errno)))")
            }
        } else {
            do {
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw VaultError.storage("cannot create \(path): \(error.localizedDescription)")
            }
        }
    }

    // MARK: - Meta

    func meta(_ key: String) throws -> [UInt8]? {
        try db.rows("SELECT value FROM meta WHERE key = ?", [.text(key)]) { $0.blob(0) }.first
    }

    func setMeta(_ key: String, _ value: [UInt8]?) throws {
        if let value {
            try db.query("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                         [.text(key), .blob(value)])
        } else {
            try db.query("DELETE FROM meta WHERE key = ?", [.text(key)])
        }
    }

    func metaInt(_ key: String) throws -> Int? {
        guard let bytes = try meta(key), bytes.count == 8 else { return nil }
        return Int(Int64(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }))
    }

    func setMetaInt(_ key: String, _ value: Int?) throws {
        try setMeta(key, value.map { v in withUnsafeBytes(of: Int64(v).bigEndian) { Array($0) } })
    }

    /// The root key: unsealed from its device-bound blob, or made on first
    /// use (and the SRK's name pinned with it).
    static func rootKey(_ db: SQLiteDatabase, _ tpm: TPM) throws -> SecureBytes {
        let stored = try db.rows("SELECT key, value FROM meta WHERE key IN ('root', 'srk_name')", []) {
            ($0.text(0), $0.blob(1))
        }
        let root = stored.first { $0.0 == "root" }?.1
        let pinned = stored.first { $0.0 == "srk_name" }?.1
        let srkName: [UInt8]
        do {
            if let pinned, root != nil { try tpm.pinStorageKey(name: pinned) }
            srkName = try tpm.storageKeyName()
        } catch TPMError.storageKeyMismatch {
            throw VaultError.otherTPM
        } catch let error as TPMError {
            throw VaultError.tpm(error)
        }
        if let root {
            if let pinned, pinned != srkName { throw VaultError.otherTPM }
            let blob: SealedBlob
            do { blob = try SealedBlob(serialized: root) } catch { throw VaultError.corrupted("the vault's root key record") }
            do {
                return try tpm.unseal(blob, via: .device)
            } catch TPMError.foreignBlob {
                throw VaultError.otherTPM
            } catch let error as TPMError {
                if case .corruptedBlob = error { throw VaultError.corrupted("the vault's root key record") }
                throw VaultError.tpm(error)
            }
        }
        let key = SecureBytes.random(count: Crypto.keySize)
        let blob: SealedBlob
        do { blob = try tpm.seal(key, policy: .deviceBound) } catch let error as TPMError { throw VaultError.tpm(error) }
        try db.transaction {
            // Another process may have made it first: keep theirs.
            let exists = try db.rows("SELECT 1 FROM meta WHERE key = 'root'", []) { _ in true }.first ?? false
            if exists { return }
            try db.query("INSERT INTO meta(key, value) VALUES('root', ?)", [.blob(blob.serialized())])
            try db.query("INSERT INTO meta(key, value) VALUES('srk_name', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                         [.blob(srkName)])
        }
        if let winner = try db.rows("SELECT value FROM meta WHERE key = 'root'", [], { $0.blob(0) }).first,
           winner != blob.serialized() {
            return try rootKey(db, tpm)
        }
        return key
    }

    /// Runs a TPM operation, mapping its errors into the vault's.
    func withTPM<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch let error as TPMError {
            switch error {
            case .foreignBlob: throw VaultError.otherTPM
            case .corruptedBlob(let detail): throw VaultError.corrupted(detail)
            default: throw VaultError.tpm(error)
            }
        }
    }
}

extension Vault {
    /// A small non-secret setting kept in the vault (for example which
    /// reader the fingers were enrolled on).
    public func setting(_ key: String) throws -> String? {
        try meta("setting." + key).map { String(decoding: $0, as: UTF8.self) }
    }

    public func setSetting(_ key: String, _ value: String?) throws {
        try setMeta("setting." + key, value.map { Array($0.utf8) })
    }
}

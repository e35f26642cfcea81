import Foundation
import TouchstonePOSIX
import TouchstoneSecure
import TouchstoneTPM

/// The encrypted item store: one SQLite database in the state directory,
/// keys sealed to the TPM. See docs/vault.md for the scheme.
///
/// Key hierarchy:
/// - root key R: sealed device-bound (this TPM only); gives the metadata
///   key, the lookup key and the device key (access `none`);
/// - class keys: one per access class, sealed by the TPM under the policy of
///   that class (passcode; biometry-any = enrolment state or passcode;
///   biometry-current-set = the enrolment state at seal time, one per state);
/// - item keys: random per item, wrapped once per way in (sealed boxes to
///   the class key, nested for "and"); an access-`none` item has none: its
///   secret is sealed to the device key.
///
/// A row's symmetric boxes use its record cipher (RecordCipher): AES-256-GCM
/// for new rows where the CPU has AES-NI, else XChaCha20-Poly1305, as every
/// row before schema 3.
package final class Vault: @unchecked Sendable {
    // @unchecked Sendable: the database and TPM serialise themselves; the
    // derived keys are immutable after init.
    package let home: URL
    package let tpm: TPM
    let db: SQLiteDatabase
    /// The metadata key of XChaCha20-Poly1305 rows (`metadataKeys` holds it
    /// and the AES-256-GCM one, ready for use).
    let metadataKey: SecureBytes
    let lookupKey: SecureBytes
    /// Keys the hashes of items' attribute pairs (`attributes`).
    let attributeKey: SecureBytes
    /// The device key: seals the secrets of access `none` (rows before
    /// schema 3: wraps their item keys). It is in memory whenever the vault
    /// is open, so an item key or a public-key box would protect nothing
    /// more. This is the XChaCha20-Poly1305 key; `deviceKeys` holds both.
    let deviceKey: SecureBytes
    let metadataKeys: CipherKeys
    let deviceKeys: CipherKeys
    /// Scheme 2: the counters' authValues (a counter is this vault's to
    /// increment; its value, not its authValue, is what keys rely on), the
    /// key of the enrolled fingers' records and of the domain state.
    let enrollmentCounterAuth: PasscodeAuth
    let passcodeCounterAuth: PasscodeAuth
    let fingersKey: AEADKey
    let domainStateKey: SecureBytes
    /// The cipher new rows are written with.
    let recordCipher: RecordCipher
    /// Whose prints the first release kept in `prints/` (read once, when
    /// such a vault is upgraded).
    let user: String

    #if TOUCHSTONE_TEST_SUPPORT
    /// Tests: called at each step of a change (`Vault.steps`), where a
    /// test may throw to stop the change there. The environment variable
    /// TOUCHSTONE_TEST_KILL_AT=<step> kills the process there instead
    /// (debug builds only).
    package var interruption: (@Sendable (String) throws(VaultError) -> Void)? = Vault.killAtStepFromEnvironment
    #endif

    package static let databaseName = "vault.sqlite"
    /// The largest secret an item holds (1 MiB).
    package static let maximumSecretSize = 1 << 20

    /// Opens (creating on first use) the vault in `home`.
    ///
    /// The folder must be private: created 0700, and an existing one that
    /// group or others can read is refused (fix it with chmod 700). On a
    /// read-only file system the vault opens read-only: listing and reading
    /// work, changes are refused (`isReadOnly`).
    ///
    /// A vault of the first release's TPM scheme is upgraded here (its
    /// keys re-sealed to counters, `user`'s prints moved in from
    /// `prints/`), and a change that was cut short is finished: neither
    /// needs the passcode.
    package convenience init(home: URL, tpm: TPM, user: String = ProcessInfo.processInfo.userName) throws(VaultError) {
        try self.init(home: home, tpm: tpm, recordCipher: .preferred, user: user)
    }

    /// `recordCipher`: what new rows are written with (tests write both).
    init(home: URL, tpm: TPM, recordCipher: RecordCipher, user: String = ProcessInfo.processInfo.userName) throws(VaultError) {
        precondition(recordCipher.isAvailable)
        self.recordCipher = recordCipher
        self.home = home
        self.tpm = tpm
        self.user = user
        let writable = try Self.preparePrivateDirectory(home)
        let path = home.appendingPathComponent(Self.databaseName).path
        if writable { try Self.createDatabase(at: path) }
        db = try SQLiteDatabase(path: path, mode: writable ? .existing : .readOnly)
        try Schema.migrate(db)
        let root = try Self.rootKey(db, tpm)
        metadataKey = Crypto.subkey(root, "metadata")
        lookupKey = Crypto.subkey(root, "lookup")
        attributeKey = Crypto.subkey(root, "attribute")
        deviceKey = Crypto.subkey(root, "device-wrap")
        metadataKeys = CipherKeys(root: root, purpose: "metadata", xchacha: metadataKey)
        deviceKeys = CipherKeys(root: root, purpose: "device-wrap", xchacha: deviceKey)
        enrollmentCounterAuth = PasscodeAuth(authValue: Crypto.subkey(root, CounterRole.enrollment.authPurpose))
        passcodeCounterAuth = PasscodeAuth(authValue: Crypto.subkey(root, CounterRole.passcode.authPurpose))
        fingersKey = AEADKey(Crypto.subkey(root, "fingers"), cipher: .xchacha20poly1305)!
        domainStateKey = Crypto.subkey(root, "domain-state")
        try upgradeFromFirstScheme()
        try completePendingIncrements()
        try indexAttributesIfNeeded()
    }

    /// Whether the vault was opened read-only (its folder is on a read-only
    /// file system), or was moved into the daemon (`retire`): every change
    /// is refused.
    package var isReadOnly: Bool { db.isReadOnly || isRetired }

    /// Whether `touchstone import` moved this vault into the daemon: it
    /// then only lists and opens.
    package var isRetired: Bool { ((try? meta(Self.retiredKey)) ?? nil) != nil }
    static let retiredKey = "retired_to_daemon"

    /// Throws the read-only error when the vault cannot be changed. Called
    /// before anything that writes, so no TPM state changes first.
    package func requireWritable() throws(VaultError) {
        if db.isReadOnly { throw SQLiteDatabase.readOnly(db.path) }
        if isRetired {
            throw VaultError.storage(StorageFailure(.readOnly, "cannot change the vault in \(home.path): it was moved into touchstoned (touchstone import), and only lists and opens",
                                                    fix: "use the daemon's vault (without --embedded)"))
        }
    }

    /// Marks the vault as moved into the daemon: from now on it is
    /// read-only (the one change it takes, after an import).
    package func retire() throws(VaultError) {
        if db.isReadOnly { throw SQLiteDatabase.readOnly(db.path) }
        try setMeta(Self.retiredKey, Array(ISO8601DateFormatter().string(from: Date()).utf8))
    }

    /// Checks an existing state folder: a directory, private (not readable
    /// by group or others), which this user may read and search. Returns
    /// nil when it does not exist, else whether it is writable (false: on a
    /// read-only file system). A refusal names the command that fixes it
    /// when one does.
    package static func checkStateDirectory(_ url: URL) throws(StorageFailure) -> Bool? {
        let path = url.path
        var info = stat()
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { stat(path, &info) }
        } catch .noSuchFileOrDirectory {
            return nil
        } catch {
            throw StorageFailure(.stateFolder, "cannot open the state folder \(path): \(error)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw StorageFailure(.stateFolder, "\(path) is not a directory") }
        let digits = String(info.st_mode & 0o777, radix: 8)
        let mode = String(repeating: "0", count: max(0, 3 - digits.count)) + digits
        guard info.st_mode & 0o077 == 0 else {
            throw StorageFailure(.stateFolder, "\(path) is readable by other users (mode \(mode))", fix: "chmod 700 \(path)")
        }
        let ours = info.st_uid == geteuid()
        let fix = ours ? "chmod 700 \(path)" : nil
        let owner = ours ? "" : ", and it belongs to another user (uid \(info.st_uid))"
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { access(path, R_OK | X_OK) }
        } catch {
            throw StorageFailure(.stateFolder, "cannot read the state folder \(path): \(error) (mode \(mode))\(owner)", fix: fix)
        }
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { access(path, W_OK) }
        } catch where error == .readOnlyFileSystem {
            return false
        } catch {
            throw StorageFailure(.stateFolder, "cannot write to the state folder \(path): \(error) (mode \(mode))\(owner)", fix: fix)
        }
        return true
    }

    /// Checks the state folder, or creates it (0700). Returns whether it is
    /// writable.
    static func preparePrivateDirectory(_ url: URL) throws(VaultError) -> Bool {
        do throws(StorageFailure) {
            if let writable = try checkStateDirectory(url) { return writable }
        } catch {
            throw VaultError.storage(error)
        }
        do {  // Foundation's error, untyped: made a storage failure here
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw VaultError.storage(StorageFailure(.database, "cannot create \(url.path): \(error.localizedDescription)"))
        }
        return true
    }

    /// Creates the database at `path` if there is none, whole: the schema
    /// is written to a temporary file beside it, which is then linked into
    /// place. A vault file is therefore never empty, and an empty one is
    /// damage, not a new vault (SQLite alone would take it for one). When
    /// two processes create it at once, the first link wins and both use it.
    static func createDatabase(at path: String) throws(VaultError) {
        do throws(Errno) {
            if try fileExists(at: path) { return }
        } catch {
            throw VaultError.storage(StorageFailure(.database, "cannot open \(path): \(error)"))
        }
        removeAbandonedCreations(of: path)
        // Unique per call: threads of one process may create it at once too.
        let temporary = "\(path).new-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let leftovers = ["", "-wal", "-shm", "-journal"].map { temporary + $0 }
        defer { leftovers.forEach { unlink($0) } }
        let fresh = try SQLiteDatabase(path: temporary, mode: .create)
        try Schema.migrate(fresh)
        var busy: Int64 = 1
        try fresh.query("PRAGMA wal_checkpoint(TRUNCATE)") { busy = $0.integer(0) }
        fresh.close()
        guard busy == 0, (SQLiteDatabase.fileSize(temporary + "-wal") ?? 0) == 0,
              (SQLiteDatabase.fileSize(temporary) ?? 0) > 0 else {
            throw VaultError.storage(StorageFailure(.database, "cannot create \(path): the new database was not written out"))
        }
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { link(temporary, path) }
        } catch .fileExists {
            return  // another process made it first
        } catch where error == .notPermitted || error == .notSupported {
            // No hard links on this file system: a rename, unless the file
            // appeared meanwhile.
            do throws(Errno) {
                if (try? fileExists(at: path)) == true { return }
                _ = try valueOrErrno(retryOnInterrupt: false) { rename(temporary, path) }
            } catch {
                throw VaultError.storage(StorageFailure(.database, "cannot create \(path): \(error)"))
            }
        } catch {
            throw VaultError.storage(StorageFailure(.database, "cannot create \(path): \(error)"))
        }
        // The new directory entry made durable, best effort (a failure is not reported).
        if let folder = try? OwnedDescriptor.open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY) {
            let raw = folder.rawValue
            _ = try? valueOrErrno(retryOnInterrupt: true) { fsync(raw) }
        }
    }

    /// Whether something is at `path` (lstat: a link is not followed);
    /// false when nothing is, the error when that cannot be told.
    private static func fileExists(at path: String) throws(Errno) -> Bool {
        var info = stat()
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { lstat(path, &info) }
            return true
        } catch .noSuchFileOrDirectory {
            return false
        }
    }

    /// Deletes the temporary files of creations whose process died (killed
    /// while creating the vault): `<name>.new-PID-N*` where no process PID
    /// is alive.
    static func removeAbandonedCreations(of path: String) {
        let folder = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + ".new-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0.isNumber }), pid > 0,
                  isGone(pid) else { continue }
            unlink(folder + "/" + name)
        }
    }

    /// Whether no process `pid` exists (kill 0 says ESRCH); a process of
    /// another user (EPERM) is alive.
    private static func isGone(_ pid: pid_t) -> Bool {
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { kill(pid, 0) }
            return false
        } catch {
            return error == .noSuchProcess
        }
    }

    // MARK: - Meta

    func meta(_ key: String) throws(VaultError) -> [UInt8]? {
        try db.rows("SELECT value FROM meta WHERE key = ?", [.text(key)]) { $0.blob(0) }.first
    }

    func setMeta(_ key: String, _ value: [UInt8]?) throws(VaultError) {
        if let value {
            try db.query("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                         [.text(key), .blob(value)])
        } else {
            try db.query("DELETE FROM meta WHERE key = ?", [.text(key)])
        }
    }

    func metaInt(_ key: String) throws(VaultError) -> Int? {
        guard let bytes = try meta(key), bytes.count == 8 else { return nil }
        return Int(Int64(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }))
    }

    func setMetaInt(_ key: String, _ value: Int?) throws(VaultError) {
        try setMeta(key, value.map { v in withUnsafeBytes(of: Int64(v).bigEndian) { Array($0) } })
    }

    /// The root key: unsealed from its device-bound blob, or made on first
    /// use (and the SRK's name pinned with it).
    static func rootKey(_ db: SQLiteDatabase, _ tpm: TPM) throws(VaultError) -> SecureBytes {
        let stored = try db.rows("SELECT key, value FROM meta WHERE key IN ('root', 'srk_name')", []) {
            ($0.text(0), $0.blob(1))
        }
        let root = stored.first { $0.0 == "root" }?.1
        let pinned = stored.first { $0.0 == "srk_name" }?.1
        let srkName: [UInt8]
        do throws(TPMError) {
            if let pinned, root != nil { try tpm.pinStorageKey(name: pinned) }
            srkName = try tpm.storageKeyName()
        } catch .storageKeyMismatch {
            throw VaultError.otherTPM
        } catch {
            throw VaultError.tpm(error)
        }
        if let root {
            if let pinned, pinned != srkName { throw VaultError.otherTPM }
            let blob: SealedBlob
            do throws(TPMError) { blob = try SealedBlob(serialized: root) } catch { throw VaultError.corrupted("the vault's root key record") }
            do throws(TPMError) {
                return try tpm.unseal(blob, via: .device)
            } catch .foreignBlob {
                throw VaultError.otherTPM
            } catch {
                if case .corruptedBlob = error { throw VaultError.corrupted("the vault's root key record") }
                throw VaultError.tpm(error)
            }
        }
        // No root key yet: none can be made in a read-only vault.
        if db.isReadOnly { throw SQLiteDatabase.readOnly(db.path) }
        let key = SecureBytes.random(count: Crypto.keySize)
        let blob = try throughTPM { () throws(TPMError) in try tpm.seal(key, policy: .deviceBound) }
        try db.transaction { () throws(VaultError) in
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

    /// Runs a TPM call whose error is passed on as it is (`.tpm`).
    static func throughTPM<R>(_ body: () throws(TPMError) -> R) throws(VaultError) -> R {
        do { return try body() } catch { throw VaultError.tpm(error) }
    }

    /// Runs a TPM operation, mapping its errors into the vault's.
    func withTPM<R>(_ body: () throws(TPMError) -> R) throws(VaultError) -> R {
        do { return try body() } catch {
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
    package func setting(_ key: String) throws(VaultError) -> String? {
        try meta("setting." + key).map { String(decoding: $0, as: UTF8.self) }
    }

    package func setSetting(_ key: String, _ value: String?) throws(VaultError) {
        try requireWritable()
        try setMeta("setting." + key, value.map { Array($0.utf8) })
    }
}

import Foundation
internal import CSodium
import Touchstone
import TouchstoneSecure
import TouchstoneVault
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's own check of passcode attempts, per client uid, in front of
/// the TPM (as Android's Gatekeeper throttles in front of the keystore):
///
/// - a throttle: after `freeTries` wrong passcodes in a row, every attempt
///   (the right one too) is refused for `firstWait`, doubling with each
///   further wrong one, at most `longestWait`; a right one clears it. The
///   count is in the daemon's database, so it survives restarts, and no
///   TPM command (a dictionary-attack reset included) touches it;
/// - a verifier: Argon2id (libsodium's crypto_pwhash; 2 passes over 4 MiB,
///   3 ms here: docs/performance.md, "Passcode KDF") of the passcode keyed
///   with a pepper only the daemon holds, recorded at the first passcode the
///   TPM accepted. A wrong passcode is refused here, so
///   it never reaches the TPM's dictionary-attack counter, which all users
///   share: one user's wrong passcodes never lock the TPM for another.
///
/// Stored in `HOME/daemon.sqlite` (0600 in the daemon's 0700 folder). Who
/// can read it can guess passcodes offline at Argon2id's cost: the daemon's
/// user and root, whom the daemon does not protect against.
package final class PasscodeGate: Sendable {
    package static let freeTries = 10
    package static let firstWait: Double = 60
    package static let longestWait: Double = 24 * 3600
    /// The verifier's Argon2id cost: 2 passes over 4 MiB.
    static let verifierPasses: UInt64 = 2
    static let verifierMemory = 4 << 20

    private let database: SQLiteDatabase
    private let pepper: SecureBytes
    private let now: @Sendable () -> Double

    /// `database`: the daemon's own (`HOME/daemon.sqlite`).
    package init(database: SQLiteDatabase, now: @escaping @Sendable () -> Double = PasscodeGate.clock) throws {
        self.database = database
        try database.execute("""
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value BLOB NOT NULL);
            CREATE TABLE IF NOT EXISTS throttle(uid INTEGER PRIMARY KEY, failures INTEGER NOT NULL, locked_until REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS verifiers(uid INTEGER PRIMARY KEY, salt BLOB NOT NULL, verifier BLOB NOT NULL);
            """)
        let stored = try database.firstRow("SELECT value FROM meta WHERE key = 'pepper'") { $0.blob(0) }
        if var stored, stored.count == 32 {
            pepper = SecureBytes(consuming: &stored)
        } else {
            let fresh = SecureBytes.random(count: 32)
            var bytes = fresh.withUnsafeBytes { Array($0) }
            defer { secureWipe(&bytes) }
            try database.query("INSERT OR REPLACE INTO meta(key, value) VALUES('pepper', ?)", [.blob(bytes)])
            pepper = fresh
        }
        self.now = now
    }

    /// The wall clock; in debug builds moved on by the seconds in the file
    /// TOUCHSTONE_TEST_CLOCK_FILE names, so that a test passes a wait
    /// without sleeping through it (and never depends on the machine's speed).
    package static let clock: @Sendable () -> Double = {
        #if TOUCHSTONE_TEST_SUPPORT
        if let file = ProcessInfo.processInfo.environment["TOUCHSTONE_TEST_CLOCK_FILE"] {
            return {
                let offset = (try? String(contentsOfFile: file, encoding: .utf8))
                    .flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
                return Date().timeIntervalSince1970 + offset
            }
        }
        #endif
        return { Date().timeIntervalSince1970 }
    }()

    // MARK: - The throttle

    /// Throws `.passcodeThrottled` while `uid`'s attempts are refused;
    /// otherwise the wrong passcodes in a row so far (a right one needs to
    /// clear them only when there are any).
    @discardableResult
    package func check(_ uid: UInt32) throws(AuthenticationError) -> Int {
        let row = (try? database.firstRow("SELECT failures, locked_until FROM throttle WHERE uid = ?", [.integer(Int64(uid))]) {
            (Int($0.integer(0)), $0.real(1))
        }) ?? nil
        guard let (failures, lockedUntil) = row else { return 0 }
        if lockedUntil > now() {
            throw .passcodeThrottled(retryAfterSeconds: UInt32(min((lockedUntil - now()).rounded(.up), Self.longestWait)))
        }
        return failures
    }

    /// One more wrong passcode of `uid`'s; the wait it starts, if any.
    @discardableResult
    package func recordFailure(_ uid: UInt32) -> Double? {
        let id = Int64(uid)
        return try? database.transaction {
            let failures = (try database.firstRow("SELECT failures FROM throttle WHERE uid = ?", [.integer(id)]) { $0.integer(0) } ?? 0) + 1
            let over = Int(failures) - Self.freeTries
            let wait = over >= 0 ? min(Self.firstWait * pow(2, Double(over)), Self.longestWait) : nil
            try database.query("INSERT OR REPLACE INTO throttle(uid, failures, locked_until) VALUES(?, ?, ?)",
                               [.integer(id), .integer(failures), .real(wait.map { now() + $0 } ?? 0)])
            return wait
        }
    }

    /// Wrong passcodes in a row (0 after a right one).
    package func failures(_ uid: UInt32) -> Int {
        Int((try? database.firstRow("SELECT failures FROM throttle WHERE uid = ?", [.integer(Int64(uid))]) { $0.integer(0) }) ?? 0)
    }

    // MARK: - The verifier

    /// Whether `passcode` is `uid`'s (constant time); nil when no verifier
    /// is recorded yet (the TPM decides).
    package func verify(_ uid: UInt32, _ passcode: SecureBytes) -> Bool? {
        guard let (salt, verifier) = (try? database.firstRow("SELECT salt, verifier FROM verifiers WHERE uid = ?",
                                                               [.integer(Int64(uid))]) { ($0.blob(0), $0.blob(1)) }) ?? nil,
              let derived = derive(passcode, salt: salt), derived.count == verifier.count else { return nil }
        return derived.withUnsafeBytes { a in verifier.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }

    /// A right passcode: the count cleared, the verifier recorded anew.
    package func recordSuccess(_ uid: UInt32, _ passcode: SecureBytes) {
        let id = Int64(uid)
        var salt = [UInt8](repeating: 0, count: Int(crypto_pwhash_saltbytes()))
        randombytes_buf(&salt, salt.count)
        let derived = derive(passcode, salt: salt)
        _ = try? database.transaction {
            try database.query("DELETE FROM throttle WHERE uid = ?", [.integer(id)])
            if let derived {
                try database.query("INSERT OR REPLACE INTO verifiers(uid, salt, verifier) VALUES(?, ?, ?)",
                                   [.integer(id), .blob(salt), .blob(derived.withUnsafeBytes { Array($0) })])
            }
        }
    }

    /// A right passcode the verifier knew: the count cleared.
    package func clearFailures(_ uid: UInt32) {
        _ = try? database.query("DELETE FROM throttle WHERE uid = ?", [.integer(Int64(uid))])
    }

    /// The passcode was removed: no verifier, no count.
    package func forget(_ uid: UInt32) {
        _ = try? database.transaction {
            try database.query("DELETE FROM verifiers WHERE uid = ?", [.integer(Int64(uid))])
            try database.query("DELETE FROM throttle WHERE uid = ?", [.integer(Int64(uid))])
        }
    }

    /// Argon2id of the passcode keyed with the pepper (keyed BLAKE2b-256
    /// first, so the pepper and the passcode are one input).
    private func derive(_ passcode: SecureBytes, salt: [UInt8]) -> SecureBytes? {
        guard salt.count == Int(crypto_pwhash_saltbytes()) else { return nil }
        let keyed = passcode.keyedBLAKE2b(key: pepper)
        let out = SecureBytes(count: 32)
        let rc = out.withUnsafeMutableBytes { dst in
            keyed.withUnsafeBytes { src in
                crypto_pwhash(dst.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                              src.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(src.count), salt,
                              Self.verifierPasses, Self.verifierMemory, crypto_pwhash_alg_argon2id13())
            }
        }
        return rc == 0 ? out : nil
    }
}

/// One user's share of the daemon's gate, as that user's engine judges
/// passcodes through it.
struct UserThrottle: PasscodeThrottle {
    let gate: PasscodeGate
    let uid: UInt32

    func check() throws(AuthenticationError) -> Int { try gate.check(uid) }
    func verify(_ passcode: SecureBytes) -> Bool? { gate.verify(uid, passcode) }
    func recordFailure() { _ = gate.recordFailure(uid) }
    func recordSuccess(_ passcode: SecureBytes) { gate.recordSuccess(uid, passcode) }
    func clearFailures() { gate.clearFailures(uid) }
    func forget() { gate.forget(uid) }
}

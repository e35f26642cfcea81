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
///   TPM command (a dictionary-attack reset included) touches it. Each
///   attempt is one step (`admit`): checked, judged and, when wrong or
///   left to the TPM, counted in one transaction before the answer goes
///   back, so parallel connections are judged at most `freeTries` times;
///   a database that cannot be read or written refuses the attempt
///   (`.storage`: fails closed);
/// - a rate limit on the operations that write the TPM's NV (passcode set,
///   change, remove): `nvWrites` per `nvWindow` seconds per uid;
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
            CREATE TABLE IF NOT EXISTS nv_writes(uid INTEGER NOT NULL, at REAL NOT NULL);
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

    /// The wall clock; in debug builds the test clock of the file
    /// TOUCHSTONE_TEST_CLOCK_FILE names (`TestClockFile`: standing still,
    /// or moved on), so that a test passes a wait without sleeping through
    /// it and never depends on the machine's speed.
    package static let clock: @Sendable () -> Double = {
        #if TOUCHSTONE_TEST_SUPPORT
        if let file = ProcessInfo.processInfo.environment["TOUCHSTONE_TEST_CLOCK_FILE"] {
            return { TestClockFile.now(file) }
        }
        #endif
        return { Date().timeIntervalSince1970 }
    }()

    // MARK: - The throttle

    /// The refusal of an attempt whose count the database could not read
    /// or write: the attempt is refused (fails closed), never let through
    /// uncounted.
    static func unrecorded(_ error: any Error) -> AuthenticationError {
        .storage(StorageFailure(.database, "the daemon cannot record passcode attempts (\(error)); the attempt is refused"))
    }

    /// Throws `.passcodeThrottled` while `uid`'s attempts are refused, and
    /// `.storage` when the count cannot be read; otherwise the wrong
    /// passcodes in a row so far.
    @discardableResult
    package func check(_ uid: UInt32) throws(AuthenticationError) -> Int {
        do {
            return try checking(uid)
        } catch let error as AuthenticationError {
            throw error
        } catch {
            throw Self.unrecorded(error)
        }
    }

    private func checking(_ uid: UInt32) throws -> Int {
        let row = try database.firstRow("SELECT failures, locked_until FROM throttle WHERE uid = ?", [.integer(Int64(uid))]) {
            (Int($0.integer(0)), $0.real(1))
        }
        guard let (failures, lockedUntil) = row else { return 0 }
        let at = now()
        if lockedUntil > at {
            throw AuthenticationError.passcodeThrottled(retryAfterSeconds: UInt32(min((lockedUntil - at).rounded(.up), Self.longestWait)))
        }
        return failures
    }

    /// One attempt of `uid`'s with `passcode`, counted before it is
    /// judged (as Android's Gatekeeper records the failure before it
    /// releases the verify result): in one transaction, under the
    /// database's lock (which serialises every use of the daemon's
    /// database), the throttle is checked and a failure written; only once
    /// that is on disk is the passcode judged by the verifier, and a right
    /// one gives its failure back. So parallel attempts are judged at most
    /// `freeTries` times, and a daemon that cannot record an attempt refuses
    /// it, right or wrong: a full disk tells nobody which passcode is right.
    /// An undecided attempt (no verifier: the TPM decides) stays counted
    /// until `recordSuccess` clears it when the TPM accepts the passcode, or
    /// `refund` gives it back when the TPM did not judge it. `knownRight`:
    /// the engine knows the passcode is right (its warm one): not verified
    /// again, still counted first. `writesNV`: the operation writes the
    /// TPM's NV (passcode set, change, remove): a slot of the NV rate limit
    /// is taken too. Throws `.passcodeThrottled` while refused and
    /// `.storage` when the database cannot be read or written (the attempt
    /// is refused).
    package func admit(_ uid: UInt32, _ passcode: SecureBytes, knownRight: Bool = false,
                       writesNV: Bool = false) throws(AuthenticationError) -> PasscodeAdmission {
        do {
            let earlier = try database.transaction { () throws -> Int in
                let earlier = try checking(uid)
                if writesNV { try takingNVSlot(uid) }
                _ = try failing(uid)
                return earlier
            }
            switch knownRight ? true : try verifying(uid, passcode) {
            case true?:
                refund(uid)
                return .right(clearing: earlier > 0)
            case false?: return .wrong
            case nil: return .undecided
            }
        } catch let error as AuthenticationError {
            throw error
        } catch {
            throw Self.unrecorded(error)
        }
    }

    /// One more wrong passcode of `uid`'s; the wait it starts, if any.
    /// Throws `.storage` when it cannot be written.
    @discardableResult
    package func recordFailure(_ uid: UInt32) throws(AuthenticationError) -> Double? {
        do {
            return try database.transaction { () throws -> Double? in try failing(uid) }
        } catch {
            throw Self.unrecorded(error)
        }
    }

    private func failing(_ uid: UInt32) throws -> Double? {
        let id = Int64(uid)
        let failures = (try database.firstRow("SELECT failures FROM throttle WHERE uid = ?", [.integer(id)]) { $0.integer(0) } ?? 0) + 1
        let over = Int(failures) - Self.freeTries
        let wait = over >= 0 ? min(Self.firstWait * pow(2, Double(over)), Self.longestWait) : nil
        try database.query("INSERT OR REPLACE INTO throttle(uid, failures, locked_until) VALUES(?, ?, ?)",
                           [.integer(id), .integer(failures), .real(wait.map { now() + $0 } ?? 0)])
        return wait
    }

    /// An undecided attempt (`admit`) that the TPM did not judge (it failed
    /// before, or for another reason): the failure written in advance is
    /// given back, and the wait with it when the count falls below
    /// `freeTries`. A refund that cannot be written leaves the failure
    /// counted (the safe side).
    package func refund(_ uid: UInt32) {
        let id = Int64(uid)
        _ = try? database.transaction { () throws -> Void in
            guard let failures = try database.firstRow("SELECT failures FROM throttle WHERE uid = ?", [.integer(id)], { $0.integer(0) }),
                  failures > 0 else { return }
            if failures - 1 < Int64(Self.freeTries) {
                try database.query("UPDATE throttle SET failures = ?, locked_until = 0 WHERE uid = ?", [.integer(failures - 1), .integer(id)])
            } else {
                try database.query("UPDATE throttle SET failures = ? WHERE uid = ?", [.integer(failures - 1), .integer(id)])
            }
        }
    }

    /// Wrong passcodes in a row (0 after a right one).
    package func failures(_ uid: UInt32) -> Int {
        Int((try? database.firstRow("SELECT failures FROM throttle WHERE uid = ?", [.integer(Int64(uid))]) { $0.integer(0) }) ?? 0)
    }

    // MARK: - The TPM's NV writes

    /// Operations that write the TPM's NV (a passcode set, changed or
    /// removed) per uid: at most `nvWrites` in any `nvWindow` seconds,
    /// counted as they are admitted (right passcode or not), so a user who
    /// knows the passcode cannot wear the TPM's NV out by changing it in a
    /// loop. Beyond it: `.passcodeThrottled` until the oldest leaves the window.
    package static let nvWrites = 5
    package static let nvWindow: Double = 60

    /// Takes one of `uid`'s NV-write slots (`setPasscode`, which has no
    /// passcode to judge; the others take theirs in `admit`). Throws
    /// `.passcodeThrottled` when none is free, `.storage` when the database
    /// cannot be read or written.
    package func reserveNVWrite(_ uid: UInt32) throws(AuthenticationError) {
        do {
            try database.transaction { () throws -> Void in try takingNVSlot(uid) }
        } catch let error as AuthenticationError {
            throw error
        } catch {
            throw Self.unrecorded(error)
        }
    }

    private func takingNVSlot(_ uid: UInt32) throws {
        let id = Int64(uid)
        let at = now()
        try database.query("DELETE FROM nv_writes WHERE uid = ? AND at <= ?", [.integer(id), .real(at - Self.nvWindow)])
        let taken = try database.firstRow("SELECT COUNT(*), MIN(at) FROM nv_writes WHERE uid = ?", [.integer(id)]) {
            (Int($0.integer(0)), $0.real(1))
        }
        if let (count, oldest) = taken, count >= Self.nvWrites {
            throw AuthenticationError.passcodeThrottled(retryAfterSeconds: UInt32(max(1, (oldest + Self.nvWindow - at).rounded(.up))))
        }
        try database.query("INSERT INTO nv_writes(uid, at) VALUES(?, ?)", [.integer(id), .real(at)])
    }

    // MARK: - The verifier

    /// Whether `passcode` is `uid`'s (constant time); nil when no verifier
    /// is recorded yet (the TPM decides).
    package func verify(_ uid: UInt32, _ passcode: SecureBytes) -> Bool? {
        (try? verifying(uid, passcode)) ?? nil
    }

    private func verifying(_ uid: UInt32, _ passcode: SecureBytes) throws -> Bool? {
        guard let (salt, verifier) = try database.firstRow("SELECT salt, verifier FROM verifiers WHERE uid = ?",
                                                            [.integer(Int64(uid))], { ($0.blob(0), $0.blob(1)) }),
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
    func admit(_ passcode: SecureBytes, knownRight: Bool, writesNV: Bool) throws(AuthenticationError) -> PasscodeAdmission {
        try gate.admit(uid, passcode, knownRight: knownRight, writesNV: writesNV)
    }
    func reserveNVWrite() throws(AuthenticationError) { try gate.reserveNVWrite(uid) }
    func refund() { gate.refund(uid) }
    func recordSuccess(_ passcode: SecureBytes) { gate.recordSuccess(uid, passcode) }
    func clearFailures() { gate.clearFailures(uid) }
    func forget() { gate.forget(uid) }
}

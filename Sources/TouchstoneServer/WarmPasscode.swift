import Foundation
import Touchstone
import TouchstoneSecure

/// What `touchstoned` keeps of one user's last right passcode while the
/// user goes on using it (docs/daemon.md, "What it enforces"): the passcode
/// class key's secret as the TPM opened it, the vault record it opened
/// from, and a keyed BLAKE2b-256 of the passcode under a key of this
/// process's (never stored). A passcode with the same hash then proves
/// itself without Argon2id and without the TPM, for as long as the record
/// is the same; any other passcode goes the whole way (throttle, verifier,
/// TPM), so a wrong one is judged and counted as before.
///
/// Everything is in locked memory, wiped when forgotten: `lifetime` after
/// its last use, at every passcode change, removal or import, and when
/// the daemon stops. Who can read the daemon's memory (root, the daemon's
/// user) could read the gate and the pepper from its database anyway.
package final class WarmPasscode: WarmPasscodeKeeping {
    /// How long a right passcode stays warm after its last use.
    package static let defaultLifetime: Duration = .seconds(300)

    private struct Entry: Sendable {
        let digest: SecureBytes
        let record: [UInt8]
        let secret: SecureBytes
        var lastUse: ContinuousClock.Instant
    }

    private let key = SecureBytes.random(count: 32)
    private let lifetime: Duration
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let entry = Locked<Entry?>(nil)

    /// `clock`: the time now (a test's own, to pass a lifetime at once).
    package init(lifetime: Duration = WarmPasscode.defaultLifetime,
                 clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.lifetime = lifetime
        self.clock = clock
    }

    /// Whether `passcode` is the warm one (constant time); its use renews it.
    package func matches(_ passcode: SecureBytes) -> Bool { opened(for: passcode) != nil }

    /// The secret and record kept for `passcode`, if it is the warm one
    /// (constant time); its use renews it.
    package func opened(for passcode: SecureBytes) -> (secret: SecureBytes, record: [UInt8])? {
        let digest = hash(passcode)
        let now = clock()
        return entry.withLock { entry in
            guard let warm = entry else { return nil }
            guard now - warm.lastUse < lifetime else {
                entry = nil
                return nil
            }
            guard digest == warm.digest else { return nil }  // SecureBytes' == is constant-time
            entry?.lastUse = now
            return (warm.secret, warm.record)
        }
    }

    /// Keeps `passcode` warm: the TPM just opened `secret` from `record` with it.
    package func remember(_ passcode: SecureBytes, secret: SecureBytes, record: [UInt8]) {
        let digest = hash(passcode)
        entry.withLock { $0 = Entry(digest: digest, record: record, secret: secret, lastUse: clock()) }
        expire(after: lifetime)
    }

    /// Forgets the warm passcode (a change, a removal, an import).
    package func forget() {
        entry.withLock { $0 = nil }
    }

    /// Whether a passcode is warm now (for tests and status).
    package var isWarm: Bool {
        let now = clock()
        return entry.withLock { $0.map { now - $0.lastUse < lifetime } ?? false }
    }

    /// Whether a key is held at all, warm or not yet wiped.
    package var holdsKey: Bool { entry.withLock { $0 != nil } }

    /// Wipes the entry once `delay` has passed and it went unused for its
    /// lifetime; renewed meanwhile, waits for the rest of it.
    private func expire(after delay: Duration) {
        Task.detached { [weak self] in
            try? await Task.sleep(for: delay)
            guard let self else { return }
            let now = clock()
            let left = entry.withLock { entry -> Duration? in
                guard let warm = entry else { return nil }
                let unused = now - warm.lastUse
                if unused >= lifetime { entry = nil; return nil }
                return lifetime - unused
            }
            if let left { expire(after: left) }
        }
    }

    private func hash(_ passcode: SecureBytes) -> SecureBytes { passcode.keyedBLAKE2b(key: key) }
}

/// Each client uid's warm passcode, made at its first use.
package final class WarmPasscodes: Sendable {
    private let lifetime: Duration
    private let users = Locked<[UInt32: WarmPasscode]>([:])

    package init(lifetime: Duration = WarmPasscode.defaultLifetime) { self.lifetime = lifetime }

    package func of(_ uid: UInt32) -> WarmPasscode {
        users.withLock { users in
            if let warm = users[uid] { return warm }
            let warm = WarmPasscode(lifetime: lifetime)
            users[uid] = warm
            return warm
        }
    }
}

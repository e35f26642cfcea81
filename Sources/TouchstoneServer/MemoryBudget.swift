import Synchronization
import TouchstoneClient
#if canImport(Glibc)
import Glibc
#endif

/// The locked memory clients' frames may hold in the daemon, per uid and
/// in all: a frame takes its share as its bytes arrive and gives it back
/// when it goes (its call answered). A frame past either limit is refused
/// (`.overBudget`) and its connection closed; the others go on. The
/// unit's LimitMEMLOCK (64 MiB) keeps room beyond `total` for the engines.
package final class MemoryBudget: Sendable {
    /// What one uid's frames may hold: four frames of the largest size.
    package static let perUser = 4 * DaemonWire.maximumBody
    /// What every uid's frames may hold together.
    package static let total = 32 << 20

    private struct Held {
        var byUser: [uid_t: Int] = [:]
        var total = 0
    }
    private let held = Mutex(Held())
    private let perUser: Int
    private let total: Int

    package init(perUser: Int = MemoryBudget.perUser, total: Int = MemoryBudget.total) {
        self.perUser = perUser
        self.total = total
    }

    /// The budget of `uid`'s frames.
    package func of(_ uid: uid_t) -> any FrameBudget { UserBudget(budget: self, uid: uid) }

    /// What `uid`'s frames hold now.
    package func holding(_ uid: uid_t) -> Int { held.withLock { $0.byUser[uid] ?? 0 } }

    fileprivate func take(_ bytes: Int, for uid: uid_t) -> Bool {
        held.withLock { held in
            let mine = held.byUser[uid] ?? 0
            guard mine + bytes <= perUser, held.total + bytes <= total else { return false }
            held.byUser[uid] = mine + bytes
            held.total += bytes
            return true
        }
    }

    fileprivate func give(_ bytes: Int, for uid: uid_t) {
        guard bytes > 0 else { return }
        held.withLock { held in
            let left = (held.byUser[uid] ?? 0) - bytes
            held.byUser[uid] = left > 0 ? left : nil
            held.total -= bytes
        }
    }
}

private struct UserBudget: FrameBudget {
    let budget: MemoryBudget
    let uid: uid_t

    func take(_ bytes: Int) -> Bool { budget.take(bytes, for: uid) }
    func give(_ bytes: Int) { budget.give(bytes, for: uid) }
}

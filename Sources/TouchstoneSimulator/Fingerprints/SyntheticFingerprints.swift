import Synchronization

/// Synthetic fingerprints by finger ID, for the simulator's image reader:
/// each finger's master print is made once and kept (it is the expensive
/// part), impressions are taken from it on demand.
package final class SyntheticFingerprints: Sendable {
    /// The process's generator.
    package static let shared = SyntheticFingerprints()

    /// At most this many masters are kept (about 0.7 MB each).
    private static let cacheLimit = 64
    private let masters = Mutex<[String: Slot]>([:])

    /// One finger's place in the cache: its master once made. Callers
    /// asking for the same finger at once wait for one master rather than
    /// each growing their own (a fifth of a second of a core, four seconds
    /// in a debug build); other fingers are made meanwhile.
    private final class Slot: Sendable {
        let master = Mutex<SyntheticFinger?>(nil)
    }

    package init() {}

    /// The master print of finger `id`, made on first use.
    package func finger(_ id: String) -> SyntheticFinger {
        let slot = masters.withLock { cache in
            if let slot = cache[id] { return slot }
            if cache.count >= Self.cacheLimit { cache.removeAll() }
            let slot = Slot()
            cache[id] = slot
            return slot
        }
        return slot.master.withLock { master in
            if let master { return master }
            let made = SyntheticFinger(id: id)
            master = made
            return made
        }
    }

    /// Impression `number` of finger `id`: the same ID and number give the
    /// same image, byte for byte.
    package func impression(of id: String, number: Int) -> GreyImage {
        Impression.take(of: finger(id), number: number)
    }
}

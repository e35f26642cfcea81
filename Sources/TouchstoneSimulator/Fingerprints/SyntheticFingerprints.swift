import Glibc
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
    /// each growing their own (a fifth of a second of a core; this module
    /// is optimised in debug builds too); other fingers are made meanwhile.
    private final class Slot: Sendable {
        let master = Mutex<SyntheticFinger?>(nil)
    }

    /// Where masters are kept between processes (each `sim touch` is a
    /// process of its own): nil, in memory only.
    private let folder: String?

    /// `folder`: where masters are kept on disk as well (created 0700 on
    /// first use), a file per finger.
    package init(keepingIn folder: String? = nil) {
        self.folder = folder
    }

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
            let file = folder.map { $0 + "/" + Self.fileName(id) }
            if let file, let kept = SyntheticFinger(id: id, keptIn: file) {
                master = kept
                return kept
            }
            let made = SyntheticFinger(id: id)
            if let folder, let file {
                mkdir(folder, 0o700)
                made.keep(in: file)
            }
            master = made
            return made
        }
    }

    /// A kept master's file name: FNV-1a-64 of the ID in hex (an ID may
    /// hold any character but a control one).
    package static func fileName(_ id: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + ".master"
    }

    /// Impression `number` of finger `id`: the same ID and number give the
    /// same image, byte for byte.
    package func impression(of id: String, number: Int) -> GreyImage {
        Impression.take(of: finger(id), number: number)
    }
}

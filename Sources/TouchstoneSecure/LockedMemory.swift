import CSodium
import Glibc

/// Memory for `SecureBytes`: locked in RAM (never swapped) and left out of
/// core dumps.
///
/// Both need whole pages: `mlock` locks every page a range touches, and
/// `madvise(MADV_DONTDUMP)` refuses an address that does not start a page
/// (EINVAL), which is what `sodium_mlock` on a `malloc`ed buffer silently
/// got. So every buffer here is made of whole pages:
///
/// - small buffers (keys, hashes, short secrets: up to 512 bytes) take a
///   slot in a slab, a page locked and marked once, reused for the life of
///   the process. Most vault operations then make no system call for their
///   keys;
/// - larger buffers get pages of their own, locked and marked on
///   allocation and unlocked on release.
///
/// Released memory is zeroed before it is reused or unmapped. Locking is
/// best effort (RLIMIT_MEMLOCK can refuse it); `Allocation.isLocked` says
/// whether it held.
enum LockedMemory {
    // @unchecked Sendable: addresses only; the memory is guarded by its
    // owner (SecureBytes) and the slab table by the mutex.
    struct Allocation: @unchecked Sendable {
        let base: UnsafeMutableRawPointer
        let isLocked: Bool
    }

    /// Slot sizes of the slabs; a buffer takes the smallest that fits.
    static let slotSizes = [64, 512]
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    private struct Slab: @unchecked Sendable {
        let page: UnsafeMutableRawPointer
        let slotSize: Int
        let isLocked: Bool
        /// One bit per slot, set when taken.
        var taken: UInt64 = 0
        var slots: Int { min(64, LockedMemory.pageSize / slotSize) }
        var isFull: Bool { taken.nonzeroBitCount == slots }
    }

    /// The slab table behind a pthread mutex (not Synchronization's Mutex,
    /// whose futex ThreadSanitizer cannot see).
    private final class SlabTable: @unchecked Sendable {
        private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(mutex, nil)
            return mutex
        }()
        private var slabs: [Slab] = []

        func withLock<R>(_ body: (inout [Slab]) -> R) -> R {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return body(&slabs)
        }
    }

    private static let slabs = SlabTable()

    static func allocate(_ count: Int) -> Allocation {
        guard let slotSize = slotSizes.first(where: { count <= $0 }) else { return allocatePages(count) }
        return slabs.withLock { slabs in
            let index: Int
            if let free = slabs.firstIndex(where: { $0.slotSize == slotSize && !$0.isFull }) {
                index = free
            } else {
                let pages = allocatePages(pageSize)
                slabs.append(Slab(page: pages.base, slotSize: slotSize, isLocked: pages.isLocked))
                index = slabs.count - 1
            }
            let slot = (~slabs[index].taken).trailingZeroBitCount
            slabs[index].taken |= 1 << UInt64(slot)
            return Allocation(base: slabs[index].page + slot * slotSize, isLocked: slabs[index].isLocked)
        }
    }

    /// Zeroes `count` bytes at `base` and gives the memory back.
    static func release(_ base: UnsafeMutableRawPointer, count: Int) {
        guard let slotSize = slotSizes.first(where: { count <= $0 }) else { return releasePages(base, count) }
        sodium_memzero(base, slotSize)
        let address = UInt(bitPattern: base)
        let page = address & ~UInt(pageSize - 1)
        slabs.withLock { slabs in
            guard let index = slabs.firstIndex(where: { UInt(bitPattern: $0.page) == page && $0.slotSize == slotSize }) else {
                preconditionFailure("LockedMemory.release of memory it did not allocate")
            }
            let slot = Int(address - page) / slotSize
            slabs[index].taken &= ~(1 << UInt64(slot))
        }
    }

    private static func pageRounded(_ count: Int) -> Int {
        (max(count, 1) + pageSize - 1) / pageSize * pageSize
    }

    private static func allocatePages(_ count: Int) -> Allocation {
        let length = pageRounded(count)
        guard let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapped != MAP_FAILED else {
            fatalError("out of memory: mmap of \(length) bytes failed (errno \(errno))")
        }
        _ = madvise(mapped, length, MADV_DONTDUMP)
        let locked = mlock(mapped, length) == 0
        return Allocation(base: mapped, isLocked: locked)
    }

    private static func releasePages(_ base: UnsafeMutableRawPointer, _ count: Int) {
        let length = pageRounded(count)
        sodium_memzero(base, length)
        munlock(base, length)
        munmap(base, length)
    }
}

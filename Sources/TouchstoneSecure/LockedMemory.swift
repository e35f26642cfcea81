internal import CSodium
import Glibc
import TouchstonePOSIX

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
        /// The slab it came from (its index in the pool), -1 for pages of
        /// its own: given back on release, so no lookup is needed.
        let slab: Int
    }

    /// Slot sizes of the slabs; a buffer takes the smallest that fits.
    static let slotSizes = [64, 512]
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    private struct Slab: @unchecked Sendable {
        let page: UnsafeMutableRawPointer
        let sizeClass: Int
        let slots: Int
        let isLocked: Bool
        /// One bit per slot, set when taken.
        var taken: UInt64 = 0
        /// Whether the slab's index is on its size class's free list.
        var listed = true
        var isFull: Bool { taken.nonzeroBitCount == slots }
    }

    /// The slabs and their free lists. Allocating and releasing take
    /// constant time however many slabs there are: each size class keeps a
    /// list of its slabs that have a free slot, and an allocation carries
    /// its slab's index.
    private struct SlabState {
        var slabs: [Slab] = []
        /// Per size class: indices of slabs that may have a free slot (a
        /// slab that filled up is dropped from the list when met).
        var withFreeSlots: [[Int]] = LockedMemory.slotSizes.map { _ in [] }

        mutating func take(sizeClass: Int, slotSize: Int, pageSize: Int) -> Allocation {
            var index: Int? = nil
            while let candidate = withFreeSlots[sizeClass].last {
                if !slabs[candidate].isFull { index = candidate; break }
                withFreeSlots[sizeClass].removeLast()
                slabs[candidate].listed = false
            }
            if index == nil {
                let pages = LockedMemory.allocatePages(pageSize)
                slabs.append(Slab(page: pages.base, sizeClass: sizeClass, slots: LockedMemory.slotsPerPage(slotSize, pageSize: pageSize),
                                  isLocked: pages.isLocked))
                index = slabs.count - 1
                withFreeSlots[sizeClass].append(index!)
            }
            let i = index!
            let slot = (~slabs[i].taken).trailingZeroBitCount
            slabs[i].taken |= 1 << UInt64(slot)
            return Allocation(base: slabs[i].page + slot * slotSize, isLocked: slabs[i].isLocked, slab: i)
        }

        mutating func give(_ address: UInt, page: UInt, slab i: Int, sizeClass: Int, slotSize: Int) {
            guard slabs.indices.contains(i), UInt(bitPattern: slabs[i].page) == page, slabs[i].sizeClass == sizeClass else {
                preconditionFailure("LockedMemory.release of memory it did not allocate")
            }
            let slot = Int(address - page) / slotSize
            slabs[i].taken &= ~(1 << UInt64(slot))
            if !slabs[i].listed {
                slabs[i].listed = true
                withFreeSlots[sizeClass].append(i)
            }
        }
    }

    /// The slab state behind a pthread mutex (not Synchronization's Mutex,
    /// whose futex ThreadSanitizer cannot see). The state lives at a fixed
    /// address, allocated once for the process: the mutex is what keeps
    /// accesses apart, so Swift's per-access exclusivity bookkeeping for a
    /// class property would only repeat it on every key buffer.
    final class SlabPool: @unchecked Sendable {
        private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(mutex, nil)
            return mutex
        }()
        private let state: UnsafeMutablePointer<SlabState> = {
            let state = UnsafeMutablePointer<SlabState>.allocate(capacity: 1)
            state.initialize(to: SlabState())
            return state
        }()
        let pageSize = LockedMemory.pageSize

        func take(sizeClass: Int, slotSize: Int) -> Allocation {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return state.pointee.take(sizeClass: sizeClass, slotSize: slotSize, pageSize: pageSize)
        }

        func give(_ allocation: Allocation, sizeClass: Int, slotSize: Int) {
            let address = UInt(bitPattern: allocation.base)
            let page = address & ~UInt(pageSize - 1)
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            state.pointee.give(address, page: page, slab: allocation.slab, sizeClass: sizeClass, slotSize: slotSize)
        }

        /// Slots in a page of `slotSize`-byte slots.
        func slotsPerPage(_ slotSize: Int) -> Int { LockedMemory.slotsPerPage(slotSize, pageSize: pageSize) }

        /// Pages the pool holds.
        var pageCount: Int {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return state.pointee.slabs.count
        }

        /// A pool's pages go with it (the process's pool lives as long as
        /// the process).
        deinit {
            for slab in state.pointee.slabs { LockedMemory.releasePages(slab.page, pageSize) }
            state.deinitialize(count: 1)
            state.deallocate()
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }
    }

    /// Slots in a page: at most 64 (one bit each in `Slab.taken`).
    static func slotsPerPage(_ slotSize: Int, pageSize: Int) -> Int { min(64, pageSize / slotSize) }

    /// The process's pool. (Tests make pools of their own.)
    private static let slabs = SlabPool()

    /// The size class (index into `slotSizes`) for `count` bytes, or nil
    /// when the buffer gets pages of its own.
    private static func sizeClass(_ count: Int) -> Int? {
        slotSizes.firstIndex { count <= $0 }
    }

    static func allocate(_ count: Int) -> Allocation {
        guard let sizeClass = sizeClass(count) else { return allocatePages(count) }
        return slabs.take(sizeClass: sizeClass, slotSize: slotSizes[sizeClass])
    }

    /// Zeroes the `count` bytes of `allocation` and gives the memory back.
    static func release(_ allocation: Allocation, count: Int) {
        guard let sizeClass = sizeClass(count) else { return releasePages(allocation.base, count) }
        let slotSize = slotSizes[sizeClass]
        sodium_memzero(allocation.base, slotSize)
        slabs.give(allocation, sizeClass: sizeClass, slotSize: slotSize)
    }

    private static func pageRounded(_ count: Int) -> Int {
        (max(count, 1) + pageSize - 1) / pageSize * pageSize
    }

    fileprivate static func allocatePages(_ count: Int) -> Allocation {
        let length = pageRounded(count)
        guard let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapped != MAP_FAILED else {
            let error = Errno.current
            fatalError("out of memory: mmap of \(length) bytes failed: \(error) (errno \(error.rawValue))")
        }
        _ = madvise(mapped, length, MADV_DONTDUMP)
        // Best effort: RLIMIT_MEMLOCK may refuse it (ENOMEM, EPERM).
        let locked = (try? valueOrErrno(retryOnInterrupt: false) { mlock(mapped, length) }) != nil
        return Allocation(base: mapped, isLocked: locked, slab: -1)
    }

    fileprivate static func releasePages(_ base: UnsafeMutableRawPointer, _ count: Int) {
        let length = pageRounded(count)
        sodium_memzero(base, length)
        munlock(base, length)
        munmap(base, length)
    }
}

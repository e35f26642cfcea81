import Foundation
import Testing
import TestScopes
import Synchronization
import TestRigs
@testable import TouchstoneSecure

/// SecureBytes' memory: locked, out of core dumps, zeroed on release.
@Suite("Secure memory", .offPool)
struct SecureMemoryTests {
    /// Whether a sanitizer runtime is in the process (RTLD_DEFAULT lookup).
    static let underSanitizer = ["__tsan_init", "__asan_init"].contains { (name: String) in dlsym(nil, name) != nil }

    @Test("keys, short and long secrets are locked in RAM and left out of core dumps",
          arguments: [1, 32, 64, 65, 300, 512, 513, 4096, 100_000, 1 << 20])
    func lockedAndNotDumped(_ count: Int) throws {
        let bytes = SecureBytes.random(count: count)
        #expect(bytes.isLocked)
        let flags = try bytes.withUnsafeBytes { try memoryFlags($0.baseAddress!) }
        // Under AddressSanitizer or ThreadSanitizer (scripts/sanitize, not CI)
        // mlock is intercepted and does nothing: no VM_LOCKED to see there.
        let mlockWorks = !Self.underSanitizer
        #expect(!mlockWorks || flags.contains("lo"), "VmFlags \(flags): not locked")   // VM_LOCKED
        #expect(flags.contains("dd"), "VmFlags \(flags): would be dumped")  // VM_DONTDUMP
        // The last byte is in a mapping with the same flags (a long buffer
        // spans several pages).
        let last = try bytes.withUnsafeBytes { try memoryFlags($0.baseAddress! + (count - 1)) }
        #expect((!mlockWorks || last.contains("lo")) && last.contains("dd"))
    }

    @Test("a released small buffer's memory is zeroed before anything else can take it")
    func zeroedOnRelease() {
        var address: UnsafeRawPointer?
        do {
            let key = SecureBytes(count: 32)
            key.withUnsafeMutableBytes { buffer in
                for i in buffer.indices { buffer[i] = 0xA5 }
                address = UnsafeRawPointer(buffer.baseAddress!)
            }
            #expect(key.withUnsafeBytes { $0.allSatisfy { $0 == 0xA5 } })
        }
        // The slab page stays mapped for the process's life, so reading the
        // slot after release is defined here (it is the point of the test).
        let slot = UnsafeRawBufferPointer(start: address, count: 64)
        #expect(slot.allSatisfy { $0 == 0 })
    }

    @Test("released slots are taken again before any new page, with thousands of buffers held",
          arguments: [32, 300])
    func slotsReused(_ count: Int) throws {
        // A pool of its own: other tests' buffers come from the process's.
        let pool = LockedMemory.SlabPool()
        let sizeClass = try #require(LockedMemory.slotSizes.firstIndex { count <= $0 })
        let slotSize = LockedMemory.slotSizes[sizeClass]
        func take() -> LockedMemory.Allocation { pool.take(sizeClass: sizeClass, slotSize: slotSize) }
        var held = (0..<10_000).map { _ in take() }
        let pages = pool.pageCount
        #expect(pages == (10_000 + pool.slotsPerPage(slotSize) - 1) / pool.slotsPerPage(slotSize))
        // Free every other slot: each page gets free slots back, pages
        // filled long ago included.
        for (n, allocation) in held.enumerated() where n % 2 == 1 { pool.give(allocation, sizeClass: sizeClass, slotSize: slotSize) }
        held = held.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let refill = (0..<5_000).map { _ in take() }
        #expect(pool.pageCount == pages, "\(pool.pageCount - pages) new pages while 5000 slots were free")
        // Every buffer has its own slot.
        #expect(Set((held + refill).map { UInt(bitPattern: $0.base) }).count == held.count + refill.count)
    }

    @Test("buffers taken and released from many threads at once never overlap and keep their contents")
    func concurrentAllocations() {
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var held: [(SecureBytes, UInt8)] = []
            for round in 0..<2_000 {
                let value = UInt8(truncatingIfNeeded: thread &* 31 &+ round)
                let bytes = SecureBytes(count: [16, 32, 64, 200, 512][round % 5])
                bytes.withUnsafeMutableBytes { for i in $0.indices { $0[i] = value } }
                held.append((bytes, value))
                if held.count > 40 { held.removeFirst(20) }
                for (b, v) in held where !b.withUnsafeBytes({ $0.allSatisfy { $0 == v } }) {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }
}



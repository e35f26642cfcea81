internal import CSodium
import FoundationEssentials

/// libsodium must be initialised once before any of its functions are used.
/// A global `let` is initialised lazily and exactly once, from any thread.
private let sodiumReady: Bool = sodium_init() >= 0

/// Ensures libsodium is initialised; traps if it cannot be (no entropy source),
/// since nothing in Touchstone is safe without it.
@inline(__always)
package func ensureSodium() {
    precondition(sodiumReady, "libsodium could not be initialised")
}

/// A fixed-size buffer for key material and secrets.
///
/// - Its memory is locked (best effort: mlock can be refused by
///   RLIMIT_MEMLOCK) so it is not written to swap, and left out of core
///   dumps (MADV_DONTDUMP); see `LockedMemory`.
/// - `deinit` wipes the whole buffer and gives it back.
/// - Equality is constant-time (`sodium_memcmp`).
/// - The bytes are reachable only through `withUnsafeBytes` (it is
///   `ContiguousBytes`), so callers cannot make an untracked copy by accident.
///
/// The public API takes secrets as `some ContiguousBytes` (`Data`,
/// `[UInt8]`) and copies them in (a `SecureBytes` is shared, never written
/// after it was made): the caller's copy is the caller's to wipe.
/// `init(count:initializingWith:)` writes a new buffer in place.
public final class SecureBytes: @unchecked Sendable, ContiguousBytes {
    // @unchecked Sendable: the storage is written only during initialisation
    // (or through the package's `withUnsafeMutableBytes` by its single owner
    // before it is shared); every later access is a read.
    // Internal, not private: the accessors below are inlinable, so the
    // other modules' calls are specialised rather than generic.
    @usableFromInline let base: UnsafeMutableRawPointer
    /// Where `base` came from, to give it back.
    private let allocation: LockedMemory.Allocation
    public let count: Int
    /// Whether mlock succeeded (reported for the memory-hygiene tests).
    package let isLocked: Bool

    @inlinable var storage: UnsafeMutableRawBufferPointer { .init(start: base, count: count) }

    /// A zero-filled buffer of `count` bytes.
    package init(count: Int) {
        ensureSodium()
        precondition(count >= 0)
        self.count = count
        allocation = LockedMemory.allocate(count)
        base = allocation.base
        isLocked = allocation.isLocked
    }

    /// A buffer of `count` bytes that `body` writes (it starts zeroed).
    /// If `body` throws, the buffer is wiped and the error passed on.
    public convenience init<E: Error>(count: Int, initializingWith body: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        self.init(count: count)
        try body(storage)
    }

    /// A copy of `bytes`. The caller stays responsible for wiping its source.
    public convenience init(copying bytes: some ContiguousBytes) {
        self.init(count: bytes.withUnsafeBytes { $0.count })
        bytes.withUnsafeBytes { if $0.count > 0 { storage.copyMemory(from: $0) } }
    }

    /// `bytes` in wiping storage: itself when it is a `SecureBytes` already
    /// (never written after it was made, so it can be shared), else a copy.
    /// No copy is no copy in the registers either: a copy's vector
    /// registers can end up on the stack (docs/reliability.md, "Secrets in
    /// memory").
    package static func wiping(_ bytes: some ContiguousBytes) -> SecureBytes {
        bytes as? SecureBytes ?? SecureBytes(copying: bytes)
    }

    /// `init(copying:)` for a raw buffer, without the generic call (the
    /// vault's read path makes several).
    package convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count)
        if bytes.count > 0 {
            storage.copyMemory(from: bytes)
        }
    }

    /// `count` random bytes from libsodium's CSPRNG.
    public static func random(count: Int) -> SecureBytes {
        let out = SecureBytes(count: count)
        if count > 0 { randombytes_buf(out.base, count) }
        return out
    }

    /// Takes the bytes of `array` and wipes the array's storage.
    /// Useful for data that arrives as `[UInt8]` from an API we do not own.
    public convenience init(consuming array: inout [UInt8]) {
        self.init(count: array.count)
        array.withUnsafeMutableBytes { src in
            if src.count > 0 {
                storage.copyMemory(from: UnsafeRawBufferPointer(src))
                sodium_memzero(src.baseAddress, src.count)
            }
        }
        array.removeAll()
    }

    deinit {
        LockedMemory.release(allocation, count: count)  // zeroes, then gives back
    }

    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(storage))
    }

    @inlinable
    package func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(storage)
    }

    /// A new buffer holding `self` followed by `other`.
    package func appending(_ other: SecureBytes) -> SecureBytes {
        let out = SecureBytes(count: count + other.count)
        out.withUnsafeMutableBytes { dst in
            if count > 0 { dst.baseAddress!.copyMemory(from: base, byteCount: count) }
            other.withUnsafeBytes { src in
                if src.count > 0 { (dst.baseAddress! + count).copyMemory(from: src.baseAddress!, byteCount: src.count) }
            }
        }
        return out
    }
}

extension SecureBytes: Equatable {
    /// Constant-time comparison of equal-length buffers; different lengths
    /// compare unequal (the length is not secret).
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.count == 0 { return true }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible {
    /// Never prints the contents.
    public var description: String { "SecureBytes(\(count) bytes)" }
    public var debugDescription: String { description }
}

/// Zeroes `bytes` of the calling thread's stack below this call: what the
/// functions it ran before left there (locals, and vector registers that
/// a memcpy filled with key bytes and a lazy symbol binding then saved).
/// For threads that run vault and TPM work, whenever they go idle.
package func scrubStack(bytes: Int = 64 * 1024) {
    ts_scrub_stack(bytes)
}

/// Wipes a byte array in place (for transient buffers that had to be arrays).
package func secureWipe(_ array: inout [UInt8]) {
    array.withUnsafeMutableBytes { if $0.count > 0 { sodium_memzero($0.baseAddress, $0.count) } }
}

extension SecureBytes {
    /// Keyed BLAKE2b-256 (libsodium's crypto_generichash) of these bytes
    /// under `key`, into locked memory.
    package func keyedBLAKE2b(key: SecureBytes) -> SecureBytes {
        ensureSodium()
        let out = SecureBytes(count: 32)
        out.withUnsafeMutableBytes { digest in
            key.withUnsafeBytes { k in
                withUnsafeBytes { input in
                    _ = crypto_generichash(digest.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                                           input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
                                           k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
        }
        return out
    }
}

import Foundation

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC: not affected by changes
/// of the wall clock).
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Runs `body` and returns its result with the time it took, in nanoseconds.
func timed<R>(_ body: () throws -> R) rethrows -> (result: R, nanoseconds: UInt64) {
    let start = monotonicNanoseconds()
    let result = try body()
    return (result, monotonicNanoseconds() - start)
}

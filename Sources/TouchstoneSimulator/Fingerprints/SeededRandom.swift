import Foundation

/// A seeded pseudo-random generator (SplitMix64) for the synthetic
/// fingerprints: the same seed gives the same sequence on every run and
/// every machine, unlike Swift's `Hasher` or `SystemRandomNumberGenerator`.
/// Not for anything secret.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A generator seeded from `text` and a few numbers (FNV-1a over the
    /// UTF-8 bytes, then each number's little-endian bytes).
    init(_ text: String, _ numbers: Int...) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        for byte in text.utf8 { mix(byte) }
        for number in numbers {
            mix(0xff)
            for shift in stride(from: 0, to: 64, by: 8) { mix(UInt8(truncatingIfNeeded: UInt64(bitPattern: Int64(number)) >> UInt64(shift))) }
        }
        state = hash
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A uniform Double in [0, 1).
    mutating func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// A uniform Double in `range`.
    mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + unit() * (range.upperBound - range.lowerBound)
    }

    /// A random sign, -1 or 1.
    mutating func sign() -> Double {
        next() & 1 == 0 ? -1 : 1
    }

    /// A standard normal sample (Box-Muller).
    mutating func gaussian() -> Double {
        let u = max(unit(), 0x1.0p-53), v = unit()
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}

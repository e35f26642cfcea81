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

/// A smooth random field over the plane: random values on a coarse grid of
/// `spacing` pixels, interpolated with a smoothstep weighting. Orientation
/// perturbations, frequency maps, warps and distortions are built from it.
struct SmoothNoise: Sendable {
    private let columns: Int
    private let rows: Int
    private let spacing: Double
    private let values: [Double]

    /// A field over `width` x `height` pixels with values of standard
    /// deviation about `amplitude`.
    init(width: Int, height: Int, spacing: Double, amplitude: Double, random: inout SeededRandom) {
        self.spacing = spacing
        columns = Int((Double(width) / spacing).rounded(.up)) + 2
        rows = Int((Double(height) / spacing).rounded(.up)) + 2
        var values: [Double] = []
        values.reserveCapacity(columns * rows)
        for _ in 0..<(columns * rows) { values.append(amplitude * random.gaussian()) }
        self.values = values
    }

    /// The field's value at (`x`, `y`); outside the grid, its edge value.
    func callAsFunction(_ x: Double, _ y: Double) -> Double {
        let gx = min(max(x / spacing, 0), Double(columns - 1) - 1e-9)
        let gy = min(max(y / spacing, 0), Double(rows - 1) - 1e-9)
        let ix = Int(gx), iy = Int(gy)
        let fx = gx - Double(ix), fy = gy - Double(iy)
        let sx = fx * fx * (3 - 2 * fx), sy = fy * fy * (3 - 2 * fy)
        let i = iy * columns + ix
        let top = values[i] + (values[i + 1] - values[i]) * sx
        let bottom = values[i + columns] + (values[i + columns + 1] - values[i + columns]) * sx
        return top + (bottom - top) * sy
    }
}

/// Per-operation wall-clock times of one side (vault or plain SQLite) of
/// one measured operation, and what they add up to.
struct OperationSamples {
    private(set) var nanoseconds: [UInt64] = []

    init(expected: Int) { nanoseconds.reserveCapacity(expected) }

    /// Times one operation and keeps the sample.
    @inline(__always)
    mutating func time<R>(_ body: () throws -> R) rethrows -> R {
        let start = monotonicNanoseconds()
        let result = try body()
        nanoseconds.append(monotonicNanoseconds() - start)
        return result
    }

    /// Throughput over the summed operation times (the untimed work between
    /// operations, such as checking results, is left out), median and p90.
    var figures: ThroughputFigures {
        let total = nanoseconds.reduce(0, +)
        let latency = nanoseconds.isEmpty ? nil : LatencyStats(nanoseconds: nanoseconds)
        return ThroughputFigures(operations: nanoseconds.count, seconds: Double(total) / 1e9,
                                 medianMicroseconds: latency.map { $0.median * 1000 },
                                 p90Microseconds: latency.map { $0.p90 * 1000 })
    }
}

/// What one side of one operation achieved.
struct ThroughputFigures: Codable {
    /// Operations timed (for a listing: items listed).
    var operations: Int
    /// Their summed wall-clock time.
    var seconds: Double
    /// Per-operation median and 90th percentile (nil for a listing, which is
    /// a single timed call).
    var medianMicroseconds: Double?
    var p90Microseconds: Double?

    var perSecond: Double { seconds > 0 ? Double(operations) / seconds : 0 }
}

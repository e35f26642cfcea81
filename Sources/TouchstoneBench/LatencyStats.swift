/// Summary of a set of latency samples, in milliseconds.
struct LatencyStats: Codable {
    var samples: Int
    var median: Double
    /// 90th and 95th percentiles, nearest rank.
    var p90: Double
    var p95: Double
    var mean: Double
    var min: Double
    var max: Double

    init(nanoseconds: [UInt64]) {
        precondition(!nanoseconds.isEmpty, "no samples")
        let ms = nanoseconds.map { Double($0) / 1_000_000 }.sorted()
        let n = ms.count
        samples = n
        median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2
        // nearest rank: the ceil(q n)-th smallest, 1-based
        func percentile(_ q: Double) -> Double { ms[Swift.max(Int((q * Double(n)).rounded(.up)), 1) - 1] }
        p90 = percentile(0.9)
        p95 = percentile(0.95)
        mean = ms.reduce(0, +) / Double(n)
        min = ms[0]
        max = ms[n - 1]
    }
}

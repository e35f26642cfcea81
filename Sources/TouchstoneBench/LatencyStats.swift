/// Summary of a set of latency samples, in milliseconds.
struct LatencyStats: Codable {
    var samples: Int
    var median: Double
    /// 90th percentile, nearest rank.
    var p90: Double
    var mean: Double
    var min: Double
    var max: Double

    init(nanoseconds: [UInt64]) {
        precondition(!nanoseconds.isEmpty, "no samples")
        let ms = nanoseconds.map { Double($0) / 1_000_000 }.sorted()
        let n = ms.count
        samples = n
        median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2
        let rank = Int((0.9 * Double(n)).rounded(.up))  // nearest-rank: ceil(0.9 n), 1-based
        p90 = ms[Swift.max(rank, 1) - 1]
        mean = ms.reduce(0, +) / Double(n)
        min = ms[0]
        max = ms[n - 1]
    }
}

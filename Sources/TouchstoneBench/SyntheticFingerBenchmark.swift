import Foundation
import TouchstoneSimulator

/// `TouchstoneBench fingers [--fingers N] [--impressions N]`: how long the
/// simulator's synthetic fingerprints take to make: each finger's master
/// print (grown once, then kept), each impression from a kept master, and
/// its PNG encoding. No TPM and no reader: the generator alone.
struct SyntheticFingerOptions {
    var fingers = 10
    var impressions = 8

    static let usage = """
        usage: TouchstoneBench fingers [--fingers N] [--impressions N]

        Times the simulator's synthetic fingerprint generator: the master print of N
        fingers (each from a fresh generator), then N impressions of each from the kept
        master, and one PNG encoding per impression: median, p95 and max wall time.

          --fingers N       fingers (default 10)
          --impressions N   impressions of each (default 8)
        """

    /// Parses `arguments` (after `fingers`).
    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--fingers": fingers = try BenchOptions.count(argument, rest.popFirst(), minimum: 1)
            case "--impressions": impressions = try BenchOptions.count(argument, rest.popFirst(), minimum: 1)
            case "--help", "-h": throw BenchError.usage(nil)
            default: throw BenchError.usage("unknown option \(argument)")
            }
        }
    }
}

/// Runs the generator benchmark and returns its report as text.
func runSyntheticFingerBenchmark(_ options: SyntheticFingerOptions) throws -> String {
    var masters: [UInt64] = [], impressions: [UInt64] = [], encodings: [UInt64] = []
    for index in 0..<options.fingers {
        let generator = SyntheticFingerprints()
        let id = "bench-finger-\(index)"
        masters.append(timed { generator.finger(id) }.nanoseconds)
        for number in 1...options.impressions {
            let (image, nanoseconds) = timed { generator.impression(of: id, number: number) }
            impressions.append(nanoseconds)
            encodings.append(try timed { try image.png() }.nanoseconds)
        }
    }
    func row(_ name: String, _ samples: [UInt64]) -> String {
        let stats = LatencyStats(nanoseconds: samples)
        return name.padding(toLength: 26, withPad: " ", startingAt: 0)
            + String(format: "%6d %10.1f %10.1f %10.1f", stats.samples, stats.median, stats.p95, stats.max)
    }
    return """
        synthetic fingerprints (\(Impression.width)x\(Impression.height) impressions, \(SyntheticFinger.width)x\(SyntheticFinger.height) masters)
        what                           n  median ms     p95 ms     max ms
        \(row("master print", masters))
        \(row("impression (kept master)", impressions))
        \(row("PNG encoding", encodings))
        """
}

import Foundation
import Synchronization
import TouchstoneFingerprint
import TouchstonePOSIX
import TouchstoneSimulator

/// `TouchstoneBench matching [--fingers N]`: libfprint's image pipeline
/// (NBIS minutiae, bozorth3 at its threshold of 40) on the simulator's
/// synthetic fingers, as Touchstone calls it: each finger enrolled on
/// `virtual_image` with its impressions 1-5 (five stages), then verified
/// with its impressions 6-8 (genuine) and with impression 6 of every other
/// finger (impostor). The FVC protocol compares impressions one to one;
/// libfprint compares a touch with an enrolled print of five images, and
/// Touchstone's items open on that comparison, so that is what is counted.
struct MatchingOptions {
    var fingers = 30
    /// Where to write the score distributions as a PNG, if anywhere.
    var plot: String?

    static let usage = """
        usage: TouchstoneBench matching [--fingers N] [--plot FILE.png]

        Enrols N synthetic fingers on libfprint's virtual_image reader (impressions 1-5)
        and verifies each with its impressions 6-8 (genuine) and with impression 6 of every
        other finger (impostor): matches at libfprint's threshold, the bozorth3 scores
        libfprint logs, and the time from a touch to the verify's answer.

          --fingers N       fingers (default 30; N x (N-1) impostor verifies)
          --plot FILE.png   also draw the score distributions (impostor above, genuine
                            below, libfprint's threshold dashed, a tick every 50)
        """

    init(arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--fingers": fingers = try BenchOptions.count(argument, rest.popFirst(), minimum: 2)
            case "--plot":
                guard let file = rest.popFirst() else { throw BenchError.usage("--plot needs a file") }
                plot = file
            case "--help", "-h": throw BenchError.usage(nil)
            default: throw BenchError.usage("unknown option \(argument)")
            }
        }
    }
}

/// One verify's outcome: matched or not, the scores libfprint logged for it
/// (one per enrolled image until one reached the threshold), its time.
struct VerifyOutcome {
    let matched: Bool
    let scores: [Int]
    let nanoseconds: UInt64
    /// The verify's score: the highest it logged (for a match, the first
    /// at or above the threshold: libfprint stops there).
    var score: Int { scores.max() ?? 0 }
}

/// Runs the matching benchmark; its report as text.
func runMatchingBenchmark(_ options: MatchingOptions) async throws -> String {
    ProcessEnvironment.set("G_MESSAGES_DEBUG", "all")
    let logged = Mutex<[Int]>([])
    FprintLog.recordScores { score in logged.withLock { $0.append(score) } }
    let folder = try makeBenchFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let socketPath = folder + "/image"
    let socket = VirtualReaderSocket(path: socketPath)
    let generator = SyntheticFingerprints()
    let ids = (0..<options.fingers).map { "bench-match-\($0)" }
    var genuine: [VerifyOutcome] = [], impostor: [VerifyOutcome] = []
    // Two matching touches of one finger (Touchstone's `matching
    // --touches 2`): the owner's pairs among impressions 6-8, and a
    // stranger's impression 7 after an impression 6 that matched.
    var genuinePairs = 0, genuinePairsMatched = 0, impostorSecondTouches = 0
    /// Every impostor match, named: "enrolled <- stranger (score), again: yes/no".
    var impostorMatches: [String] = []
    var classes: [String: String] = [:]
    for id in ids { classes[id] = SyntheticFinger.plan(id: id).0.rawValue }
    var sameClassImpostorMatches = 0

    // Every finger's impostor image, made once: the generator keeps at
    // most 64 masters, and a loop over more fingers would grow them again.
    let impostorImages = Dictionary(uniqueKeysWithValues: ids.map { ($0, generator.impression(of: $0, number: 6)) })
    for id in ids {
        // A reader of its own for each finger: libfprint 1.94 models a
        // reader's temperature and refuses ("too hot") after minutes of
        // continuous use; a person's touches never run that long.
        let backend = LibfprintReader(virtualReaders: .init(image: socketPath))
        guard let reader = try await backend.readers().first(where: { $0.driver == "virtual_image" }) else {
            throw BenchError.setup("libfprint has no virtual_image reader")
        }
        try await backend.open(reader.identity)
        let print = try await enroll(id, on: reader, backend: backend, socket: socket, generator: generator)
        func verify(with image: GreyImage) async throws -> VerifyOutcome {
            logged.withLock { $0 = [] }
            let start = ContinuousClock.now
            try await socket.sendImage(image)
            let matched = try await backend.verify(print, timeout: .seconds(60), events: { _ in })
            let elapsed = ContinuousClock.now - start
            return VerifyOutcome(matched: matched, scores: logged.withLock { $0 }, nanoseconds: UInt64(elapsed.wholeMilliseconds) * 1_000_000)
        }
        var own: [VerifyOutcome] = []
        for number in 6...8 { own.append(try await verify(with: generator.impression(of: id, number: number))) }
        genuine += own
        for (first, second) in [(0, 1), (1, 2), (0, 2)] {
            genuinePairs += 1
            if own[first].matched && own[second].matched { genuinePairsMatched += 1 }
        }
        for other in ids where other != id {
            let outcome = try await verify(with: impostorImages[other]!)
            impostor.append(outcome)
            if outcome.matched, classes[other] == classes[id] { sameClassImpostorMatches += 1 }
            if outcome.matched {
                let again = try await verify(with: generator.impression(of: other, number: 7))
                if again.matched { impostorSecondTouches += 1 }
                impostorMatches.append("\(id) <- \(other) impression 6 (score \(outcome.score)); impression 7: "
                                       + (again.matched ? "matched (\(again.score))" : "no match (\(again.score))"))
            }
        }
        await backend.tearDown()
    }
    let report = MatchingReport(genuine: genuine, impostor: impostor, sameClassImpostorMatches: sameClassImpostorMatches,
                                fingers: options.fingers,
                                twoTouches: .init(genuinePairs: genuinePairs, genuinePairsMatched: genuinePairsMatched,
                                                  impostorBothMatched: impostorSecondTouches))
    FileHandle.standardError.write(Data((["impostor matches:"] + impostorMatches).joined(separator: "\n  ").utf8 + [10]))
    if let plot = options.plot {
        try Data(try report.plot().png()).write(to: URL(fileURLWithPath: plot))
    }
    return report.text
}

/// Enrols finger `id` with impressions 1, 2, ...: each sent once the
/// previous one's progress (a stage or a retry) came, none after the last.
private func enroll(_ id: String, on reader: ReaderInfo, backend: LibfprintReader, socket: VirtualReaderSocket,
                    generator: SyntheticFingerprints) async throws -> EnrolledPrint {
    let events = Mutex<Int>(0)
    let done = Mutex<Bool>(false)
    let enrolling = Task {
        defer { done.withLock { $0 = true } }
        return try await backend.enroll(.rightIndex, username: "bench", on: reader.identity, timeout: .seconds(120),
                                        longest: nil) { _ in events.withLock { $0 += 1 } }
    }
    var number = 1
    while !done.withLock({ $0 }), number <= 20 {
        let seen = events.withLock { $0 }
        try await socket.sendImage(generator.impression(of: id, number: number))
        number += 1
        let deadline = ContinuousClock.now + .seconds(60)
        while events.withLock({ $0 }) == seen, !done.withLock({ $0 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        // The last stage's progress comes as the enrolment ends: no image after it.
        if events.withLock({ $0 }) >= reader.enrollStages { break }
    }
    return try await enrolling.value
}

private func makeBenchFolder() throws -> String {
    var template = Array("/tmp/tsmatch-XXXXXX".utf8CString)
    guard mkdtemp(&template) != nil else { throw BenchError.setup("mkdtemp: \(Errno.current.description)") }
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The matching benchmark's figures.
struct MatchingReport {
    let genuine: [VerifyOutcome]
    let impostor: [VerifyOutcome]
    let sameClassImpostorMatches: Int
    let fingers: Int
    let twoTouches: TwoTouches
    static let threshold = 40

    /// Two matching touches of one finger: the owner's pairs among
    /// impressions 6-8 (both must match), and strangers whose impression 7
    /// matched again after their impression 6 did.
    struct TwoTouches {
        let genuinePairs: Int
        let genuinePairsMatched: Int
        let impostorBothMatched: Int
    }

    var text: String {
        let genuineMatched = genuine.filter(\.matched).count
        let impostorMatched = impostor.filter(\.matched).count
        let fnmr = Double(genuine.count - genuineMatched) / Double(max(genuine.count, 1))
        let fmr = Double(impostorMatched) / Double(max(impostor.count, 1))
        // With none seen in n trials, the rate is below 3/n at 95% (the rule of three).
        let fmrBound = impostorMatched == 0 ? "below \(String(format: "1 in %.0f", Double(impostor.count) / 3)) at 95% (none seen)"
            : String(format: "1 in %.0f", 1 / fmr)
        let times = LatencyStats(nanoseconds: (genuine + impostor).map(\.nanoseconds))
        func distribution(_ outcomes: [VerifyOutcome]) -> String {
            let scores = outcomes.map(\.score).sorted()
            guard !scores.isEmpty else { return "none" }
            func at(_ q: Double) -> Int { scores[min(scores.count - 1, Int(Double(scores.count - 1) * q))] }
            return "min \(scores.first!), p5 \(at(0.05)), median \(at(0.5)), p95 \(at(0.95)), max \(scores.last!)"
        }
        var lines = [
            "libfprint virtual_image, bozorth3 threshold \(Self.threshold); \(fingers) synthetic fingers enrolled with impressions 1-5",
            "genuine verifies (impressions 6-8):        \(genuineMatched) of \(genuine.count) matched; FNMR \(String(format: "%.4f", fnmr))",
            "impostor verifies (others' impression 6): \(impostorMatched) of \(impostor.count) matched; FMR \(String(format: "%.5f", fmr)) (\(fmrBound)); of the matches, \(sameClassImpostorMatches) between fingers of one class",
            "Touch ID's published false match rate: 1 in 50,000",
            "scores, genuine:  \(distribution(genuine)) (a match's is the first at or above the threshold: libfprint stops there)",
            "scores, impostor: \(distribution(impostor))",
        ]
        lines.append(contentsOf: errorRates())
        let pairsFailed = twoTouches.genuinePairs - twoTouches.genuinePairsMatched
        let twoFMR = Double(twoTouches.impostorBothMatched) / Double(max(impostor.count, 1))
        let twoBound = twoTouches.impostorBothMatched == 0
            ? String(format: "below 1 in %.0f at 95%% (none seen)", Double(impostor.count) / 3)
            : String(format: "1 in %.0f", 1 / twoFMR)
        lines.append("two matching touches of one finger (matching --touches 2):")
        lines.append(String(format: "  owner: %d of %d pairs of impressions 6-8 both matched; FNMR %.4f", twoTouches.genuinePairsMatched,
                            twoTouches.genuinePairs, Double(pairsFailed) / Double(max(twoTouches.genuinePairs, 1))))
        lines.append("  strangers: \(twoTouches.impostorBothMatched) of \(impostor.count) matched twice (impression 6, then 7); "
                     + String(format: "FMR %.5f", twoFMR) + " (\(twoBound))")
        lines.append(String(format: "touch to answer (image sent to verify's result): median %.1f ms, p95 %.1f ms, max %.1f ms, n %d",
                            times.median, times.p95, times.max, times.samples))
        return lines.joined(separator: "\n")
    }

    /// FMR and FNMR at a few thresholds from the scores, and the equal
    /// error rate where they cross (genuine scores above 40 are lower
    /// bounds, so FNMR above 40 is an upper bound).
    private func errorRates() -> [String] {
        let genuineScores = genuine.map(\.score), impostorScores = impostor.map(\.score)
        func rates(_ threshold: Int) -> (fmr: Double, fnmr: Double) {
            (Double(impostorScores.filter { $0 >= threshold }.count) / Double(max(impostorScores.count, 1)),
             Double(genuineScores.filter { $0 < threshold }.count) / Double(max(genuineScores.count, 1)))
        }
        var lines = ["threshold   FMR        FNMR"]
        for threshold in [20, 30, 40, 50, 60] {
            let (fmr, fnmr) = rates(threshold)
            lines.append(String(format: "%9d   %.5f    %.4f", threshold, fmr, fnmr))
        }
        let crossing = (0...400).first { rates($0).fmr <= rates($0).fnmr } ?? 400
        let (fmr, fnmr) = rates(crossing)
        lines.append(String(format: "equal error rate: about %.4f (threshold %d: FMR %.5f, FNMR %.4f)", (fmr + fnmr) / 2, crossing, fmr, fnmr))
        return lines
    }
}

extension MatchingReport {
    /// The score distributions as a picture: two panels on a light ground,
    /// impostor scores above (dark bars) and genuine below (grey bars),
    /// each bin 4 points wide from 0 to 400 and each panel scaled to its
    /// tallest bin; libfprint's threshold as a dashed line through both, and
    /// a tick every 50 points under each panel.
    func plot() -> GreyImage {
        let binWidth = 4, bins = 100, pixelsPerBin = 8, panel = 160, margin = 20
        let width = bins * pixelsPerBin + 2 * margin, height = 2 * panel + 3 * margin
        var pixels = [UInt8](repeating: 250, count: width * height)
        func set(_ x: Int, _ y: Int, _ value: UInt8) {
            guard x >= 0, y >= 0, x < width, y < height else { return }
            pixels[y * width + x] = value
        }
        func draw(_ scores: [Int], top: Int, shade: UInt8) {
            var counts = [Int](repeating: 0, count: bins)
            for score in scores { counts[min(score / binWidth, bins - 1)] += 1 }
            let tallest = max(counts.max() ?? 1, 1)
            let base = top + panel
            for (bin, count) in counts.enumerated() where count > 0 {
                // At least a pixel for any bin that is not empty: a lone
                // impostor far out must show.
                let barHeight = max(1, count * panel / tallest)
                for x in margin + bin * pixelsPerBin + 1..<margin + (bin + 1) * pixelsPerBin - 1 {
                    for y in base - barHeight..<base { set(x, y, shade) }
                }
            }
            for x in margin..<width - margin { set(x, base, 0) }
            for score in stride(from: 0, through: bins * binWidth, by: 50) {
                let x = margin + score / binWidth * pixelsPerBin
                for y in base..<base + 6 { set(x, y, 0) }
            }
            let threshold = margin + Self.threshold / binWidth * pixelsPerBin
            for y in top..<base where (y / 4) % 2 == 0 { set(threshold, y, 0) }
        }
        draw(impostor.map(\.score), top: margin, shade: 40)
        draw(genuine.map(\.score), top: 2 * margin + panel, shade: 150)
        return GreyImage(width: width, height: height, pixels: pixels)
    }
}

import Foundation
import TestRigs
import Testing
import TouchstoneSimulator

/// The simulator's synthetic fingerprints (Sources/TouchstoneSimulator/
/// Fingerprints): deterministic, different per touch and per finger, at
/// the scale NBIS expects (about 500 dpi), and PNG through libpng.
@Suite struct SyntheticFingerprintTests {
    @Test func sameFingerAndImpressionGiveTheSameBytesFromFreshGenerators() async throws {
        try await offPool {
            let first = SyntheticFingerprints().impression(of: "alice-right-index", number: 3)
            let second = SyntheticFingerprints().impression(of: "alice-right-index", number: 3)
            #expect(first == second)
            // And from the shared generator's cached master.
            #expect(SyntheticFingerprints.shared.impression(of: "alice-right-index", number: 3) == first)
        }
    }

    @Test func impressionsOfOneFingerDifferAndOtherFingersDiffer() async throws {
        try await offPool {
            let generator = SyntheticFingerprints.shared
            let one = generator.impression(of: "alice-right-index", number: 1)
            let two = generator.impression(of: "alice-right-index", number: 2)
            let stranger = generator.impression(of: "bob-right-index", number: 1)
            // Pixels that differ by more than a grey level in 8: a new touch
            // moves every ridge, it is not the same picture with fresh noise.
            #expect(differingFraction(one, two) > 0.3)
            #expect(differingFraction(one, stranger) > 0.3)
            // Its own re-take is identical (the comparison itself is sound).
            #expect(differingFraction(one, generator.impression(of: "alice-right-index", number: 1)) == 0)
            #expect(generator.finger("alice-right-index").id == "alice-right-index")
        }
    }

    @Test func imageSizeAndRidgePeriodAreWhatNBISExpects() async throws {
        try await offPool {
            let generator = SyntheticFingerprints.shared
            for (id, number) in [("alice-right-index", 1), ("bob-right-index", 2), ("carol-left-thumb", 5)] {
                let image = generator.impression(of: id, number: number)
                #expect((300...450).contains(image.width) && (300...450).contains(image.height),
                        "\(id) #\(number): \(image.width)x\(image.height)")
                let period = RidgePeriod.measure(image)
                #expect(period.map { (7...12).contains($0) } == true, "\(id) #\(number): ridge period \(String(describing: period))")
                // A light background, dark ridges where the finger touches.
                #expect(image[0, 0] > 200 && image[image.width - 1, image.height - 1] > 200)
                #expect(image.pixels.filter { $0 < 100 }.count > image.pixels.count / 10)
            }
        }
    }

    @Test func everyClassIsDrawnAndEachHasItsSingularPoints() async throws {
        try await offPool {
            // Forty finger IDs (the masters are not grown: only their class and points).
            var seen: [FingerprintClass: Int] = [:]
            for index in 0..<40 {
                let (fingerClass, points) = SyntheticFinger.plan(id: "finger-\(index)")
                seen[fingerClass, default: 0] += 1
                switch fingerClass {
                case .arch: #expect(points.cores.isEmpty && points.deltas.isEmpty)
                case .tentedArch, .leftLoop, .rightLoop: #expect(points.cores.count == 1 && points.deltas.count == 1)
                case .whorl: #expect(points.cores.count == 2 && points.deltas.count == 2)
                }
            }
            #expect(Set(seen.keys) == Set(FingerprintClass.allCases), "\(seen)")
        }
    }

    @Test func pngRoundTripKeepsThePixels() async throws {
        try await offPool {
            let image = SyntheticFingerprints.shared.impression(of: "alice-right-index", number: 1)
            let png = try image.png()
            #expect(png.starts(with: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
            #expect(try GreyImage(png: png) == image)
        }
    }

    @Test func colourPNGsAreReadAsGreyAndBadPNGsAreRefusedClearly() async throws {
        try await offPool {
            // A colour PNG with alpha, written by libpng from a known RGBA image.
            let rgba = try PNGFixtures.rgbaPNG(width: 3, height: 1, pixels: [
                255, 255, 255, 255, // white
                0, 0, 0, 255,       // black
                0, 0, 0, 0,         // transparent: composed onto white
            ])
            let grey = try GreyImage(png: rgba)
            #expect(grey.width == 3 && grey.height == 1)
            #expect(grey.pixels == [255, 0, 255])

            let good = try SyntheticFingerprints.shared.impression(of: "alice-right-index", number: 1).png()
            #expect(throws: PNGError.notPNG) { try GreyImage(png: Array("not a picture at all".utf8)) }
            #expect(throws: PNGError.notPNG) { try GreyImage(png: []) }
            let truncated = Array(good.prefix(good.count / 2))
            do {
                _ = try GreyImage(png: truncated)
                Issue.record("a truncated PNG was read")
            } catch {
                guard case .unreadable(let message)? = error as? PNGError else { Issue.record("got \(error)"); return }
                #expect(!message.isEmpty)
                #expect("\(error)".hasPrefix("cannot read the PNG image: "))
            }
            let huge = try GreyImage(width: 2000, height: 2000, pixels: [UInt8](repeating: 200, count: 2000 * 2000)).png()
            #expect(throws: PNGError.tooLarge(width: 2000, height: 2000, limit: 1024)) { try GreyImage(png: huge) }
            #expect("\(PNGError.tooLarge(width: 2000, height: 2000, limit: 1024))" == "the image is 2000x2000 pixels; at most 1024x1024 is taken")
            // The limit itself is taken.
            let largest = try GreyImage(width: 1024, height: 1024, pixels: [UInt8](repeating: 9, count: 1024 * 1024)).png()
            #expect(try GreyImage(png: largest).width == 1024)
        }
    }

    /// docs/images/synthetic-finger.png is what the generator makes now (a
    /// master and impressions of one finger, then another finger's): a
    /// change to the generator shows in the docs' picture, or fails here.
    /// `TOUCHSTONE_WRITE_PICTURE=1 swift test --filter docsPicture` writes it anew.
    @Test func docsPictureIsTheGeneratorsOutput() async throws {
        try await offPool {
            let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/images/synthetic-finger.png").path
            let generator = SyntheticFingerprints.shared
            let finger = generator.finger("alice-right-index")
            // The master: ridges dark, the canvas off the fingertip light.
            let master = GreyImage(width: SyntheticFinger.width, height: SyntheticFinger.height,
                                   pixels: finger.ridges.map { $0 == 0 ? 255 : UInt8(clamping: Int((1 - $0) * 110 + 20)) })
            let tiles = [master] + (1...3).map { generator.impression(of: "alice-right-index", number: $0) }
                + [generator.impression(of: "bob-right-index", number: 1)]
            let gap = 12
            let width = tiles.map(\.width).reduce(0, +) + gap * (tiles.count - 1)
            let height = tiles.map(\.height).max()!
            var pixels = [UInt8](repeating: 255, count: width * height)
            var left = 0
            for tile in tiles {
                let top = (height - tile.height) / 2
                for y in 0..<tile.height { for x in 0..<tile.width { pixels[(top + y) * width + left + x] = tile[x, y] } }
                left += tile.width + gap
            }
            let picture = GreyImage(width: width, height: height, pixels: pixels)
            if ProcessInfo.processInfo.environment["TOUCHSTONE_WRITE_PICTURE"] != nil {
                try Data(try picture.png()).write(to: URL(fileURLWithPath: path))
            }
            // The bytes: libpng and zlib encode the same pixels the same way
            // (the reader takes at most 1024x1024; the picture is wider).
            let shown = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(shown == (try picture.png()),
                    "docs/images/synthetic-finger.png is not what the generator makes: TOUCHSTONE_WRITE_PICTURE=1 swift test --filter docsPicture")
        }
    }

    /// The fraction of pixels of `a` and `b` that differ by more than 32.
    private func differingFraction(_ a: GreyImage, _ b: GreyImage) -> Double {
        let differing = zip(a.pixels, b.pixels).filter { abs(Int($0) - Int($1)) > 32 }.count
        return Double(differing) / Double(a.pixels.count)
    }

    @Test("a master kept on disk (sim/fingers) gives the same impressions as one grown afresh; a file of another finger, another generator version or cut short is not used, and the master is grown again")
    func keptMasters() async throws {
        try await offPool {
            let folder = NSTemporaryDirectory() + "ts-fingers-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let grown = SyntheticFingerprints().impression(of: "kept-finger", number: 3)
            // The first generator grows and keeps it; a second reads it back.
            #expect(SyntheticFingerprints(keepingIn: folder).impression(of: "kept-finger", number: 3) == grown)
            let file = folder + "/" + SyntheticFingerprints.fileName("kept-finger")
            #expect(FileManager.default.fileExists(atPath: file))
            #expect(SyntheticFingerprints(keepingIn: folder).impression(of: "kept-finger", number: 3) == grown)
            #expect(SyntheticFinger(id: "kept-finger", keptIn: file) != nil)
    
            // Not used: for another ID, cut short, or of another version.
            #expect(SyntheticFinger(id: "another-finger", keptIn: file) == nil)
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
            try Data(bytes.dropLast(4)).write(to: URL(fileURLWithPath: file))
            #expect(SyntheticFinger(id: "kept-finger", keptIn: file) == nil)
            bytes[SyntheticFinger.fileMagic.count] &+= 1
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            #expect(SyntheticFinger(id: "kept-finger", keptIn: file) == nil)
            // And the generator then grows the same finger again.
            #expect(SyntheticFingerprints(keepingIn: folder).impression(of: "kept-finger", number: 3) == grown)
        }
    }
}

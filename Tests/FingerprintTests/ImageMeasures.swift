import Foundation
import CPNG
import TouchstoneSimulator

/// The ridge period of a fingerprint image, measured from its pixels alone:
/// in windows near the centre of contact, the grey profile along lines
/// through the window's centre at 16 angles; the angle with the most
/// crossings of the window's mean runs across the ridges, and half a
/// crossing apart is a ridge period. The median over the windows.
enum RidgePeriod {
    static func measure(_ image: GreyImage) -> Double? {
        // Where the finger is: the centroid of the dark pixels.
        var sumX = 0, sumY = 0, count = 0
        for y in 0..<image.height { for x in 0..<image.width where image[x, y] < 128 {
            sumX += x; sumY += y; count += 1
        } }
        guard count > 0 else { return nil }
        let cx = sumX / count, cy = sumY / count
        let half = 32
        var periods: [Double] = []
        for wy in stride(from: cy - 64, through: cy + 64, by: 32) {
            for wx in stride(from: cx - 64, through: cx + 64, by: 32) {
                guard wx - half >= 0, wy - half >= 0, wx + half < image.width, wy + half < image.height else { continue }
                var best = 0
                for step in 0..<16 {
                    let angle = Double(step) * .pi / 16
                    let samples = (-half...half).map { t -> Double in
                        let x = Int((Double(wx) + Double(t) * cos(angle)).rounded())
                        let y = Int((Double(wy) + Double(t) * sin(angle)).rounded())
                        return Double(image[x, y])
                    }
                    let mean = samples.reduce(0, +) / Double(samples.count)
                    var crossings = 0
                    for i in 1..<samples.count where (samples[i - 1] < mean) != (samples[i] < mean) { crossings += 1 }
                    best = max(best, crossings)
                }
                if best >= 4 { periods.append(2 * Double(2 * half) / Double(best)) }
            }
        }
        guard !periods.isEmpty else { return nil }
        return periods.sorted()[periods.count / 2]
    }
}

/// PNG files the tests need that Touchstone itself never writes, encoded by
/// libpng.
enum PNGFixtures {
    struct Failure: Error { let message: String }

    /// An 8-bit RGBA PNG of `pixels` (4 bytes a pixel).
    static func rgbaPNG(width: Int, height: Int, pixels: [UInt8]) throws -> [UInt8] {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = png_uint_32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA) // PNG_FORMAT_RGBA
        defer { png_image_free(&image) }
        var size = 0
        guard pixels.withUnsafeBytes({ png_image_write_to_memory(&image, nil, &size, 0, $0.baseAddress, 0, nil) }) != 0 else {
            throw Failure(message: "libpng could not size the PNG")
        }
        var encoded = [UInt8](repeating: 0, count: size)
        let written = pixels.withUnsafeBytes { raw in
            encoded.withUnsafeMutableBytes { out in
                png_image_write_to_memory(&image, out.baseAddress, &size, 0, raw.baseAddress, 0, nil)
            }
        }
        guard written != 0 else { throw Failure(message: "libpng could not write the PNG") }
        return Array(encoded.prefix(size))
    }
}

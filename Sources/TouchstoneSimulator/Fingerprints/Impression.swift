import Foundation

/// One touch of a synthetic finger on the simulated sensor, differing from
/// every other touch as real ones do: where and how the finger lands
/// (translation, rotation), how the skin stretches (an elastic distortion,
/// stronger away from the centre of contact), how much of it touches (an
/// elliptical contact region of varying size, with a soft edge), pressure
/// and skin condition (ridges thinner when dry, thicker when wet, in
/// patches), sensor noise and a slight blur.
package struct Impression: Sendable {
    /// The sensor's image: about 500 dpi, a whole fingertip.
    package static let width = 320
    package static let height = 440

    /// Background (no contact) and the darkest ridge.
    static let background: Float = 228
    static let ink: Float = 48

    /// Takes impression `number` of `finger`.
    package static func take(of finger: SyntheticFinger, number: Int) -> GreyImage {
        var random = SeededRandom(finger.id, number, 0x1b9)
        let rotation = random.uniform(-15...15) * .pi / 180
        let shiftX = random.uniform(-20...20), shiftY = random.uniform(-24...24)
        // The contact region, in the master's coordinates.
        let contact = PrintPoint(x: finger.centre.x + random.uniform(-14...14), y: finger.centre.y + random.uniform(-18...18))
        let contactA = finger.a * random.uniform(0.80...0.97), contactB = finger.b * random.uniform(0.76...0.95)
        let edgeNoise = SmoothNoise(width: SyntheticFinger.width, height: SyntheticFinger.height, spacing: 60,
                                    amplitude: 0.035, random: &random)
        // The elastic distortion: a smooth displacement, growing with the
        // distance from the centre of contact.
        let strength = random.uniform(3...8)
        let distortX = SmoothNoise(width: SyntheticFinger.width, height: SyntheticFinger.height, spacing: 70,
                                   amplitude: strength, random: &random)
        let distortY = SmoothNoise(width: SyntheticFinger.width, height: SyntheticFinger.height, spacing: 70,
                                   amplitude: strength, random: &random)
        // Skin and pressure: a threshold shift (negative dry, positive wet), in patches.
        let skin = random.uniform(-0.30...0.30)
        let patches = SmoothNoise(width: SyntheticFinger.width, height: SyntheticFinger.height, spacing: 45,
                                  amplitude: 0.14, random: &random)
        let pressure = Float(random.uniform(0.80...1.0))
        let noiseLevel = Float(random.uniform(4...9))

        let width = Self.width, height = Self.height
        let cosR = cos(rotation), sinR = sin(rotation)
        let outCentreX = Double(width) / 2 + shiftX, outCentreY = Double(height) / 2 + shiftY
        var grey = [Float](repeating: background, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                // Where this sensor pixel falls on the finger.
                let dx = Double(x) - outCentreX, dy = Double(y) - outCentreY
                var mx = finger.centre.x + cosR * dx + sinR * dy
                var my = finger.centre.y - sinR * dx + cosR * dy
                let cx = (mx - contact.x) / contactA, cy = (my - contact.y) / contactB
                let rho = (cx * cx + cy * cy).squareRoot() + edgeNoise(mx, my)
                guard rho < 1 else { continue }
                let reach = max(rho, 0) * max(rho, 0)
                (mx, my) = (mx + distortX(mx, my) * reach, my + distortY(mx, my) * reach)
                // A soft edge: contact fades over the outer 12%.
                let edge = Float(min(max((1 - rho) / 0.12, 0), 1))
                let weight = edge * edge * (3 - 2 * edge) * pressure
                let value = finger.ridge(atX: mx, y: my) + Float(skin + patches(mx, my))
                let darkness = 1 / (1 + exp(-5 * value))
                grey[y * width + x] = background - weight * ((background - ink) * darkness + 10)
            }
        }
        var pixels = [UInt8](repeating: 0, count: width * height)
        blurAndQuantise(grey, width: width, height: height, noise: noiseLevel, into: &pixels, &random)
        return GreyImage(width: width, height: height, pixels: pixels)
    }

    /// A 3x3 binomial blur (the sensor's optics), then noise (more where
    /// the finger touches, a quiet background), rounded to bytes.
    private static func blurAndQuantise(_ grey: [Float], width: Int, height: Int, noise: Float,
                                        into pixels: inout [UInt8], _ random: inout SeededRandom) {
        let weights: [Float] = [1, 2, 1]
        for y in 0..<height {
            for x in 0..<width {
                var sum: Float = 0, total: Float = 0
                for j in -1...1 {
                    let sy = y + j
                    guard sy >= 0, sy < height else { continue }
                    for i in -1...1 {
                        let sx = x + i
                        guard sx >= 0, sx < width else { continue }
                        let w = weights[j + 1] * weights[i + 1]
                        sum += w * grey[sy * width + sx]
                        total += w
                    }
                }
                let value = sum / total
                let contact = (background - value) / (background - ink)
                let sigma = 1.5 + noise * min(max(contact * 2, 0), 1)
                let noisy = value + sigma * Float(random.gaussian())
                pixels[y * width + x] = UInt8(min(max(noisy.rounded(), 0), 255))
            }
        }
    }
}

import Foundation

/// The ridge orientation of a master print at every pixel (radians in
/// [0, π), the direction ridges run): Sherlock and Monro's zero-pole model
/// from the singular points (an arch's from a smooth bump), then a tilt, a
/// smooth warp of the plane and a smooth random perturbation so that prints
/// of one class still differ.
struct OrientationField {
    let width: Int
    let height: Int
    /// Row-major angles in [0, π).
    let angles: [Float]

    init(width: Int, height: Int, fingerClass: FingerprintClass, points: SingularPoints,
         centre: PrintPoint, a: Double, _ random: inout SeededRandom) {
        self.width = width
        self.height = height
        let tilt = random.uniform(-0.20...0.20)
        let warpX = SmoothNoise(width: width, height: height, spacing: 90, amplitude: 16, random: &random)
        let warpY = SmoothNoise(width: width, height: height, spacing: 90, amplitude: 16, random: &random)
        let perturbation = SmoothNoise(width: width, height: height, spacing: 60, amplitude: 0.20, random: &random)
        // An arch: ridges are the level lines of y - h·exp(-(x-x0)²/2s²).
        let archHeight = random.uniform(0.25...0.55) * a
        let archWidth = random.uniform(0.35...0.55) * a
        let cosTilt = cos(tilt), sinTilt = sin(tilt)

        var angles = [Float](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                // Tilt and warp: where this pixel falls in the untilted model.
                let dx = Double(x) - centre.x, dy = Double(y) - centre.y
                let px = centre.x + cosTilt * dx + sinTilt * dy + warpX(Double(x), Double(y))
                let py = centre.y - sinTilt * dx + cosTilt * dy + warpY(Double(x), Double(y))
                var theta: Double
                if points.cores.isEmpty {
                    let u = (px - centre.x) / archWidth
                    let slope = archHeight * u / archWidth * exp(-u * u / 2)
                    theta = atan(slope)
                } else {
                    theta = 0
                    for d in points.deltas { theta -= atan2(py - d.y, px - d.x) }
                    for c in points.cores { theta += atan2(py - c.y, px - c.x) }
                    theta /= 2
                }
                theta += -tilt + perturbation(Double(x), Double(y))
                var folded = theta.truncatingRemainder(dividingBy: .pi)
                if folded < 0 { folded += .pi }
                angles[y * width + x] = Float(folded)
            }
        }
        self.angles = angles
    }
}

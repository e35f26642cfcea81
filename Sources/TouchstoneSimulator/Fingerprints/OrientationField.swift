import Foundation

/// The class of a master print (Henry's classes, as SFinGe draws them), with
/// the singular points that shape its ridge flow.
package enum FingerprintClass: String, Sendable, CaseIterable {
    case arch
    case tentedArch = "tented arch"
    case leftLoop = "left loop"
    case rightLoop = "right loop"
    case whorl

    /// A class drawn with roughly the frequencies of real fingers (loops
    /// most, then whorls, arches least).
    static func draw(_ random: inout SeededRandom) -> FingerprintClass {
        let u = random.unit()
        switch u {
        case ..<0.10: return .arch
        case ..<0.15: return .tentedArch
        case ..<0.45: return .leftLoop
        case ..<0.75: return .rightLoop
        default: return .whorl
        }
    }
}

/// A point in an image, in pixels (x right, y down).
package struct Point: Sendable, Hashable {
    package var x: Double
    package var y: Double
}

/// The singular points of a master print: cores (where ridges turn back)
/// and deltas (where three ridge flows meet).
package struct SingularPoints: Sendable, Hashable {
    package var cores: [Point]
    package var deltas: [Point]

    /// Singular points for `fingerClass` on a fingertip centred at
    /// `centre` with half-width `a` and half-height `b`, spread at random
    /// so that prints of one class differ.
    static func draw(for fingerClass: FingerprintClass, centre: Point, a: Double, b: Double,
                     _ random: inout SeededRandom) -> SingularPoints {
        let core = Point(x: centre.x + random.uniform(-0.15...0.15) * a,
                         y: centre.y + random.uniform(-0.30...0.05) * b)
        switch fingerClass {
        case .arch:
            return SingularPoints(cores: [], deltas: [])
        case .tentedArch:
            let delta = Point(x: core.x + random.uniform(-10...10), y: core.y + random.uniform(0.25...0.40) * b)
            return SingularPoints(cores: [core], deltas: [delta])
        case .leftLoop, .rightLoop:
            // A left loop's ridges enter and leave on the left: its delta
            // lies below the core, to the right.
            let side: Double = fingerClass == .leftLoop ? 1 : -1
            let delta = Point(x: core.x + side * random.uniform(0.35...0.70) * a,
                              y: core.y + random.uniform(0.40...0.65) * b)
            return SingularPoints(cores: [core], deltas: [delta])
        case .whorl:
            let angle = random.uniform(-0.6...0.6)
            let half = random.uniform(8...22)
            let upper = Point(x: core.x - half * sin(angle), y: core.y - half * cos(angle))
            let lower = Point(x: core.x + half * sin(angle), y: core.y + half * cos(angle))
            let left = Point(x: core.x - random.uniform(0.55...0.85) * a, y: core.y + random.uniform(0.35...0.60) * b)
            let right = Point(x: core.x + random.uniform(0.55...0.85) * a, y: core.y + random.uniform(0.35...0.60) * b)
            return SingularPoints(cores: [upper, lower], deltas: [left, right])
        }
    }
}

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
         centre: Point, a: Double, _ random: inout SeededRandom) {
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

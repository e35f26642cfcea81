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
package struct PrintPoint: Sendable, Hashable {
    package var x: Double
    package var y: Double
}

/// The singular points of a master print: cores (where ridges turn back)
/// and deltas (where three ridge flows meet).
package struct SingularPoints: Sendable, Hashable {
    package var cores: [PrintPoint]
    package var deltas: [PrintPoint]

    /// Singular points for `fingerClass` on a fingertip centred at
    /// `centre` with half-width `a` and half-height `b`, spread at random
    /// so that prints of one class differ.
    static func draw(for fingerClass: FingerprintClass, centre: PrintPoint, a: Double, b: Double,
                     _ random: inout SeededRandom) -> SingularPoints {
        let core = PrintPoint(x: centre.x + random.uniform(-0.15...0.15) * a,
                         y: centre.y + random.uniform(-0.30...0.05) * b)
        switch fingerClass {
        case .arch:
            return SingularPoints(cores: [], deltas: [])
        case .tentedArch:
            let delta = PrintPoint(x: core.x + random.uniform(-10...10), y: core.y + random.uniform(0.25...0.40) * b)
            return SingularPoints(cores: [core], deltas: [delta])
        case .leftLoop, .rightLoop:
            // A left loop's ridges enter and leave on the left: its delta
            // lies below the core, to the right.
            let side: Double = fingerClass == .leftLoop ? 1 : -1
            let delta = PrintPoint(x: core.x + side * random.uniform(0.35...0.70) * a,
                              y: core.y + random.uniform(0.40...0.65) * b)
            return SingularPoints(cores: [core], deltas: [delta])
        case .whorl:
            let angle = random.uniform(-0.6...0.6)
            let half = random.uniform(8...22)
            let upper = PrintPoint(x: core.x - half * sin(angle), y: core.y - half * cos(angle))
            let lower = PrintPoint(x: core.x + half * sin(angle), y: core.y + half * cos(angle))
            let left = PrintPoint(x: core.x - random.uniform(0.55...0.85) * a, y: core.y + random.uniform(0.35...0.60) * b)
            let right = PrintPoint(x: core.x + random.uniform(0.55...0.85) * a, y: core.y + random.uniform(0.35...0.60) * b)
            return SingularPoints(cores: [upper, lower], deltas: [left, right])
        }
    }
}

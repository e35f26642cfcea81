import Foundation

/// The master print of one synthetic finger (SFinGe's "master
/// fingerprint"): the whole fingertip's ridge pattern, from which every
/// impression of that finger is taken. Made from a seed (the finger's ID)
/// alone, so the same ID gives the same finger on every run (and on every
/// machine whose C library computes sin, cos and exp to the same bits).
package struct SyntheticFinger: Sendable {
    /// The master's canvas, a little larger than an impression so that a
    /// shifted or rotated touch still falls on the finger.
    package static let width = 360
    package static let height = 480

    package let id: String
    package let fingerClass: FingerprintClass
    package let singularPoints: SingularPoints
    /// The fingertip: an ellipse around `centre` with half-axes `a`, `b`.
    package let centre: PrintPoint
    package let a: Double
    package let b: Double
    /// The finger's mean ridge period in pixels (about 9 at 500 dpi).
    package let meanPeriod: Double
    /// Row-major ridge values in [-1, 1] (positive on a ridge), `width` x
    /// `height`; 0 off the fingertip.
    package let ridges: [Float]

    /// The shape of finger `id`'s master, drawn first from its seed.
    private struct Layout {
        var centre: PrintPoint
        var a: Double
        var b: Double
        var fingerClass: FingerprintClass
        var points: SingularPoints

        init(id: String, _ random: inout SeededRandom) {
            random = SeededRandom(id, 0x7f5)
            centre = PrintPoint(x: Double(SyntheticFinger.width) / 2, y: Double(SyntheticFinger.height) / 2)
            a = random.uniform(135...155)
            b = random.uniform(185...210)
            fingerClass = FingerprintClass.draw(&random)
            points = SingularPoints.draw(for: fingerClass, centre: centre, a: a, b: b, &random)
        }
    }

    /// The class and singular points finger `id` gets, without growing its
    /// ridges.
    package static func plan(id: String) -> (FingerprintClass, SingularPoints) {
        var random = SeededRandom(seed: 0)
        let layout = Layout(id: id, &random)
        return (layout.fingerClass, layout.points)
    }

    /// What a kept master's file starts with; bump the version whenever
    /// anything in a master's growth changes (a kept master of an older
    /// generator is then grown again, never used).
    package static let fileMagic = Array("TSFINGER".utf8)
    static let fileVersion: UInt32 = 1

    /// The master of finger `id` as kept in `file` by `keep(in:)`, if the
    /// file is one, of this generator, for that finger.
    package init?(id: String, keptIn file: String) {
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        let bytes = [UInt8](data)
        let name = Array(id.utf8)
        let header = Self.fileMagic.count + 4 + 4 + name.count + 8
        let count = Self.width * Self.height
        guard bytes.count == header + count * 4, bytes.starts(with: Self.fileMagic) else { return nil }
        func uint32(at offset: Int) -> UInt32 { bytes[offset..<offset + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        var at = Self.fileMagic.count
        guard uint32(at: at) == Self.fileVersion, Int(uint32(at: at + 4)) == name.count,
              Array(bytes[at + 8..<at + 8 + name.count]) == name else { return nil }
        at += 8 + name.count
        let period = Double(bitPattern: bytes[at..<at + 8].reversed().reduce(0) { $0 << 8 | UInt64($1) })
        at += 8
        var ridges = [Float](repeating: 0, count: count)
        for index in 0..<count {
            ridges[index] = Float(bitPattern: uint32(at: at + index * 4))
        }
        var random = SeededRandom(seed: 0)
        let layout = Layout(id: id, &random)
        self.id = id
        fingerClass = layout.fingerClass
        singularPoints = layout.points
        centre = layout.centre
        a = layout.a
        b = layout.b
        meanPeriod = period
        self.ridges = ridges
    }

    /// Keeps this master in `file` (0600, written whole and renamed into
    /// place), for `init(id:keptIn:)`; a failure only means it is grown
    /// again next time.
    package func keep(in file: String) {
        func little<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        let name = Array(id.utf8)
        var bytes = Self.fileMagic + little(Self.fileVersion) + little(UInt32(name.count)) + name + little(meanPeriod.bitPattern)
        bytes.reserveCapacity(bytes.count + ridges.count * 4)
        for value in ridges { bytes += little(value.bitPattern) }
        let temporary = file + ".\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else { return }
        if rename(temporary, file) != 0 { unlink(temporary) }
    }

    /// Grows the master print of finger `id`.
    package init(id: String) {
        var random = SeededRandom(seed: 0)
        let layout = Layout(id: id, &random)
        let (centre, a, b, fingerClass, points) = (layout.centre, layout.a, layout.b, layout.fingerClass, layout.points)
        let width = Self.width, height = Self.height
        self.id = id
        let field = OrientationField(width: width, height: height, fingerClass: fingerClass, points: points,
                                     centre: centre, a: a, &random)

        // The ridge period: a finger's own mean, varying smoothly over it.
        let meanPeriod = random.uniform(8.3...9.9)
        let periodNoise = SmoothNoise(width: width, height: height, spacing: 110, amplitude: 0.35, random: &random)
        var kernels = [Int32](repeating: 0, count: width * height)
        var inside = [Bool](repeating: false, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let index = y * width + x
                let period = Float(min(max(meanPeriod + periodNoise(Double(x), Double(y)), 7.6), 10.9))
                kernels[index] = Int32(GaborRidges.kernelIndex(angle: field.angles[index], period: period))
                let ex = (Double(x) - centre.x) / (a + 10), ey = (Double(y) - centre.y) / (b + 10)
                inside[index] = ex * ex + ey * ey <= 1
            }
        }
        ridges = GaborRidges.grow(width: width, height: height, kernels: kernels, inside: inside, &random)
        self.fingerClass = fingerClass
        self.singularPoints = points
        self.centre = centre
        self.a = a
        self.b = b
        self.meanPeriod = meanPeriod
    }

    /// The ridge value at (`x`, `y`) by bilinear interpolation; 0 off the canvas.
    func ridge(atX x: Double, y: Double) -> Float {
        let width = Self.width, height = Self.height
        guard x >= 0, y >= 0, x < Double(width - 1), y < Double(height - 1) else { return 0 }
        let ix = Int(x), iy = Int(y)
        let fx = Float(x - Double(ix)), fy = Float(y - Double(iy))
        let i = iy * width + ix
        let top = ridges[i] + (ridges[i + 1] - ridges[i]) * fx
        let bottom = ridges[i + width] + (ridges[i + width + 1] - ridges[i + width]) * fx
        return top + (bottom - top) * fy
    }
}

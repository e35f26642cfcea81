/// A smooth random field over the plane: random values on a coarse grid of
/// `spacing` pixels, interpolated with a smoothstep weighting. Orientation
/// perturbations, frequency maps, warps and distortions are built from it.
struct SmoothNoise: Sendable {
    private let columns: Int
    private let rows: Int
    private let spacing: Double
    private let values: [Double]

    /// A field over `width` x `height` pixels with values of standard
    /// deviation about `amplitude`.
    init(width: Int, height: Int, spacing: Double, amplitude: Double, random: inout SeededRandom) {
        self.spacing = spacing
        columns = Int((Double(width) / spacing).rounded(.up)) + 2
        rows = Int((Double(height) / spacing).rounded(.up)) + 2
        var values: [Double] = []
        values.reserveCapacity(columns * rows)
        for _ in 0..<(columns * rows) { values.append(amplitude * random.gaussian()) }
        self.values = values
    }

    /// The field's value at (`x`, `y`); outside the grid, its edge value.
    func callAsFunction(_ x: Double, _ y: Double) -> Double {
        let gx = min(max(x / spacing, 0), Double(columns - 1) - 1e-9)
        let gy = min(max(y / spacing, 0), Double(rows - 1) - 1e-9)
        let ix = Int(gx), iy = Int(gy)
        let fx = gx - Double(ix), fy = gy - Double(iy)
        let sx = fx * fx * (3 - 2 * fx), sy = fy * fy * (3 - 2 * fy)
        let i = iy * columns + ix
        let top = values[i] + (values[i + 1] - values[i]) * sx
        let bottom = values[i + columns] + (values[i + columns + 1] - values[i + columns]) * sx
        return top + (bottom - top) * sy
    }
}

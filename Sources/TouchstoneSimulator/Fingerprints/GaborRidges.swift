import Foundation

/// Ridges grown by iterated contextual Gabor filtering (SFinGe's method):
/// from a few random seed points, each pass filters every pixel with a
/// Gabor kernel oriented by the orientation field and tuned to the local
/// ridge period, then saturates, so that ridges spread outward following
/// the field until they fill the fingertip.
enum GaborRidges {
    /// Orientations in the kernel bank (over π).
    static let orientationSteps = 24
    /// Ridge periods in the bank: 7.5 to 11 pixels.
    static let periods: [Double] = (0..<8).map { 7.5 + Double($0) * 0.5 }
    /// Kernels are (2 · radius + 1) pixels on a side.
    static let radius = 6
    static let side = 2 * radius + 1
    /// Growth stops here even if some pixel is still unreached.
    static let maximumPasses = 60

    /// The bank: `orientationSteps * periods.count` kernels of `side²`
    /// weights, each scaled so that a unit sinusoid at its orientation and
    /// period gives 1.
    static let bank: [Float] = {
        var bank: [Float] = []
        bank.reserveCapacity(orientationSteps * periods.count * side * side)
        for step in 0..<orientationSteps {
            let theta = Double(step) * .pi / Double(orientationSteps)
            for period in periods {
                bank.append(contentsOf: kernel(theta: theta, period: period))
            }
        }
        return bank
    }()

    /// One even-symmetric Gabor kernel for ridges running along `theta`:
    /// a Gaussian envelope, longer along the ridges than across, times a
    /// cosine across them.
    static func kernel(theta: Double, period: Double) -> [Float] {
        let along = 0.50 * period, across = 0.38 * period
        var envelope = [Double](repeating: 0, count: side * side)
        var wave = [Double](repeating: 0, count: side * side)
        for j in -radius...radius {
            for i in -radius...radius {
                let u = Double(i) * cos(theta) + Double(j) * sin(theta)
                let v = -Double(i) * sin(theta) + Double(j) * cos(theta)
                let k = (j + radius) * side + (i + radius)
                envelope[k] = exp(-0.5 * (u * u / (along * along) + v * v / (across * across)))
                wave[k] = cos(2 * .pi * v / period)
            }
        }
        // No response to a flat area (the envelope's share of the mean
        // taken off), then a unit response to a matched sinusoid.
        let mean = zip(envelope, wave).map { $0 * $1 }.reduce(0, +) / envelope.reduce(0, +)
        let weights = zip(envelope, wave).map { $0 * ($1 - mean) }
        let response = zip(weights, wave).map { $0 * $1 }.reduce(0, +)
        return weights.map { Float($0 / response) }
    }

    /// The bank index of the kernel for `angle` (radians, [0, π)) and `period`.
    static func kernelIndex(angle: Float, period: Float) -> Int {
        var step = Int((Double(angle) / .pi * Double(orientationSteps)).rounded()) % orientationSteps
        if step < 0 { step += orientationSteps }
        let p = Int(((Double(period) - periods[0]) / 0.5).rounded())
        return step * periods.count + min(max(p, 0), periods.count - 1)
    }

    /// Grows ridges over the pixels where `inside` is true (row-major,
    /// `width` x `height`), with the kernel at each pixel given by
    /// `kernels` (bank indices). Returns values in [-1, 1]: positive on a
    /// ridge.
    static func grow(width: Int, height: Int, kernels: [Int32], inside: [Bool],
                     _ random: inout SeededRandom) -> [Float] {
        var current = [Float](repeating: 0, count: width * height)
        let insideIndices = inside.indices.filter { inside[$0] }
        // A few seed points: small spots of ridge or valley.
        let seeds = 40
        for _ in 0..<seeds {
            let index = insideIndices[Int(random.next() % UInt64(insideIndices.count))]
            let value = Float(random.sign())
            let x = index % width, y = index / width
            for dy in -3...3 { for dx in -3...3 where dx * dx + dy * dy <= 9 {
                let sx = x + dx, sy = y + dy
                if sx >= 0, sx < width, sy >= 0, sy < height { current[sy * width + sx] = value }
            } }
        }
        var next = current
        let gain: Float = 2.0
        // A pixel is reached once its value has been clearly set. Pixels
        // on a ridge's flank stay near 0 for long, so growth is done when
        // nearly every pixel is reached and a pass reaches few new ones;
        // then two passes more let the ridges settle.
        var reached = [Bool](repeating: false, count: width * height)
        var unreached = insideIndices
        var settling = 0
        for _ in 0..<maximumPasses {
            pass(width: width, height: height, kernels: kernels, inside: inside, from: current, to: &next, gain: gain)
            swap(&current, &next)
            let before = unreached.count
            unreached.removeAll { index in
                if abs(current[index]) > 0.3 { reached[index] = true }
                return reached[index]
            }
            if settling > 0 || (unreached.count * 20 < insideIndices.count && (before - unreached.count) * 200 < insideIndices.count) {
                settling += 1
                if settling > 2 { break }
            }
        }
        return current
    }

    /// One filtering pass: `output` = clamp(gain · Gabor(`input`)) inside.
    private static func pass(width: Int, height: Int, kernels: [Int32], inside: [Bool],
                             from input: [Float], to output: inout [Float], gain: Float) {
        let r = radius, s = side
        bank.withUnsafeBufferPointer { bankBuffer in
            input.withUnsafeBufferPointer { srcBuffer in
                kernels.withUnsafeBufferPointer { kernelsBuffer in
                    inside.withUnsafeBufferPointer { insideBuffer in
                        output.withUnsafeMutableBufferPointer { dstBuffer in
                            // Raw pointers: no bounds checks in debug builds either.
                            let bank = bankBuffer.baseAddress!, src = srcBuffer.baseAddress!
                            let kernels = kernelsBuffer.baseAddress!, inside = insideBuffer.baseAddress!
                            let dst = dstBuffer.baseAddress!
                            for y in 0..<height {
                                for x in 0..<width {
                                    let index = y * width + x
                                    guard inside[index] else { dst[index] = 0; continue }
                                    let k = Int(kernels[index]) * s * s
                                    var sum: Float = 0
                                    if x >= r, x < width - r, y >= r, y < height - r {
                                        for j in 0..<s {
                                            let row = (y + j - r) * width + x - r
                                            let krow = k + j * s
                                            for i in 0..<s { sum += bank[krow + i] * src[row + i] }
                                        }
                                    } else {
                                        for j in 0..<s {
                                            let sy = y + j - r
                                            guard sy >= 0, sy < height else { continue }
                                            for i in 0..<s {
                                                let sx = x + i - r
                                                guard sx >= 0, sx < width else { continue }
                                                sum += bank[k + j * s + i] * src[sy * width + sx]
                                            }
                                        }
                                    }
                                    dst[index] = min(max(sum * gain, -1), 1)
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

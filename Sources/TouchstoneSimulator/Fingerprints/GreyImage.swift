/// An 8-bit greyscale image, row-major, one byte a pixel: what libfprint's
/// `virtual_image` reader takes (dark ridges on a light background).
package struct GreyImage: Sendable, Hashable {
    package let width: Int
    package let height: Int
    /// `width * height` bytes, row by row from the top.
    package var pixels: [UInt8]

    package init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width > 0 && height > 0 && pixels.count == width * height,
                     "a GreyImage needs width * height pixels")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The pixel at column `x`, row `y`.
    package subscript(x: Int, y: Int) -> UInt8 {
        pixels[y * width + x]
    }

    /// The bytes `virtual_image` reads from its socket for one image: width
    /// and height as native-endian int32, then the pixels.
    package var virtualImageFrame: [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(8 + pixels.count)
        withUnsafeBytes(of: Int32(width)) { frame.append(contentsOf: $0) }
        withUnsafeBytes(of: Int32(height)) { frame.append(contentsOf: $0) }
        frame.append(contentsOf: pixels)
        return frame
    }
}

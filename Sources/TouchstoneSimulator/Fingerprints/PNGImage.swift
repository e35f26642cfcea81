internal import CPNG

/// Why a PNG could not be read or written.
package enum PNGError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not a PNG at all (no PNG signature).
    case notPNG
    /// The image is larger than the reader takes.
    case tooLarge(width: Int, height: Int, limit: Int)
    /// libpng could not decode it (a truncated or damaged file): its message.
    case unreadable(String)
    /// libpng could not encode the image: its message.
    case unwritable(String)

    package var description: String {
        switch self {
        case .notPNG: "not a PNG image (no PNG signature)"
        case .tooLarge(let width, let height, let limit):
            "the image is \(width)x\(height) pixels; at most \(limit)x\(limit) is taken"
        case .unreadable(let message): "cannot read the PNG image: \(message)"
        case .unwritable(let message): "cannot write the PNG image: \(message)"
        }
    }
}

/// PNG through libpng's simplified API (`png_image_*`): Touchstone decodes
/// and encodes nothing by hand.
extension GreyImage {
    /// The largest width and height `init(png:)` takes.
    package static let pngSideLimit = 1024

    /// Decodes a PNG (8-bit or 16-bit, greyscale or colour, with or without
    /// alpha, palette) to greyscale: colour is converted by libpng, alpha
    /// composed onto white. Anything larger than `pngSideLimit` on a side
    /// is refused before its pixels are decoded.
    package init(png bytes: [UInt8]) throws(PNGError) {
        guard bytes.count >= 8, bytes.withUnsafeBufferPointer({ png_sig_cmp($0.baseAddress, 0, 8) }) == 0 else {
            throw .notPNG
        }
        // libpng reads from `bytes` until the image is finished: one closure.
        let decoded = bytes.withUnsafeBytes { raw in Result { () throws(PNGError) in try Self.decode(raw) } }
        let (width, height, pixels) = try decoded.get()
        self.init(width: width, height: height, pixels: pixels)
    }

    /// Decodes the PNG in `raw` to greyscale: width, height, pixels.
    private static func decode(_ raw: UnsafeRawBufferPointer) throws(PNGError) -> (Int, Int, [UInt8]) {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }
        guard png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count) != 0 else {
            throw .unreadable(Self.message(of: image))
        }
        let width = Int(image.width), height = Int(image.height)
        guard width <= Self.pngSideLimit, height <= Self.pngSideLimit else {
            throw .tooLarge(width: width, height: height, limit: Self.pngSideLimit)
        }
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        var white = png_color(red: 255, green: 255, blue: 255)
        var pixels = [UInt8](repeating: 0, count: width * height)
        let finished = pixels.withUnsafeMutableBytes { out in
            png_image_finish_read(&image, &white, out.baseAddress, png_int_32(width), nil)
        }
        guard finished != 0 else { throw .unreadable(Self.message(of: image)) }
        return (width, height, pixels)
    }

    /// The image as an 8-bit greyscale PNG.
    package func png() throws(PNGError) -> [UInt8] {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        defer { png_image_free(&image) }
        // First the size libpng needs, then the encoding into a buffer of it.
        var size = 0
        let sized = pixels.withUnsafeBytes { raw in
            png_image_write_to_memory(&image, nil, &size, 0, raw.baseAddress, png_int_32(width), nil)
        }
        guard sized != 0, size > 0 else { throw .unwritable(Self.message(of: image)) }
        var encoded = [UInt8](repeating: 0, count: size)
        let written = pixels.withUnsafeBytes { raw in
            encoded.withUnsafeMutableBytes { out in
                png_image_write_to_memory(&image, out.baseAddress, &size, 0, raw.baseAddress, png_int_32(width), nil)
            }
        }
        guard written != 0 else { throw .unwritable(Self.message(of: image)) }
        return Array(encoded.prefix(size))
    }

    /// libpng's message for the last failure on `image`.
    private static func message(of image: png_image) -> String {
        withUnsafeBytes(of: image.message) { raw in
            let text = String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            return text.isEmpty ? "libpng failed without a message" : text
        }
    }
}

/// Reads a binary record front to back (AttributeCodec, WrapCodec). Every
/// read is bounds-checked first and gives nil past the end, never a trap;
/// integers are little-endian.
struct RecordReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, count <= bytes.count - offset else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    mutating func byte() -> UInt8? { bytes(1).map { $0[0] } }

    mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) -> T? {
        bytes(MemoryLayout<T>.size).map { T(littleEndian: $0.loadUnaligned(as: T.self)) }
    }
}

extension Array where Element == UInt8 {
    /// Appends `value` little-endian, as RecordReader reads it.
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

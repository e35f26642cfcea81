/// Big-endian writer for the TPM's wire formats and Touchstone's blob format.
package struct ByteWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    package mutating func u8(_ v: UInt8) { bytes.append(v) }
    package mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xff)) }
    package mutating func u32(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt32(shift)) & 0xff)) }
    }
    package mutating func u64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(shift)) & 0xff)) }
    }
    package mutating func raw(_ v: some Sequence<UInt8>) { bytes.append(contentsOf: v) }
    /// A 16-bit length prefix, then the bytes.
    package mutating func sized16(_ v: [UInt8]) { u16(UInt16(v.count)); raw(v) }
    /// A 32-bit length prefix, then the bytes.
    package mutating func sized32(_ v: [UInt8]) { u32(UInt32(v.count)); raw(v) }
}

/// Bounds-checked big-endian reader: every read past the end, and every
/// length over its limit, throws instead of trapping.
package struct ByteReader {
    package struct Truncated: Error {
        package let what: String
        package init(what: String) { self.what = what }
    }

    private let bytes: [UInt8]
    package private(set) var offset = 0

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package var remaining: Int { bytes.count - offset }
    package var isAtEnd: Bool { offset == bytes.count }

    package mutating func raw(_ count: Int, _ what: String) throws(ByteReader.Truncated) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw Truncated(what: what) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }
    package mutating func u8(_ what: String) throws(ByteReader.Truncated) -> UInt8 { try raw(1, what)[0] }
    package mutating func u16(_ what: String) throws(ByteReader.Truncated) -> UInt16 {
        let b = try raw(2, what); return UInt16(b[0]) << 8 | UInt16(b[1])
    }
    package mutating func u32(_ what: String) throws(ByteReader.Truncated) -> UInt32 {
        let b = try raw(4, what)
        return b.reduce(0) { $0 << 8 | UInt32($1) }
    }
    package mutating func u64(_ what: String) throws(ByteReader.Truncated) -> UInt64 {
        let b = try raw(8, what)
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }
    package mutating func sized16(_ what: String, max: Int) throws(ByteReader.Truncated) -> [UInt8] {
        let n = Int(try u16(what))
        guard n <= max else { throw Truncated(what: "\(what) (length \(n) over \(max))") }
        return try raw(n, what)
    }
    package mutating func sized32(_ what: String, max: Int) throws(ByteReader.Truncated) -> [UInt8] {
        let n = Int(try u32(what))
        guard n <= max else { throw Truncated(what: "\(what) (length \(n) over \(max))") }
        return try raw(n, what)
    }
}

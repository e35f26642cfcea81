import Touchstone

/// The bytes between the daemon and its print checker
/// (`touchstoned --check-prints`): one request on the checker's stdin,
/// one reply on its stdout, each read whole.
///
/// ```
/// request  "TSPQ" | version (1 byte, = 1) | count (1 byte, at most 10) | bytes*
/// reply    "TSPA" | version (1 byte, = 1) | count (1 byte) | reading*
/// reading  0 (read) | driver: text | device id: text | finger (1 byte: 0 none, 1-10 libfprint's) | data: bytes
///        | 1 (refused) | reason: text
/// bytes    length (4 bytes, big-endian) | the bytes;  text: the same, UTF-8
/// ```
///
/// A reply is checked as strictly as anything a client sends: the daemon
/// reads it from a process that just parsed a stranger's bytes.
package enum PrintCheckWire {
    package static let requestMagic = Array("TSPQ".utf8)
    package static let replyMagic = Array("TSPA".utf8)
    package static let version: UInt8 = 1
    /// An import's most prints (`Calls.ImportFingers`).
    package static let maximumPrints = 10
    /// The most bytes of one print, or of libfprint's serialization of it
    /// (a daemon frame's body is at most 1.25 MiB).
    package static let maximumPrintBytes = 2 << 20
    /// The most bytes of a driver, a device id or a reason.
    package static let maximumTextBytes = 4096
    /// The most bytes of a whole request or reply.
    package static let maximumBytes = 6 + maximumPrints * (4 + maximumPrintBytes) + maximumPrints * 3 * (4 + maximumTextBytes)

    /// What does not read as a request or reply, and where.
    package struct Malformed: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    package static func request(_ prints: [[UInt8]]) -> [UInt8] {
        precondition(prints.count <= maximumPrints && prints.allSatisfy { $0.count <= maximumPrintBytes })
        var bytes = requestMagic + [version, UInt8(prints.count)]
        for print in prints { append(print, to: &bytes) }
        return bytes
    }

    package static func prints(inRequest bytes: [UInt8]) throws(Malformed) -> [[UInt8]] {
        var reader = Reader(bytes)
        let count = try reader.header(requestMagic)
        var prints: [[UInt8]] = []
        for _ in 0..<count { prints.append(try reader.bytes(atMost: maximumPrintBytes)) }
        try reader.end()
        return prints
    }

    package static func reply(_ readings: [PrintReading]) -> [UInt8] {
        precondition(readings.count <= maximumPrints)
        var bytes = replyMagic + [version, UInt8(readings.count)]
        for reading in readings {
            switch reading {
            case .read(let driver, let deviceID, let finger, let data):
                bytes.append(0)
                append(Array(driver.utf8.prefix(maximumTextBytes)), to: &bytes)
                append(Array(deviceID.utf8.prefix(maximumTextBytes)), to: &bytes)
                bytes.append(finger.flatMap { Finger.allCases.firstIndex(of: $0) }.map { UInt8($0 + 1) } ?? 0)
                append(data, to: &bytes)
            case .refused(let reason):
                bytes.append(1)
                append(Array(reason.utf8.prefix(maximumTextBytes)), to: &bytes)
            }
        }
        return bytes
    }

    /// The readings of a reply that must answer `expected` prints.
    package static func readings(inReply bytes: [UInt8], expected: Int) throws(Malformed) -> [PrintReading] {
        var reader = Reader(bytes)
        let count = try reader.header(replyMagic)
        guard count == expected else { throw Malformed("\(count) readings for \(expected) prints") }
        var readings: [PrintReading] = []
        for _ in 0..<count {
            switch try reader.byte() {
            case 0:
                let driver = try reader.text()
                let deviceID = try reader.text()
                let finger = try reader.byte()
                guard finger <= Finger.allCases.count else { throw Malformed("finger \(finger)") }
                let data = try reader.bytes(atMost: maximumPrintBytes)
                readings.append(.read(driver: driver, deviceID: deviceID, finger: finger == 0 ? nil : Finger.allCases[Int(finger) - 1],
                                      data: data))
            case 1: readings.append(.refused(try reader.text()))
            case let tag: throw Malformed("reading tag \(tag)")
            }
        }
        try reader.end()
        return readings
    }

    private static func append(_ field: [UInt8], to bytes: inout [UInt8]) {
        let length = UInt32(field.count)
        bytes += [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
        bytes += field
    }

    /// Reads fields off the front of a request or reply, each bounded.
    private struct Reader {
        let bytes: [UInt8]
        var at = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// The magic and version; the count that follows.
        mutating func header(_ magic: [UInt8]) throws(Malformed) -> Int {
            guard bytes.count >= magic.count + 2, Array(bytes[0..<magic.count]) == magic else { throw Malformed("no \(String(decoding: magic, as: UTF8.self)) header") }
            at = magic.count
            guard try byte() == PrintCheckWire.version else { throw Malformed("another version") }
            let count = Int(try byte())
            guard count <= PrintCheckWire.maximumPrints else { throw Malformed("\(count) prints") }
            return count
        }

        mutating func byte() throws(Malformed) -> UInt8 {
            guard at < bytes.count else { throw Malformed("cut short at byte \(at)") }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func bytes(atMost limit: Int) throws(Malformed) -> [UInt8] {
            guard bytes.count - at >= 4 else { throw Malformed("cut short at byte \(at)") }
            let length = bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            at += 4
            guard length <= limit else { throw Malformed("a field of \(length) bytes (at most \(limit))") }
            guard bytes.count - at >= length else { throw Malformed("a field of \(length) bytes cut short") }
            defer { at += length }
            return Array(bytes[at..<(at + length)])
        }

        mutating func text() throws(Malformed) -> String {
            let field = try bytes(atMost: PrintCheckWire.maximumTextBytes)
            guard let text = String(validating: field, as: UTF8.self) else { throw Malformed("text that is not UTF-8") }
            return text
        }

        func end() throws(Malformed) {
            guard at == bytes.count else { throw Malformed("\(bytes.count - at) bytes after the end") }
        }
    }
}

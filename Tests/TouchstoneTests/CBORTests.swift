import TestRigs
import Testing
@testable import TouchstoneFIDO

/// CTAP2's CBOR through libcbor (Sources/TouchstoneFIDO/CBOR.swift): the
/// canonical bytes written, and what is refused when read.
@Suite("CBOR for CTAP2: canonical writing, strict reading")
struct CBORTests {
    @Test("integers and lengths in their shortest form, as RFC 8949's examples")
    func shortestForms() throws {
        let cases: [(CBOR, [UInt8])] = [
            (.int(0), [0x00]), (.int(23), [0x17]), (.int(24), [0x18, 0x18]), (.int(255), [0x18, 0xFF]),
            (.int(256), [0x19, 0x01, 0x00]), (.int(65536), [0x1A, 0x00, 0x01, 0x00, 0x00]),
            (.unsigned(UInt64(UInt32.max) + 1), [0x1B, 0, 0, 0, 1, 0, 0, 0, 0]),
            (.int(-1), [0x20]), (.int(-7), [0x26]), (.int(-25), [0x38, 0x18]), (.int(-257), [0x39, 0x01, 0x00]),
            (.bytes([]), [0x40]), (.bytes([1, 2]), [0x42, 1, 2]), (.text("a"), [0x61, 0x61]),
            (.bytes([UInt8](repeating: 9, count: 24)), [0x58, 0x18] + [UInt8](repeating: 9, count: 24)),
            (.bool(false), [0xF4]), (.bool(true), [0xF5]), (.null, [0xF6]), (.array([]), [0x80]),
        ]
        for (value, bytes) in cases {
            #expect(value.encoded() == bytes, "\(value)")
            #expect(try CBOR.decode(bytes) == value, "\(bytes)")
        }
    }

    @Test("map keys in CTAP2's canonical order whatever order they were given: an ES256 COSE key is A5 01 02 03 26 20 01 21 … 22 …")
    func canonicalMaps() throws {
        let x = [UInt8](repeating: 0x11, count: 32), y = [UInt8](repeating: 0x22, count: 32)
        let key = CBOR.map([.init(.int(-3), .bytes(y)), .init(.int(-1), .int(1)), .init(.int(3), .int(-7)),
                            .init(.int(-2), .bytes(x)), .init(.int(1), .int(2))])
        let bytes = key.encoded()
        #expect(Array(bytes.prefix(9)) == [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58])
        #expect(Array(bytes[9...10]) == [0x20, 0x11] && bytes[42] == 0x22 && bytes.count == 77)
        // Major type first (24 is an unsigned, -1 a negative, "a" text), then length, then bytes.
        let mixed = CBOR.map([.init(.text("b"), .null), .init(.text("a"), .null), .init(.int(-1), .null), .init(.int(24), .null),
                              .init(.text("aa"), .null), .init(.int(1), .null)])
        let order = try #require(try CBOR.decode(mixed.encoded()).mapValue).map(\.key)
        #expect(order == [.int(1), .int(24), .int(-1), .text("a"), .text("b"), .text("aa")])
        #expect(try CBOR.decode(bytes)[-2]?.bytesValue == x && CBOR.decode(bytes)[3]?.intValue == -7)
    }

    @Test("refused when read: no data, bytes after the value, a truncated string, an indefinite array, a tag, a float, undefined, a text that is not UTF-8, a key twice, nesting past the bound", arguments: [
        ([], "no data"), ([0x01, 0x02], "bytes after"), ([0x58, 0x20, 0x01], "truncated"), ([0x9F, 0x01, 0xFF], "indefinite"),
        ([0xC1, 0x01], "tag"), ([0xF9, 0x3C, 0x00], "half float"), ([0xF7], "undefined"), ([0x61, 0xFF], "not UTF-8"),
        ([0xA2, 0x01, 0x01, 0x01, 0x02], "a key twice"), ([UInt8](repeating: 0x81, count: 17) + [0x01], "17 deep"),
        ([0x9A, 0x10, 0x00, 0x00, 0x00, 0x01], "an array of 268 million in 6 bytes"), ([0xBB, 0, 0, 0, 1, 0, 0, 0, 0], "a map of 4 billion"),
        ([0x82, 0x01, 0x9A, 0x00, 0x10, 0x00, 0x00], "a nested array claiming a million"),
    ] as [([UInt8], String)])
    func refused(_ bytes: [UInt8], _ what: String) {
        #expect(throws: CBOR.Failure.self, "\(what)") { try CBOR.decode(bytes) }
    }

    @Test("16 deep is read; 20,000 random inputs of up to 7609 bytes (CTAPHID's largest message) each give a value or a failure, never a crash")
    func randomInput() async throws {
        // Seconds of CPU: off the cooperative pool, which the daemon's sessions in other tests need.
        try await offPool { try Self.decodeRandomInputs() }
    }

    private static func decodeRandomInputs() throws {
        #expect(try CBOR.decode([UInt8](repeating: 0x81, count: 16) + [0x01]) != .null)
        var generator = SystemRandomNumberGenerator()
        var values = 0
        for n in 0..<20_000 {
            let size = n % 50 == 0 ? Int.random(in: 0...7609, using: &generator) : Int.random(in: 0...64, using: &generator)
            let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if let value = try? CBOR.decode(bytes) {
                values += 1
                let canonical = value.encoded()
                #expect(try CBOR.decode(canonical).encoded() == canonical, "what was read writes and reads back: \(bytes)")
            }
        }
        #expect(values > 0, "some random inputs are single CBOR values")
    }
}

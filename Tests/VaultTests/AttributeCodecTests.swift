import Foundation
import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneVault

/// The binary attribute record (AttributeCodec) and the JSON the first
/// release wrote.
@Suite("Attribute records", .offPool)
struct AttributeCodecTests {
    static let accessControls: [AccessControl] = [
        .none, .userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode,
        .and(.biometryAny, .devicePasscode), .and(.biometryCurrentSet, .devicePasscode),
        .or(.biometryCurrentSet, .devicePasscode),
        // Both biometric flags: refused for new items, but earlier releases stored such records.
        AccessControl(stored: [.devicePasscode, .biometryAny, .biometryCurrentSet], combination: .any),
    ]

    static func sample(_ access: AccessControl, full: Bool) -> ItemAttributes {
        ItemAttributes(service: full ? "org.example.mail ✉︎" : "s", account: full ? "ada@example.org" : "",
                       label: full ? "Mail — Ada" : nil, comment: full ? "" : nil,
                       generic: full ? Data((0..<300).map { UInt8($0 & 0xff) }) : nil,
                       access: access,
                       accessibility: full ? .whenPasscodeSetThisDeviceOnly : .whenUnlockedThisDeviceOnly,
                       created: Date(timeIntervalSince1970: 1_700_000_000.25),
                       modified: Date(timeIntervalSince1970: full ? 1_800_000_000.5 : 0))
    }

    @Test("every access control, with and without the optional fields, round-trips exactly", arguments: accessControls)
    func roundTrip(_ access: AccessControl) throws {
        for full in [false, true] {
            let attributes = Self.sample(access, full: full)
            let encoded = AttributeCodec.encode(attributes)
            #expect(encoded.first == AttributeCodec.format)
            let decoded = try encoded.withUnsafeBytes { try Vault.decodeAttributes($0) }
            #expect(decoded == attributes)
            #expect(decoded.access.description == access.description)
            // The view a read stops at (Vault.secret) agrees with the full decode.
            // (The views point into `encoded`: used inside the closure only.)
            let view = encoded.withUnsafeBytes { raw in
                AttributeCodec.fields(raw).map { f in
                    (service: Array(f.service), account: Array(f.account), access: f.access,
                     matches: Crypto.sameBytes(f.service, attributes.service) && Crypto.sameBytes(f.account, attributes.account),
                     matchesOther: Crypto.sameBytes(f.service, attributes.service + "x"))
                }
            }
            let fields = try #require(view)
            #expect(fields.service == Array(attributes.service.utf8) && fields.account == Array(attributes.account.utf8))
            #expect(fields.matches && !fields.matchesOther)
            #expect(fields.access == access && fields.access.description == access.description)
            #expect(access.alternativeCount == access.alternatives.count)
        }
    }

    @Test("the JSON records of the first release still decode to the same attributes", arguments: accessControls)
    func legacyJSON(_ access: AccessControl) throws {
        let attributes = Self.sample(access, full: true)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let json = [UInt8](try encoder.encode(attributes))
        #expect(json.first == UInt8(ascii: "{"))
        #expect(try json.withUnsafeBytes { try Vault.decodeAttributes($0) } == attributes)
    }

    @Test("every truncation and every extra byte is refused")
    func truncatedOrExtended() {
        let encoded = AttributeCodec.encode(Self.sample(.and(.biometryAny, .devicePasscode), full: true))
        for length in 0..<encoded.count {
            #expect(Array(encoded.prefix(length)).withUnsafeBytes { AttributeCodec.decode($0) } == nil, "prefix \(length)")
        }
        #expect((encoded + [0]).withUnsafeBytes { AttributeCodec.decode($0) } == nil)
    }

    /// The offset of the access-control bytes in the minimal sample
    /// (service "s", account "", no optional fields).
    static let accessOffset = 1 + 5 + 4 + 3

    static func damage(_ name: String, _ b: inout [UInt8]) {
        let o = accessOffset
        switch name {
        case "unknown format byte": b[0] = 0x04
        case "optional marker other than 0 or 1": b[10] = 2
        case "length beyond the record": b[1] = 0xff
        case "invalid UTF-8 in the service": b[5] = 0xff
        case "unknown combination": b[o] = 2
        case "unknown flag": b[o + 2] = 3
        case "unknown accessibility": b[o + 3] = 2
        case "a date that is not a number":
            withUnsafeBytes(of: Double.nan.bitPattern.littleEndian) { b.replaceSubrange(b.count - 8..<b.count, with: $0) }
        case "an infinite date":
            withUnsafeBytes(of: Double.infinity.bitPattern.littleEndian) { b.replaceSubrange(b.count - 16..<b.count - 8, with: $0) }
        default: Issue.record("no such damage: \(name)")
        }
    }

    @Test("malformed fields are refused", arguments: [
        "unknown format byte", "optional marker other than 0 or 1", "length beyond the record",
        "invalid UTF-8 in the service", "unknown combination", "unknown flag", "unknown accessibility",
        "a date that is not a number", "an infinite date",
    ])
    func malformed(_ name: String) throws {
        var encoded = AttributeCodec.encode(Self.sample(.devicePasscode, full: false))
        // The layout this test assumes: one flag (passcode = 2) at the offset.
        try #require(Array(encoded[Self.accessOffset...Self.accessOffset + 3]) == [0, 1, 2, 0])
        #expect(encoded.withUnsafeBytes { AttributeCodec.decode($0) } != nil)
        Self.damage(name, &encoded)
        #expect(throws: VaultError.self, "\(name)") { try encoded.withUnsafeBytes { try Vault.decodeAttributes($0) } }
    }

    @Test("flags given twice, or 'and' with one flag, were not written by the encoder and are refused")
    func nonCanonicalAccess() {
        let base = AttributeCodec.encode(Self.sample(.and(.biometryAny, .devicePasscode), full: false))
        #expect(Array(base[Self.accessOffset...Self.accessOffset + 3]) == [1, 2, 0, 2])
        var twice = base
        twice[Self.accessOffset + 3] = 0  // biometry-any & biometry-any
        #expect(twice.withUnsafeBytes { AttributeCodec.decode($0) } == nil)
        var single = base
        single.replaceSubrange(Self.accessOffset...Self.accessOffset + 3, with: [1, 1, 2])  // "and" of one flag
        #expect(single.withUnsafeBytes { AttributeCodec.decode($0) } == nil)
    }

    @Test("an item stored by the first release (JSON attributes) opens, lists and updates; the update writes the binary record")
    func legacyItemInAVault() throws {
        // The first release wrote XChaCha20-Poly1305 rows.
        let rig = try VaultRig(recordCipher: .xchacha20poly1305)
        try rig.vault.add(secret("old"), attributes: ItemAttributes(service: "s", account: "legacy", label: "L", access: .devicePasscode))
        try rig.vault.add(secret("new"), attributes: ItemAttributes(service: "s", account: "current", access: .none))
        let stored = try rig.vault.attributes(service: "s", account: "legacy")
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        // Both items' attributes as JSON: a read of the access-none one
        // goes the long way too (the fields view takes binary records only).
        for account in ["legacy", "current"] {
            let json = [UInt8](try encoder.encode(try rig.vault.attributes(service: "s", account: account)))
            let box = Crypto.seal(json, key: rig.vault.metadataKey, ad: Vault.metadataAD)
            try rig.database().query("UPDATE items SET metadata = ? WHERE lookup = ?",
                                     [.blob(box), .blob(rig.vault.lookupHash(service: "s", account: account))])
        }
        let lookup = rig.vault.lookupHash(service: "s", account: "legacy")

        let vault = try rig.reopen()
        #expect(string(try vault.secret(service: "s", account: "current", proof: .none)) == "new")
        #expect(try vault.attributes(service: "s", account: "legacy") == stored)
        #expect(string(try vault.secret(service: "s", account: "legacy", proof: passcode)) == "old")
        #expect(try vault.list().map(\.state) == [.ok, .ok])
        try vault.update(service: "s", account: "legacy", label: "M")
        let metadata = try rig.database().rows("SELECT metadata FROM items WHERE lookup = ?", [.blob(lookup)]) { $0.blob(0) }
        let record = try #require(metadata.first)
        let plain = try #require(vault.metadataKeys.xchacha.open(record, ad: Vault.metadataAD))
        #expect(plain.withUnsafeBytes { $0.first } == AttributeCodec.format)
        #expect(try vault.attributes(service: "s", account: "legacy").label == "M")
        #expect(string(try vault.secret(service: "s", account: "legacy", proof: passcode)) == "old")
    }

    @Test("a Secret Service attribute set and content type round-trip in format 0x03; out-of-order or repeated names are refused")
    func extendedFormat() throws {
        var attributes = Self.sample(.biometryAny, full: true)
        attributes.searchAttributes = ["xdg:schema": "org.example", "a": "", "é": "ü", "": "empty name"]
        attributes.contentType = "application/octet-stream"
        let encoded = AttributeCodec.encode(attributes)
        #expect(encoded.first == AttributeCodec.extendedFormat)
        #expect(try encoded.withUnsafeBytes { try Vault.decodeAttributes($0) } == attributes)
        for (set, type) in [([String: String](), nil), (nil, "text/html")] as [([String: String]?, String?)] {
            attributes.searchAttributes = set
            attributes.contentType = type
            #expect(AttributeCodec.encode(attributes).withUnsafeBytes { AttributeCodec.decode($0) } == attributes)
        }
        // Without either, the record is format 0x02 as before.
        attributes.searchAttributes = nil
        attributes.contentType = nil
        #expect(AttributeCodec.encode(attributes).first == AttributeCodec.format)
        // Two pairs swapped: the names out of order.
        attributes.searchAttributes = ["a": "1", "b": "2"]
        var swapped = AttributeCodec.encode(attributes)
        let tail = swapped.count - 2 * (4 + 1 + 4 + 1)
        let first = Array(swapped[tail..<tail + 10]), second = Array(swapped[tail + 10..<tail + 20])
        swapped.replaceSubrange(tail..<tail + 20, with: second + first)
        #expect(swapped.withUnsafeBytes { AttributeCodec.decode($0) } == nil)
        var repeated = AttributeCodec.encode(attributes)
        repeated.replaceSubrange(tail + 10..<tail + 20, with: first)
        #expect(repeated.withUnsafeBytes { AttributeCodec.decode($0) } == nil)
        #expect(AttributeCodec.encode(attributes).withUnsafeBytes { AttributeCodec.decode($0) } == attributes)
    }
}

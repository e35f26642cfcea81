import Foundation

/// The binary encoding of an item's attributes, the plaintext of the
/// `metadata` column (docs/vault.md, "Record layout").
///
/// Vaults written before it hold the attributes as JSON; a JSON text starts
/// with `{`, this encoding with its format byte, so both are read and only
/// this one is written. All integers are little-endian:
///
///     u8   format (0x02)
///     str  service            str = u32 length, UTF-8 bytes
///     str  account
///     opt  label              opt = u8 0 (absent) or 1 followed by str
///     opt  comment
///     optb generic            optb = u8 0 or 1 followed by u32 length, bytes
///     u8   combination        0 any ("or"), 1 all ("and")
///     u8   n, n x u8 flag     0 biometry-any, 1 biometry-current-set, 2 passcode
///     u8   accessibility      0 when-unlocked, 1 when-passcode-set
///     f64  created            seconds since 1970, IEEE 754 bits
///     f64  modified
///
/// Format 0x03 (an item with a Secret Service attribute set or content
/// type) continues after `modified`:
///
///     opt  content type
///     u8   0 (no attribute set) or 1, then u32 n and n x (str name, str value),
///          names distinct and in ascending byte order
///
/// Decoding is strict: every byte is accounted for, lengths are checked
/// before use, strings must be valid UTF-8, flags distinct and dates finite.
/// Anything else is `nil`, never a trap (fuzzed: fuzz/ItemRecord.swift).
enum AttributeCodec {
    static let format: UInt8 = 0x02
    /// The format of a record with a Secret Service attribute set or content type.
    static let extendedFormat: UInt8 = 0x03
    /// Whether a record starting with `first` is this encoding (either
    /// format), not a first-release JSON text.
    static func isBinary(_ first: UInt8?) -> Bool { first == format || first == extendedFormat }

    /// The most attributes an item's set holds.
    static let maximumAttributeCount = 64

    private static let flagCodes: [AccessFlag] = [.biometryAny, .biometryCurrentSet, .devicePasscode]
    private static let accessibilityCodes: [Accessibility] = [.whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly]

    /// The encoded attributes. The caller wipes the result after use.
    static func encode(_ a: ItemAttributes) -> [UInt8] {
        var size = 1 + 4 + a.service.utf8.count + 4 + a.account.utf8.count
        size += 1 + (a.label.map { 4 + $0.utf8.count } ?? 0)
        size += 1 + (a.comment.map { 4 + $0.utf8.count } ?? 0)
        size += 1 + (a.generic.map { 4 + $0.count } ?? 0)
        size += 2 + a.access.flags.count + 1 + 16
        let extended = a.searchAttributes != nil || a.contentType != nil
        let pairs = (a.searchAttributes ?? [:]).sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        if extended {
            size += 1 + (a.contentType.map { 4 + $0.utf8.count } ?? 0) + 5
            for (name, value) in pairs { size += 8 + name.utf8.count + value.utf8.count }
        }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        out.append(extended ? extendedFormat : format)
        func put(_ text: String) { out.appendLittleEndian(UInt32(text.utf8.count)); out.append(contentsOf: text.utf8) }
        func put(_ text: String?) {
            guard let text else { out.append(0); return }
            out.append(1); put(text)
        }
        put(a.service)
        put(a.account)
        put(a.label)
        put(a.comment)
        if let generic = a.generic {
            out.append(1); out.appendLittleEndian(UInt32(generic.count)); out.append(contentsOf: generic)
        } else {
            out.append(0)
        }
        out.append(a.access.combination == .all ? 1 : 0)
        out.append(UInt8(a.access.flags.count))
        for flag in a.access.flags { out.append(UInt8(flagCodes.firstIndex(of: flag)!)) }
        out.append(UInt8(accessibilityCodes.firstIndex(of: a.accessibility)!))
        for date in [a.created, a.modified] { out.appendLittleEndian(date.timeIntervalSince1970.bitPattern) }
        if extended {
            put(a.contentType)
            if a.searchAttributes == nil {
                out.append(0)
            } else {
                out.append(1)
                out.appendLittleEndian(UInt32(pairs.count))
                for (name, value) in pairs { put(name); put(value) }
            }
        }
        return out
    }

    /// A record's fields as views into its bytes, every structural rule
    /// checked (lengths, codes, distinct flags, finite dates, nothing left
    /// over); only the UTF-8 of the strings is left to `decode`. A read that
    /// needs just the identity and access control (`Vault.secret`) stops
    /// here: it compares service and account byte for byte with the ones
    /// asked for, which are valid UTF-8.
    struct Fields {
        var service: UnsafeRawBufferPointer
        var account: UnsafeRawBufferPointer
        var label: UnsafeRawBufferPointer?
        var comment: UnsafeRawBufferPointer?
        var generic: UnsafeRawBufferPointer?
        var access: AccessControl
        var accessibility: Accessibility
        var created: Double
        var modified: Double
        var contentType: UnsafeRawBufferPointer?
        /// The attribute set's (name, value) pairs; nil: none.
        var searchAttributes: [(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)]?
    }

    /// The fields of exactly one well-formed record, or nil.
    static func fields(_ bytes: UnsafeRawBufferPointer) -> Fields? {
        var reader = RecordReader(bytes)
        guard let version = reader.byte(), version == format || version == extendedFormat,
              let service = reader.lengthPrefixed(), let account = reader.lengthPrefixed(),
              let label = reader.optional({ $0.lengthPrefixed() }),
              let comment = reader.optional({ $0.lengthPrefixed() }),
              let generic = reader.optional({ $0.lengthPrefixed() }),
              let combination = reader.byte(), combination <= 1,
              let count = reader.byte(), Int(count) <= flagCodes.count
        else { return nil }
        var flags: [AccessFlag] = []
        for _ in 0..<count {
            guard let code = reader.byte(), Int(code) < flagCodes.count, !flags.contains(flagCodes[Int(code)]) else { return nil }
            flags.append(flagCodes[Int(code)])
        }
        // "and" of fewer than two flags is written as "any": anything else
        // was not written by `encode`.
        guard combination == 0 || flags.count >= 2,
              let accessibility = reader.byte(), Int(accessibility) < accessibilityCodes.count,
              let created = reader.finiteDouble(), let modified = reader.finiteDouble()
        else { return nil }
        var contentType: UnsafeRawBufferPointer?
        var pairs: [(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)]?
        if version == extendedFormat {
            guard let type = reader.optional({ $0.lengthPrefixed() }), let present = reader.byte(), present <= 1 else { return nil }
            contentType = type
            if present == 1 {
                guard let count = reader.integer(UInt32.self), count <= maximumAttributeCount else { return nil }
                var read: [(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)] = []
                for _ in 0..<count {
                    guard let name = reader.lengthPrefixed(), let value = reader.lengthPrefixed() else { return nil }
                    // Distinct and ascending: one encoding per set.
                    if let last = read.last, !last.name.lexicographicallyPrecedes(name) { return nil }
                    read.append((name, value))
                }
                pairs = read
            }
            // 0x03 only when there is something for it to hold.
            guard contentType != nil || pairs != nil else { return nil }
        }
        guard reader.isAtEnd else { return nil }
        return Fields(service: service, account: account, label: label, comment: comment, generic: generic,
                      access: flags.isEmpty ? .none : AccessControl(stored: flags, combination: combination == 1 ? .all : .any),
                      accessibility: accessibilityCodes[Int(accessibility)], created: created, modified: modified,
                      contentType: contentType, searchAttributes: pairs)
    }

    /// The attributes, or nil for anything that is not exactly one valid
    /// record.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ItemAttributes? {
        guard let f = fields(bytes),
              let service = String(validating: f.service, as: UTF8.self),
              let account = String(validating: f.account, as: UTF8.self),
              let label = optionalString(f.label), let comment = optionalString(f.comment),
              let contentType = optionalString(f.contentType)
        else { return nil }
        var set: [String: String]?
        if let pairs = f.searchAttributes {
            var decoded: [String: String] = [:]
            for (rawName, rawValue) in pairs {
                guard let name = String(validating: rawName, as: UTF8.self),
                      let value = String(validating: rawValue, as: UTF8.self) else { return nil }
                decoded[name] = value
            }
            set = decoded
        }
        return ItemAttributes(service: service, account: account, label: label, comment: comment,
                              generic: f.generic.map { Data($0) }, access: f.access, accessibility: f.accessibility,
                              created: Date(timeIntervalSince1970: f.created),
                              modified: Date(timeIntervalSince1970: f.modified),
                              searchAttributes: set, contentType: contentType)
    }

    /// Some(nil) for an absent string, Some(text) for valid UTF-8, nil
    /// for invalid.
    private static func optionalString(_ raw: UnsafeRawBufferPointer?) -> String?? {
        guard let raw else { return .some(nil) }
        return String(validating: raw, as: UTF8.self).map { .some($0) }
    }
}

/// The attributes record's own fields, on the shared reader.
private extension RecordReader {
    /// A u32 length, then that many bytes.
    mutating func lengthPrefixed() -> UnsafeRawBufferPointer? {
        integer(UInt32.self).flatMap { bytes(Int($0)) }
    }

    /// Some(nil) for an absent value, Some(value) for a present one,
    /// nil for a malformed one.
    mutating func optional<T>(_ read: (inout RecordReader) -> T?) -> T?? {
        switch byte() {
        case 0: return .some(nil)
        case 1: return read(&self).map { .some($0) }
        default: return nil
        }
    }

    mutating func finiteDouble() -> Double? {
        guard let seconds = integer(UInt64.self).map(Double.init(bitPattern:)), seconds.isFinite else { return nil }
        return seconds
    }
}

/// The `keys` column of an item (schema 2 on): its ways in, each with the
/// item key wrapped for it (docs/vault.md, "Item records"). Schema 1 kept
/// these as rows of a `wraps` table; one column makes an add one row and a
/// get one row.
///
///     u8   n                  ways in, 1 to 3 (one per alternative)
///     n x  u8   alternative   0, 1, ... in order
///          u8   k             class keys, 1 to 3 (0 = the device key)
///          k x  u64           class key id, little-endian
///          u16  length        of the wrapped key, little-endian
///          length bytes       the wrapped item key (nested sealed boxes
///                             for "and"); for the device key: empty (the
///                             secret is sealed to it, schema 3), or the
///                             item key sealed under it (older rows)
///
/// Decoding is strict; anything else is nil, never a trap (fuzzed:
/// fuzz/ItemRecord.swift).
enum WrapCodec {
    static let maximumWays = AccessFlag.allCases.count

    static func encode(_ wraps: [Vault.Wrap]) -> [UInt8] {
        var out: [UInt8] = [UInt8(wraps.count)]
        for wrap in wraps {
            precondition(wrap.wrapped.count <= Int(UInt16.max) && (1...maximumWays).contains(wrap.classKeyIDs.count))
            out.append(UInt8(wrap.alternative))
            out.append(UInt8(wrap.classKeyIDs.count))
            for id in wrap.classKeyIDs { out.appendLittleEndian(UInt64(id)) }
            out.appendLittleEndian(UInt16(wrap.wrapped.count))
            out.append(contentsOf: wrap.wrapped)
        }
        return out
    }

    static func decode(_ bytes: [UInt8]) -> [Vault.Wrap]? {
        bytes.withUnsafeBytes { raw in
            var reader = RecordReader(raw)
            guard let n = reader.byte(), (1...maximumWays).contains(Int(n)) else { return nil }
            var wraps: [Vault.Wrap] = []
            for index in 0..<Int(n) {
                guard let alternative = reader.byte(), Int(alternative) == index,
                      let k = reader.byte(), (1...maximumWays).contains(Int(k)) else { return nil }
                var ids: [Int64] = []
                for _ in 0..<k {
                    guard let id = reader.integer(UInt64.self), id <= UInt64(Int64.max) else { return nil }
                    ids.append(Int64(id))
                }
                guard let length = reader.integer(UInt16.self), let wrapped = reader.bytes(Int(length)) else { return nil }
                wraps.append(Vault.Wrap(alternative: index, classKeyIDs: ids, wrapped: Array(wrapped)))
            }
            return reader.isAtEnd ? wraps : nil
        }
    }

    /// Where the wrapped key lies in `bytes` when the record is exactly one
    /// way in through the device key (access `none`), as `decode` would read
    /// it; nil for any other record. Lets a read of such an item open the
    /// key in place (fuzzed against `decode`: Vault.fuzzRecordCheck).
    static func deviceWrap(in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        // n = 1, alternative 0, k = 1, id 0 (u64), u16 length, the key.
        let header = 13
        guard bytes.count >= header, bytes[0] == 1, bytes[1] == 0, bytes[2] == 1,
              bytes[3..<11].allSatisfy({ $0 == 0 }),
              bytes.count == header + (Int(bytes[11]) | Int(bytes[12]) << 8) else { return nil }
        return header..<bytes.count
    }

    static func deviceWrap(in bytes: [UInt8]) -> Range<Int>? {
        bytes.withUnsafeBufferPointer { deviceWrap(in: $0) }
    }
}

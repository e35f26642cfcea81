#if TOUCHSTONE_TEST_SUPPORT
/// The body of the `ItemRecord` fuzz target, here so that the libFuzzer
/// entry (fuzz/ItemRecord.swift, built by scripts/fuzz) and the regression
/// test that replays every committed input (VaultTests, FuzzReplayTests)
/// run the very same code.
extension Vault {
    /// Feeds `bytes` to the record decoders: as the attributes' record
    /// (binary, or the first release's JSON; after decryption; and the
    /// binary record's field view), as an item's
    /// keys record (and its in-place device wrap), as a schema 1 wrap's class key id list, as an
    /// access-control spec. None may trap. Returns nil, or the invariant the input broke.
    static func fuzzRecordCheck(_ bytes: [UInt8]) -> String? {
        if let attributes = try? bytes.withUnsafeBytes({ try decodeAttributes($0) }) {
            _ = attributes.access.alternatives
            _ = attributes.access.description
            // A binary record that decodes encodes back to a record that
            // decodes to the same attributes (dates aside: Foundation keeps
            // them relative to 2001, so their last bit may move).
            if AttributeCodec.isBinary(bytes.first) {
                var again = AttributeCodec.encode(attributes).withUnsafeBytes { AttributeCodec.decode($0) }
                again?.created = attributes.created
                again?.modified = attributes.modified
                if again != attributes { return "the attributes record does not encode back to itself" }
            }
        }
        // The view a read stops at agrees with the full decode: it accepts
        // everything the decode accepts, with the same identity and access.
        let disagreement: String? = bytes.withUnsafeBytes { raw in
            let fields = AttributeCodec.fields(raw), decoded = AttributeCodec.decode(raw)
            guard let decoded else { return nil }
            guard let fields else { return "the fields view refused a record the decode accepts" }
            guard Crypto.sameBytes(fields.service, decoded.service), Crypto.sameBytes(fields.account, decoded.account),
                  fields.access == decoded.access else { return "the fields view disagrees with the decode" }
            return nil
        }
        if let disagreement { return disagreement }
        let wraps = WrapCodec.decode(bytes)
        if let wraps, WrapCodec.encode(wraps) != bytes {
            return "the keys record does not encode back to itself"
        }
        // The in-place read of a device wrap agrees with the decode.
        let deviceOnly = wraps.flatMap { $0.count == 1 && $0[0].classKeyIDs == [ClassKey.deviceID] ? $0[0].wrapped : nil }
        if WrapCodec.deviceWrap(in: bytes).map({ Array(bytes[$0]) }) != deviceOnly {
            return "the device wrap read in place differs from the decoded one"
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if let ids = parseClassKeyIDs(text), ids.isEmpty || !ids.allSatisfy({ $0 >= 0 }) {
            return "parsed a bad class key id list: \(ids)"
        }
        if let access = try? AccessControl(parsing: text), (try? AccessControl(parsing: access.description)) != access {
            // A parsed spec prints back to a spec that parses to the same value.
            return "the access spec \(access.description) does not parse back to itself"
        }
        return nil
    }
}
#endif

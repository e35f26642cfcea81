/// The body of the `ItemRecord` fuzz target, here so that the libFuzzer
/// entry (fuzz/ItemRecord.swift, built by scripts/fuzz) and the regression
/// test that replays every committed input (VaultTests, FuzzReplayTests)
/// run the very same code.
extension Vault {
    /// Feeds `bytes` to the record decoders: as the attributes' JSON (after
    /// decryption), as a wrap's class key id list, as an access-control
    /// spec. None may trap. Returns nil, or the invariant the input broke.
    static func fuzzRecordCheck(_ bytes: [UInt8]) -> String? {
        if let attributes = try? bytes.withUnsafeBytes({ try decodeAttributes($0) }) {
            _ = attributes.access.alternatives
            _ = attributes.access.description
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if let ids = parseClassKeyIDs(text), ids.isEmpty || !ids.allSatisfy({ $0 >= 0 }) {
            return "parsed a bad class key id list: \(ids)"
        }
        if let access = try? AccessControl(spec: text), (try? AccessControl(spec: access.description)) != access {
            // A parsed spec prints back to a spec that parses to the same value.
            return "the access spec \(access.description) does not parse back to itself"
        }
        return nil
    }
}

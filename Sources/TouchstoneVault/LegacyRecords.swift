import Foundation

/// Records in the formats that earlier releases wrote, which the vault
/// still reads: attributes as the first release's JSON (beside the
/// binary encoding), and schema 1's lists of class key ids.
extension Vault {
    /// The attributes from their decrypted record: the binary encoding
    /// (AttributeCodec), or JSON as the first release wrote it. Any
    /// malformed input is `corrupted`, never a trap (fuzzed:
    /// fuzz/ItemRecord.swift).
    static func decodeAttributes(_ plain: UnsafeRawBufferPointer) throws(VaultError) -> ItemAttributes {
        if AttributeCodec.isBinary(plain.first) {
            guard let attributes = AttributeCodec.decode(plain) else {
                throw VaultError.corrupted("an item's attributes do not parse")
            }
            return attributes
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {  // JSONDecoder throws untyped errors: any of them is damage
            return try decoder.decode(ItemAttributes.self, from: Data(plain))
        } catch {
            throw VaultError.corrupted("an item's attributes do not parse")
        }
    }

    /// The class key ids of a wraps row ("3", "3+5", "0"); nil for anything
    /// else (fuzzed: fuzz/ItemRecord.swift).
    static func parseClassKeyIDs(_ text: String) -> [Int64]? {
        let parts = text.split(separator: "+", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.count <= AccessFlag.allCases.count else { return nil }
        var ids: [Int64] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 19, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let id = Int64(part), id >= 0 else { return nil }
            ids.append(id)
        }
        return ids
    }
}

import Testing
import TestScopes
import TestRigs
@testable import TouchstoneVault

/// The `ItemRecord` fuzz target's committed inputs (fuzz/seeds/ItemRecord,
/// fuzz/crashes/ItemRecord) replayed through the function the fuzzer calls.
@Suite("Fuzz inputs replayed: ItemRecord", .offPool)
struct ItemRecordFuzzReplayTests {
    @Test("every seed and every input that once crashed the fuzzer: no trap, no broken invariant")
    func replay() throws {
        let inputs = try FuzzInputs.inputs("ItemRecord")
        #expect(inputs.contains { $0.isSeed }, "no seeds in \(FuzzInputs.folder.path)/seeds/ItemRecord")
        for input in inputs {
            #expect(Vault.fuzzRecordCheck(input.bytes) == nil, "\(input)")
        }
        // The seeds reach past the first check of each decoder.
        let raw = inputs.filter(\.isSeed).map(\.bytes)
        let seeds = raw.map { String(decoding: $0, as: UTF8.self) }
        #expect(seeds.contains { (try? Array($0.utf8).withUnsafeBytes { try Vault.decodeAttributes($0) }) != nil }, "no seed is valid attributes")
        #expect(seeds.contains { Vault.parseClassKeyIDs($0) != nil }, "no seed is a valid id list")
        #expect(raw.contains { $0.first == AttributeCodec.format && $0.withUnsafeBytes { AttributeCodec.decode($0) } != nil },
                "no seed is a valid binary attributes record")
        #expect(raw.contains { WrapCodec.decode($0) != nil }, "no seed is a valid keys record")
        #expect(seeds.contains { (try? AccessControl(parsing: $0)) != nil }, "no seed is a valid access spec")
    }
}

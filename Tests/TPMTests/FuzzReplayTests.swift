import Testing
import TestScopes
import TestRigs
@testable import TouchstoneTPM

/// The `SealedBlob` fuzz target's committed inputs (fuzz/seeds/SealedBlob,
/// fuzz/crashes/SealedBlob) replayed through the function the fuzzer calls.
@Suite("Fuzz inputs replayed: SealedBlob", .offPool)
struct SealedBlobFuzzReplayTests {
    @Test("every seed and every input that once crashed the fuzzer: no trap, no broken invariant")
    func replay() throws {
        let inputs = try FuzzInputs.inputs("SealedBlob")
        #expect(inputs.contains { $0.isSeed }, "no seeds in \(FuzzInputs.folder.path)/seeds/SealedBlob")
        for input in inputs {
            #expect(SealedBlob.fuzzCheck(input.bytes) == nil, "\(input)")
        }
        // The seeds are real blob bodies: they reach the parser behind the checksum.
        for seed in inputs where seed.isSeed {
            #expect(throws: Never.self, "\(seed)") { try SealedBlob(serialized: seed.bytes + SealedBlob.checksum(seed.bytes)) }
        }
    }
}

#if TOUCHSTONE_TEST_SUPPORT
/// The body of the `SealedBlob` fuzz target, here so that the libFuzzer
/// entry (fuzz/SealedBlob.swift, built by scripts/fuzz) and the regression
/// test that replays every committed input (TPMTests, FuzzReplayTests) run
/// the very same code.
extension SealedBlob {
    /// Feeds `body` to the decoder, raw and with a valid checksum appended
    /// (to reach the structural parser behind the checksum). Any input is a
    /// blob or a `corruptedBlob` error: a trap is a failure. Returns nil, or
    /// the invariant the input broke.
    static func fuzzCheck(_ body: [UInt8]) -> String? {
        _ = try? SealedBlob(serialized: body)
        let whole = body + checksum(body)
        if let parsed = try? SealedBlob(serialized: whole), parsed.serialized() != whole {
            return "a blob that parses serialized back to other bytes"
        }
        return nil
    }
}
#endif

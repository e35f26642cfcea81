// libFuzzer target: the sealed-blob decoder (TouchstoneTPM.SealedBlob).
// The input is a blob body; the checksum is appended here so that the
// fuzzer reaches the structural parser behind it. The decoder must never
// trap: every input is a blob or a `corruptedBlob` error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? SealedBlob(serialized: body)
    if let parsed = try? SealedBlob(serialized: body + SealedBlob.checksum(body)) {
        // A blob that parses must serialize back to the same bytes.
        precondition(parsed.serialized() == body + SealedBlob.checksum(body), "round trip changed the blob")
    }
    return 0
}

// libFuzzer target: the sealed-blob decoder (TouchstoneTPM.SealedBlob).
// The body is SealedBlob.fuzzCheck (Sources/TouchstoneTPM/SealedBlob+Fuzz.swift),
// which the regression test replays every committed input through.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if let broken = SealedBlob.fuzzCheck(Array(UnsafeBufferPointer(start: data, count: size))) { fatalError(broken) }
    return 0
}

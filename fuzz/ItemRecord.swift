// libFuzzer target: the item record decoders of the vault (TouchstoneVault).
// The body is Vault.fuzzRecordCheck (Sources/TouchstoneVault/Vault+Fuzz.swift),
// which the regression test replays every committed input through.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if let broken = Vault.fuzzRecordCheck(Array(UnsafeBufferPointer(start: data, count: size))) { fatalError(broken) }
    return 0
}

// libFuzzer target: the CLI argument parser (TouchstoneCommandLine).
// The body is CommandLineParser.fuzzCheck
// (Sources/TouchstoneCommandLine/CommandLineParser+Fuzz.swift), which the
// regression test replays every committed input through.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if let broken = CommandLineParser.fuzzCheck(Array(UnsafeBufferPointer(start: data, count: size))) { fatalError(broken) }
    return 0
}

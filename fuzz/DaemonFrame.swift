// libFuzzer target: the daemon protocol's frame and message decoding
// (TouchstoneClient): a frame body as the daemon and its clients read it.
// The body is DaemonWire.fuzzCheck
// (Sources/TouchstoneClient/Daemon/DaemonWire+Fuzz.swift), which the
// regression test replays every committed input through.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if let broken = DaemonWire.fuzzCheck(Array(UnsafeBufferPointer(start: data, count: size))) { fatalError(broken) }
    return 0
}

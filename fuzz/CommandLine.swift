// libFuzzer target: the CLI argument parser (TouchstoneCommandLine). The
// input is split at NUL bytes into arguments (invalid UTF-8 becomes U+FFFD,
// as argv does); the first argument may also feed an environment variable.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    var environment = ["HOME": "/home/fuzz"]
    if let first = arguments.first { environment["TOUCHSTONE_TIMEOUT"] = first }
    _ = CommandLineParser.parse(arguments: Array(arguments.dropFirst()), environment: environment)
    _ = CommandLineParser.parse(arguments: arguments, environment: [:])
    return 0
}

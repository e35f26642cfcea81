import Testing

/// Every test that drives a libfprint virtual reader lives in a suite nested
/// in this one. `.serialized` runs them one at a time: each has its own
/// reader and socket already, but libfprint reads the reader's socket path
/// from the process environment, and timing assertions (cancel, timeout)
/// are steadier without neighbours competing for two cores.
@Suite(.serialized) struct VirtualReaderTests {}

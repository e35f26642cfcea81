internal import CSodium
internal import CTSS2

// The TSS's sized buffers (TPM2B_*) import as a `size` and a fixed C array,
// which Swift sees as a tuple. These helpers copy bytes in and out of them
// with the bounds checked.

/// Copies `bytes` into the tuple `buffer`, returning the size to store.
/// Throws when the bytes do not fit.
func fillTuple<T>(_ buffer: inout T, with bytes: UnsafeRawBufferPointer, what: String) throws(TPMError) -> UInt16 {
    let capacity = MemoryLayout<T>.size
    guard bytes.count <= capacity, bytes.count <= Int(UInt16.max) else {
        throw TPMError.invalidArgument("\(what) is \(bytes.count) bytes; at most \(capacity) fit")
    }
    withUnsafeMutableBytes(of: &buffer) { dst in
        if bytes.count > 0 { dst.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
    }
    return UInt16(bytes.count)
}

/// The first `size` bytes of the tuple `buffer` (clamped to its capacity).
func tupleBytes<T>(_ buffer: T, size: UInt16) -> [UInt8] {
    withUnsafeBytes(of: buffer) { Array($0.prefix(Int(size))) }
}

/// Wipes a value in place (a struct holding secrets, before it goes out of scope).
func wipe<T>(_ value: inout T) {
    withUnsafeMutableBytes(of: &value) { sodium_memzero($0.baseAddress, $0.count) }
}

extension TPM2B_DIGEST {
    init(bytes: [UInt8]) throws(TPMError) {
        self.init()
        var buffer = self.buffer
        size = try bytes.withUnsafeBytes { bytes in Result { () throws(TPMError) in try fillTuple(&buffer, with: bytes, what: "digest") } }.get()
        self.buffer = buffer
    }
    var bytes: [UInt8] { tupleBytes(buffer, size: size) }
}

extension TPM2B_NAME {
    var bytes: [UInt8] { tupleBytes(name, size: size) }
}

extension TPM2B_MAX_NV_BUFFER {
    init(bytes: [UInt8]) throws(TPMError) {
        self.init()
        var buffer = self.buffer
        size = try bytes.withUnsafeBytes { bytes in Result { () throws(TPMError) in try fillTuple(&buffer, with: bytes, what: "NV data") } }.get()
        self.buffer = buffer
    }
    var bytes: [UInt8] { tupleBytes(buffer, size: size) }
}

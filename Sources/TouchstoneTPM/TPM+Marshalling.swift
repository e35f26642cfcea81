internal import CTSS2

/// TPM structures to and from their wire bytes, through tss2-mu.
extension TPM {
    typealias Marshal<T> = (UnsafePointer<T>?, UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?) -> TSS2_RC
    typealias Unmarshal<T> = (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<T>?) -> TSS2_RC

    func marshal<T>(_ value: UnsafeMutablePointer<T>, _ fn: Marshal<T>) throws(TPMError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: MemoryLayout<T>.size + 16)
        var offset = 0
        let rc = buffer.withUnsafeMutableBufferPointer { fn(value, $0.baseAddress, $0.count, &offset) }
        guard rc == ts_RC_SUCCESS else { throw TPMError.other(code: rc, text: ResponseCode(rc).text) }
        return Array(buffer.prefix(offset))
    }

    /// Unmarshals exactly `bytes` (trailing bytes are an error).
    func unmarshal<T>(_ bytes: [UInt8], into value: inout T, _ fn: Unmarshal<T>) throws(TPMError) {
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer { fn($0.baseAddress, $0.count, &offset, &value) }
        guard rc == ts_RC_SUCCESS, offset == bytes.count else {
            throw TPMError.corruptedBlob(detail: "bad TPM structure")
        }
    }
}

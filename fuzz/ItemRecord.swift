// libFuzzer target: the item record decoders of the vault
// (TouchstoneVault): the attributes' JSON after decryption, the class key
// id list of a wrap, and the access-control spec. None may trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if let attributes = try? Vault.decodeAttributes(bytes) {
        _ = attributes.access.alternatives
        _ = attributes.access.description
    }
    let text = String(decoding: bytes, as: UTF8.self)
    if let ids = Vault.parseClassKeyIDs(text) {
        precondition(!ids.isEmpty && ids.allSatisfy { $0 >= 0 }, "parsed a bad id list")
    }
    if let access = try? AccessControl(spec: text) {
        // A parsed spec prints back to a spec that parses to the same value.
        precondition((try? AccessControl(spec: access.description)) == access, "spec round trip")
    }
    return 0
}

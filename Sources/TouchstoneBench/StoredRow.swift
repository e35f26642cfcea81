/// One row of the items table as stored on disk: the lookup hash, the
/// encrypted attributes and the encrypted secret. The baseline inserts the
/// vault's own rows, byte for byte, so both sides store the same data.
struct StoredRow {
    let lookup: [UInt8]
    let metadata: [UInt8]
    let secret: [UInt8]

    var size: Int { lookup.count + metadata.count + secret.count }
}

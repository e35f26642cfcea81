import FoundationEssentials

/// An ssh key as `ssh-key list` shows it: its public half and metadata,
/// never anything of the private key (which never leaves the TPM).
public struct SSHKeyInfo: Sendable, Hashable, Codable {
    public var name: String
    public var comment: String
    public var access: AccessControl
    public var created: Date
    /// The uncompressed P-256 point: 0x04, X, Y (65 bytes); empty for a
    /// corrupted record.
    public var publicPoint: [UInt8]
    /// `ok`, `invalidated` (every way to sign is closed: a
    /// biometry-current-set key after an enrolment change), or `corrupted`.
    public var state: ListedItem.State

    public init(name: String, comment: String, access: AccessControl, created: Date, publicPoint: [UInt8],
                state: ListedItem.State) {
        self.name = name
        self.comment = comment
        self.access = access
        self.created = created
        self.publicPoint = publicPoint
        self.state = state
    }
}

/// An ECDSA P-256 signature: r and s, 32 bytes each, big-endian.
public struct SSHSignature: Sendable, Hashable, Codable {
    public let r: [UInt8]
    public let s: [UInt8]

    public init(r: [UInt8], s: [UInt8]) {
        self.r = r
        self.s = s
    }
}

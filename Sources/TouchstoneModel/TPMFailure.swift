/// Why the TPM could not do what was asked, beyond the outcomes that have
/// errors of their own (a wrong passcode, the dictionary-attack lockout,
/// an invalidated item).
public struct TPMFailure: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable, Codable {
        /// No TPM at the configured TCTI: no device node, the simulator not
        /// running, or the connection was lost.
        case unreachable
        /// The TPM device exists but this user may not open it.
        case permissionDenied
        /// The state was made with another TPM (or this one was cleared):
        /// its keys cannot be opened here.
        case otherTPM
        /// The TPM has no room for another object, session or NV index.
        case outOfMemory
        /// Anything else; `code` holds the TSS2 response code.
        case failed
    }

    public let kind: Kind
    /// What happened, in one line.
    public let description: String
    /// The TSS2 response code, when the TPM or the TSS returned one.
    public let code: UInt32?

    public init(_ kind: Kind, _ description: String, code: UInt32? = nil) {
        self.kind = kind
        self.description = description
        self.code = code
    }
}

/// Why the fingerprint reader cannot be used, or what it refused.
public struct ReaderFailure: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable, Codable {
        /// No reader is attached, or none has the id asked for.
        case notFound
        /// Another program holds it: fprintd, or for the simulated reader
        /// another touchstone process.
        case busy
        /// The vault is on a read-only file system, where failed matches
        /// cannot be counted, so the lockout after five could not hold.
        case readOnlyVault
        /// It cannot be used now: not supported, too hot, a protocol error,
        /// a print from another reader.
        case unusable
        /// It failed the operation: it refused the data, its storage is
        /// full, the finger is already on it, a stored print is unusable.
        case refused
    }

    public let kind: Kind
    /// What happened, in one line.
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// The read-only vault's reason.
    public static let readOnlyVault = ReaderFailure(
        .readOnlyVault, "the vault is on a read-only file system, where failed matches cannot be counted")
}

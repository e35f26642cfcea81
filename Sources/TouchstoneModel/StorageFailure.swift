/// Why the state folder, the vault database or the enrolment store could
/// not be used (damage has an error of its own: `corrupted`).
public struct StorageFailure: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable, Codable {
        /// The state folder: missing permissions, not private, not a folder.
        case stateFolder
        /// A change was refused: the vault is on a read-only file system.
        case readOnly
        /// The vault's format is newer than this Touchstone.
        case newerFormat
        /// The database or a file beside it could not be opened, read or written.
        case database
    }

    public let kind: Kind
    /// What happened, in one line.
    public let message: String
    /// A command that fixes it (`chmod 700 /home/ada/.local/share/touchstone`),
    /// when one does.
    public let fix: String?

    public init(_ kind: Kind, _ message: String, fix: String? = nil) {
        self.kind = kind
        self.message = message
        self.fix = fix
    }

    public var description: String { "storage error: " + message }
}

/// Why the daemon (`touchstoned`) could not answer: the payload of the
/// `.daemon` case of `DeviceError`, `KeychainError` and
/// `AuthenticationError`. The CLI exits 11 for each kind.
public struct DaemonFailure: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable, Codable {
        /// Nothing listens at the socket (no daemon, or not allowed to connect).
        case unreachable
        /// The connection ended before the answer (the daemon stopped or
        /// was killed mid-request). The request may or may not have been
        /// carried out; nothing is half-applied.
        case lost
        /// The daemon refused the request, or one side sent what the
        /// protocol does not allow.
        case refused
    }

    public let kind: Kind
    /// The daemon's socket.
    public let socket: String
    /// What happened, in words.
    public let reason: String

    public init(_ kind: Kind, socket: String, reason: String) {
        self.kind = kind
        self.socket = socket
        self.reason = reason
    }

    public var description: String {
        switch kind {
        case .unreachable: "touchstoned cannot be reached at \(socket): \(reason)"
        case .lost: "the connection to touchstoned (\(socket)) was lost: \(reason)"
        case .refused: "touchstoned (\(socket)) refused the request: \(reason)"
        }
    }
}

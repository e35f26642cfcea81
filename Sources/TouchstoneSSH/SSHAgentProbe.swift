import Glibc
import TouchstoneModel
import TouchstonePOSIX

/// Asks the agent on a Unix socket for its identities, as `ssh-add -l`
/// does (REQUEST_IDENTITIES, one IDENTITIES_ANSWER), to tell whether an
/// agent answers there, how many keys it offers, and which program it is
/// (SO_PEERCRED of the connection names the process that listens).
package enum SSHAgentProbe {
    /// What the agent on a socket answered.
    package struct Answer: Sendable, Equatable {
        /// The keys it offers.
        package let identities: Int
        /// The program that listens, as the kernel names it; nil when the
        /// kernel gave no credentials.
        package let server: PeerProgram?
    }

    /// Why no agent answered.
    package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// There is no socket file at the path.
        case absent
        /// The path is there but is not a socket.
        case notASocket
        /// connect(2) failed: nothing listens (a stale socket), or this
        /// user may not connect.
        case notListening(Errno)
        /// Something accepted the connection but sent no agent's answer
        /// within the time allowed.
        case noAnswer
        /// It answered something else than IDENTITIES_ANSWER.
        case notAnAgent

        package var description: String {
            switch self {
            case .absent: "there is no socket"
            case .notASocket: "it is not a socket"
            case .notListening(let errno): "nothing listens on it (\(errno))"
            case .noAnswer: "it gave no answer"
            case .notAnAgent: "what listens there does not speak the agent protocol"
            }
        }
    }

    /// Connects to `path`, asks for the identities and waits at most
    /// `timeout` for each read and write.
    package static func identities(at path: String, timeout: Duration = .seconds(5)) -> Result<Answer, Failure> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(.absent) }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .failure(.notASocket) }
        let connection: OwnedDescriptor
        do {
            connection = try .unixStreamSocket()
        } catch {
            return .failure(.notListening(error))
        }
        do {
            try connection.connect(unixSocket: path)
        } catch {
            return .failure(.notListening(error))
        }
        let seconds = timeout.components.seconds
        let wait = timeval(tv_sec: Int(seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        _ = try? connection.setOption(SOL_SOCKET, SO_RCVTIMEO, wait)
        _ = try? connection.setOption(SOL_SOCKET, SO_SNDTIMEO, wait)
        guard SSHAgent.writeAll(connection, SSHWire.string([SSHAgent.requestIdentities])),
              let message = SSHAgent.readMessage(connection) else { return .failure(.noAnswer) }
        var reader = SSHWire.Reader(message)
        guard (try? reader.byte()) == SSHAgent.identitiesAnswer, let count = try? reader.uint32() else {
            return .failure(.notAnAgent)
        }
        let server = SSHAgent.identifiedPeer(of: connection)?.program
        return .success(Answer(identities: Int(count), server: server))
    }
}

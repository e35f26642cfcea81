import Foundation
import Synchronization
import TouchstoneModel
import TouchstonePOSIX
import TouchstoneSecure

/// A key the agent offers: its public half, and a way to sign that may
/// take as long as the person needs (a touch, a passcode).
package protocol AgentKey: Sendable {
    var publicKey: SSHPublicKey { get }
    /// An ECDSA P-256 signature (r, s, 32 bytes each, big-endian) of
    /// SHA-256(`data`); `requester` names the process that asked.
    func sign(_ data: [UInt8], requester: AgentPeer) async throws -> (r: [UInt8], s: [UInt8])
}

/// Who is on the other end of an agent connection (SO_PEERCRED).
package struct AgentPeer: Sendable, CustomStringConvertible {
    package let uid: uid_t
    /// The program, as the kernel names it (its executable, its command).
    package let program: PeerProgram
    package var pid: pid_t { program.pid }

    package init(uid: uid_t, program: PeerProgram) {
        self.uid = uid
        self.program = program
    }

    package var description: String { program.description }
}

/// The OpenSSH agent protocol (draft-miller-ssh-agent) on a Unix socket:
/// identities and signatures; FAILURE to every other request (adding,
/// removing or locking keys among them). One thread per connection; a
/// message longer than `maximumMessage` or cut short closes that connection
/// and no other. A peer whose uid is neither the agent's nor root's is
/// closed unanswered (as OpenSSH's agent does), whatever the socket's mode.
package final class SSHAgent: Sendable {
    package static let maximumMessage = 256 << 10

    // Message numbers.
    static let failure: UInt8 = 5
    static let requestIdentities: UInt8 = 11
    static let identitiesAnswer: UInt8 = 12
    static let signRequest: UInt8 = 13
    static let signResponse: UInt8 = 14

    private let keys: @Sendable () async -> [any AgentKey]
    private let refused: @Sendable (AgentPeer) -> Void
    /// The listening socket, until the accept loop ends (and closes it);
    /// `stop()` shuts it down under the same lock, so never after the close.
    private let listener: Mutex<OwnedDescriptor?>
    private let stopping = Locked(false)

    /// Listens on `path` (a new socket, 0600; a stale one replaced, a live
    /// one refused); `keys` gives the keys to offer at each request;
    /// `refused` hears of each peer of another uid, closed unanswered.
    package init(socket path: String, refused: @escaping @Sendable (AgentPeer) -> Void = { _ in },
                 keys: @escaping @Sendable () async -> [any AgentKey]) throws(SSHAgentError) {
        self.keys = keys
        self.refused = refused
        let socket: OwnedDescriptor
        do {
            socket = try unixSocketListener(path, mode: 0o600, backlog: 64)
        } catch {
            switch error {
            case .pathTooLong: throw .system("the socket path is longer than 107 bytes: \(path)")
            case .notASocket: throw .system("\(path) exists and is not a socket")
            case .inUse: throw .system("an agent already listens on \(path)")
            case .system(let call, let why): throw .system("\(call) \(path): \(why)")
            }
        }
        let number = socket.rawValue
        listener = Mutex(.some(socket))
        startDetachedThread(name: "touchstone-agent") { [self] in acceptLoop(number) }
    }

    /// Stops accepting (connections in flight finish).
    package func stop() {
        stopping.withLock { $0 = true }
        listener.withLock { socket in
            switch socket {
            case .some(let listening): _ = try? listening.shutdown(SHUT_RDWR)
            case .none: break
            }
        }
    }

    /// Accepts on `listening` (the listener's number: open until this loop
    /// ends, which then closes it).
    private func acceptLoop(_ listening: CInt) {
        while !stopping.withLock({ $0 }) {
            let connection: OwnedDescriptor
            do {
                connection = OwnedDescriptor(adopting: try valueOrErrno(retryOnInterrupt: true) { accept(listening, nil, nil) })
            } catch .connectionAbort {
                continue
            } catch {
                if stopping.withLock({ $0 }) { break }
                usleep(100_000)
                continue
            }
            try? connection.setCloseOnExec()
            // The connection's thread owns it from here.
            let number = connection.release()
            startDetachedThread(name: "touchstone-agent-c") { [self] in serve(OwnedDescriptor(adopting: number)) }
        }
        listener.withLock { socket in _ = socket.take() }
    }

    /// One connection: messages until it closes or breaks the protocol;
    /// closed when this returns.
    private func serve(_ connection: consuming OwnedDescriptor) {
        let peer = Self.peer(of: connection)
        guard peer.uid == getuid() || peer.uid == 0 else {
            refused(peer)
            return
        }
        while let message = Self.readMessage(connection) {
            let reply = Self.blocking { await self.answer(message, peer: peer) }
            guard Self.writeAll(connection, SSHWire.string(reply)) else { return }
        }
    }

    /// The answer to one message (its type byte first).
    func answer(_ message: [UInt8], peer: AgentPeer) async -> [UInt8] {
        var reader = SSHWire.Reader(message)
        guard let type = try? reader.byte() else { return [Self.failure] }
        switch type {
        case Self.requestIdentities:
            let offered = await keys()
            var out: [UInt8] = [Self.identitiesAnswer] + SSHWire.uint32(UInt32(offered.count))
            for key in offered { out += SSHWire.string(key.publicKey.blob) + SSHWire.string(key.publicKey.comment) }
            return out
        case Self.signRequest:
            guard let blob = try? reader.string(), let data = try? reader.string(), (try? reader.uint32()) != nil, reader.isAtEnd,
                  let key = await keys().first(where: { $0.publicKey.blob == blob }),
                  let (r, s) = try? await key.sign(data, requester: peer) else { return [Self.failure] }
            return [Self.signResponse] + SSHWire.string(SSHPublicKey.signature(r: r, s: s))
        default:
            return [Self.failure]
        }
    }

    private static func peer(of connection: borrowing OwnedDescriptor) -> AgentPeer {
        // No credentials (never on a Unix socket): a uid no one has, refused.
        identifiedPeer(of: connection) ?? AgentPeer(uid: uid_t.max, program: PeerProgram.named(pid: 0, pidfd: nil))
    }

    /// The uid and program on the other end of a Unix socket connection
    /// (SO_PEERCRED, named through a pidfd of it where the kernel has
    /// one); nil without credentials.
    static func identifiedPeer(of connection: borrowing OwnedDescriptor) -> AgentPeer? {
        guard let (pid, uid, _) = connection.peerCredentials() else { return nil }
        if let pidfd = connection.peerPIDFD() {
            return AgentPeer(uid: uid, program: PeerProgram.named(pid: pid, pidfd: pidfd.rawValue))
        }
        return AgentPeer(uid: uid, program: PeerProgram.named(pid: pid, pidfd: nil))
    }

    /// The next message (without its length), or nil at the end, on a
    /// read error, or for a length beyond `maximumMessage` or of zero.
    static func readMessage(_ connection: borrowing OwnedDescriptor) -> [UInt8]? {
        guard let header = readExactly(connection, 4) else { return nil }
        let length = Int(UInt32(header[0]) << 24 | UInt32(header[1]) << 16 | UInt32(header[2]) << 8 | UInt32(header[3]))
        guard length > 0, length <= maximumMessage else { return nil }
        return readExactly(connection, length)
    }

    /// `count` bytes, or nil at the end or on an error (EINTR retried).
    private static func readExactly(_ connection: borrowing OwnedDescriptor, _ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var at = 0
        while at < count {
            let n = (try? out[at...].withUnsafeMutableBytes { bytes in try connection.read(into: bytes) }) ?? -1
            guard n > 0 else { return nil }
            at += n
        }
        return out
    }

    /// Sends every byte (EINTR retried, no SIGPIPE); false when the peer went away.
    static func writeAll(_ connection: borrowing OwnedDescriptor, _ bytes: [UInt8]) -> Bool {
        var at = 0
        while at < bytes.count {
            let n = (try? bytes[at...].withUnsafeBytes { bytes in try connection.send(bytes, flags: CInt(MSG_NOSIGNAL)) }) ?? -1
            guard n > 0 else { return false }
            at += n
        }
        return true
    }

    /// Runs `body` as a task and waits for it on this thread (a
    /// connection's own, never a Swift concurrency thread).
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let result = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}

package enum SSHAgentError: Error, Sendable, CustomStringConvertible {
    case system(String)
    package var description: String {
        switch self { case .system(let why): why }
    }
}

import Foundation
import TouchstoneModel
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
    package let pid: pid_t
    package let uid: uid_t
    /// Its command (/proc/PID/comm), when it could be read.
    package let command: String?

    package var description: String { "\(command ?? "?") (pid \(pid))" }
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
    private let listener: Int32
    private let stopping = Locked(false)

    /// Listens on `path` (a new socket, 0600; a stale one replaced, a live
    /// one refused); `keys` gives the keys to offer at each request;
    /// `refused` hears of each peer of another uid, closed unanswered.
    package init(socket path: String, refused: @escaping @Sendable (AgentPeer) -> Void = { _ in },
                 keys: @escaping @Sendable () async -> [any AgentKey]) throws(SSHAgentError) {
        self.keys = keys
        self.refused = refused
        let fd: Int32
        switch listenOnUnixSocket(path, mode: 0o600, backlog: 64) {
        case .success(let listening): fd = listening
        case .failure(.pathTooLong): throw .system("the socket path is longer than 107 bytes: \(path)")
        case .failure(.notASocket): throw .system("\(path) exists and is not a socket")
        case .failure(.inUse): throw .system("an agent already listens on \(path)")
        case .failure(.system(let call, let why)): throw .system("\(call) \(path): \(why)")
        }
        listener = fd
        startDetachedThread(name: "touchstone-agent") { [self] in acceptLoop() }
    }

    /// Stops accepting (connections in flight finish).
    package func stop() {
        stopping.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while !stopping.withLock({ $0 }) {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if stopping.withLock({ $0 }) { break }
                usleep(100_000)
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            startDetachedThread(name: "touchstone-agent-c") { [self] in serve(fd) }
        }
        close(listener)
    }

    /// One connection: messages until it closes or breaks the protocol.
    private func serve(_ fd: Int32) {
        defer { close(fd) }
        let peer = Self.peer(of: fd)
        guard peer.uid == getuid() || peer.uid == 0 else {
            refused(peer)
            return
        }
        while let message = Self.readMessage(fd) {
            let reply = Self.blocking { await self.answer(message, peer: peer) }
            guard Self.writeAll(fd, SSHWire.string(reply)) else { return }
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

    private static func peer(of fd: Int32) -> AgentPeer {
        // No credentials (never on a Unix socket): a uid no one has, refused.
        let (pid, uid, _) = peerCredentials(of: fd) ?? (0, uid_t.max, 0)
        let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return AgentPeer(pid: pid, uid: uid, command: command)
    }

    /// The next message (without its length), or nil at the end, on a
    /// read error, or for a length beyond `maximumMessage` or of zero.
    private static func readMessage(_ fd: Int32) -> [UInt8]? {
        guard let header = readExactly(fd, 4) else { return nil }
        let length = Int(UInt32(header[0]) << 24 | UInt32(header[1]) << 16 | UInt32(header[2]) << 8 | UInt32(header[3]))
        guard length > 0, length <= maximumMessage else { return nil }
        return readExactly(fd, length)
    }

    private static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var at = 0
        while at < count {
            let n = out[at...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            at += n
        }
        return out
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var at = 0
        while at < bytes.count {
            let n = bytes[at...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
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

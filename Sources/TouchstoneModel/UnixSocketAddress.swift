#if canImport(Glibc)
import Glibc
#endif
import TouchstonePOSIX

/// Runs `body` with the `sockaddr_un` of the Unix socket at `path`, or
/// returns nil when the path does not fit one (107 bytes): the one place
/// that lays out a socket address for connect and bind.
package func withUnixSocketAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

extension OwnedDescriptor {
    /// A new Unix stream socket (close-on-exec).
    package static func unixStreamSocket() throws(Errno) -> OwnedDescriptor {
        try socket(AF_UNIX, CInt(SOCK_STREAM.rawValue))
    }

    /// connect(2) to the Unix socket at `path`; ENAMETOOLONG when the path
    /// does not fit a socket address.
    package borrowing func connect(unixSocket path: String) throws(Errno) {
        let raw = rawValue
        guard let result = withUnixSocketAddress(path, { address, length in
            Result { () throws(Errno) in _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.connect(raw, address, length) } }
        }) else { throw .fileNameTooLong }
        try result.get()
    }

    /// The pid, uid and gid of the process on the other end of this Unix
    /// socket (SO_PEERCRED: who connected, as the kernel saw it at connect()).
    package borrowing func peerCredentials() -> (pid: pid_t, uid: uid_t, gid: gid_t)? {
        unixPeerCredentials(of: rawValue)
    }
}

/// Whether something accepts connections on the Unix socket at `path`.
package func unixSocketAccepts(_ path: String) -> Bool {
    guard let probe = try? OwnedDescriptor.unixStreamSocket() else { return false }
    return (try? probe.connect(unixSocket: path)) != nil
}

/// Why `listenOnUnixSocket` made no socket.
package enum UnixListenFailure: Error, Sendable {
    case pathTooLong
    case notASocket
    /// Something accepts connections there already.
    case inUse
    /// A system call failed: which (`socket`, `bind`, `chmod`, `listen`) and why.
    case system(call: String, errno: Errno)
}

/// A listening Unix socket at `path`, the file given `mode` before anyone
/// can connect: a stale socket file there is replaced, a live one (where
/// something accepts) or a file of another kind is refused.
package func unixSocketListener(_ path: String, mode: mode_t, backlog: Int32) throws(UnixListenFailure) -> OwnedDescriptor {
    guard withUnixSocketAddress(path, { _, _ in true }) != nil else { throw .pathTooLong }
    var info = stat()
    if lstat(path, &info) == 0 {
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket }
        if unixSocketAccepts(path) { throw .inUse }
        unlink(path)
    }
    let socket: OwnedDescriptor
    do { socket = try .unixStreamSocket() } catch { throw .system(call: "socket", errno: error) }
    let raw = socket.rawValue
    let bound = withUnixSocketAddress(path) { address, length in
        Result { () throws(Errno) in _ = try valueOrErrno(retryOnInterrupt: false) { bind(raw, address, length) } }
    }
    if case .failure(let error) = bound { throw .system(call: "bind", errno: error) }
    // Before listen(): until then nobody can connect, whatever the umask
    // gave; a socket whose mode could not be set is not offered at all.
    do {
        _ = try valueOrErrno(retryOnInterrupt: true) { chmod(path, mode) }
    } catch {
        unlink(path)
        throw .system(call: "chmod", errno: error)
    }
    do {
        try socket.listen(backlog: backlog)
    } catch {
        unlink(path)
        throw .system(call: "listen", errno: error)
    }
    return socket
}

/// The same as a raw descriptor the caller closes, for code that keeps the
/// number itself (the daemon's `Listener`).
package func listenOnUnixSocket(_ path: String, mode: mode_t, backlog: Int32) -> Result<Int32, UnixListenFailure> {
    do {
        return .success(try unixSocketListener(path, mode: mode, backlog: backlog).release())
    } catch {
        return .failure(error)
    }
}

/// The pid, uid and gid of the process on the other end of a Unix socket
/// (SO_PEERCRED: who connected, as the kernel saw it at connect()).
package func unixPeerCredentials(of fd: Int32) -> (pid: pid_t, uid: uid_t, gid: gid_t)? {
    // struct ucred (pid, uid, gid), which Glibc's module leaves out.
    var credentials: (pid_t, uid_t, gid_t) = (0, 0, 0)
    var size = socklen_t(MemoryLayout.size(ofValue: credentials))
    guard (try? valueOrErrno(retryOnInterrupt: false, { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) })) != nil,
          size == socklen_t(MemoryLayout.size(ofValue: credentials)) else { return nil }
    return credentials
}

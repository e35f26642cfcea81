#if canImport(Glibc)
import Glibc
#endif

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

/// Whether something accepts connections on the Unix socket at `path`.
package func unixSocketAccepts(_ path: String) -> Bool {
    let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard probe >= 0 else { return false }
    defer { close(probe) }
    return withUnixSocketAddress(path) { connect(probe, $0, $1) == 0 } ?? false
}

/// Why `listenOnUnixSocket` made no socket.
package enum UnixListenFailure: Error, Sendable {
    case pathTooLong
    case notASocket
    /// Something accepts connections there already.
    case inUse
    /// A system call failed: which (`bind`, `listen`, `socket`) and why.
    case system(call: String, reason: String)
}

/// A listening Unix socket at `path`, the file given `mode` before anyone
/// can connect: a stale socket file there is replaced, a live one (where
/// something accepts) or a file of another kind is refused.
package func listenOnUnixSocket(_ path: String, mode: mode_t, backlog: Int32) -> Result<Int32, UnixListenFailure> {
    guard withUnixSocketAddress(path, { _, _ in true }) != nil else { return .failure(.pathTooLong) }
    var info = stat()
    if lstat(path, &info) == 0 {
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .failure(.notASocket) }
        if unixSocketAccepts(path) { return .failure(.inUse) }
        unlink(path)
    }
    func failure(_ call: String) -> UnixListenFailure { .system(call: call, reason: String(cString: strerror(errno))) }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return .failure(failure("socket")) }
    guard withUnixSocketAddress(path, { bind(fd, $0, $1) }) == 0 else {
        let why = failure("bind")
        close(fd)
        return .failure(why)
    }
    // Before listen(): until then nobody can connect, whatever the umask gave.
    chmod(path, mode)
    guard listen(fd, backlog) == 0 else {
        let why = failure("listen")
        close(fd)
        unlink(path)
        return .failure(why)
    }
    return .success(fd)
}

/// The pid, uid and gid of the process on the other end of a Unix socket
/// (SO_PEERCRED: who connected, as the kernel saw it at connect()).
package func peerCredentials(of fd: Int32) -> (pid: pid_t, uid: uid_t, gid: gid_t)? {
    // struct ucred (pid, uid, gid), which Glibc's module leaves out.
    var credentials: (pid_t, uid_t, gid_t) = (0, 0, 0)
    var size = socklen_t(MemoryLayout.size(ofValue: credentials))
    guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0,
          size == socklen_t(MemoryLayout.size(ofValue: credentials)) else { return nil }
    return credentials
}

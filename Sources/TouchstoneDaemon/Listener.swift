import Foundation
import TouchstoneModel
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's listening socket: the one systemd passes (socket
/// activation, LISTEN_FDS), or one it binds itself.
struct Listener {
    let fd: Int32
    let path: String
    /// Whether this process made the socket file (and removes it at the end).
    let owned: Bool

    static let systemdFirstDescriptor: Int32 = 3

    static func open(_ requested: String?) throws -> Listener {
        let environment = ProcessInfo.processInfo.environment
        if requested == nil, environment["LISTEN_PID"] == String(getpid()), let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 {
            let fd = systemdFirstDescriptor
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
            return Listener(fd: fd, path: "the socket systemd passed (fd 3)", owned: false)
        }
        let path = requested ?? "/run/touchstone/socket"
        guard withUnixSocketAddress(path, { _, _ in true }) != nil else {
            throw Touchstoned.UsageError(text: "the socket path is longer than 107 bytes: \(path)")
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else { throw Touchstoned.UsageError(text: "\(path) exists and is not a socket") }
            // A daemon listening there already keeps it; a stale one goes.
            let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let alive = withUnixSocketAddress(path) { connect(probe, $0, $1) == 0 } ?? false
            Glibc.close(probe)
            if alive { throw Touchstoned.UsageError(text: "another daemon listens on \(path)") }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Touchstoned.UsageError(text: "socket: \(String(cString: strerror(errno)))") }
        let bound = withUnixSocketAddress(path) { bind(fd, $0, $1) } ?? -1
        guard bound == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            throw Touchstoned.UsageError(text: "cannot listen on \(path): \(why)")
        }
        // Every user may connect; the kernel tells the daemon who did.
        chmod(path, 0o666)
        guard listen(fd, 128) == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            unlink(path)
            throw Touchstoned.UsageError(text: "listen on \(path): \(why)")
        }
        return Listener(fd: fd, path: path, owned: true)
    }

    func close() {
        Glibc.close(fd)
        if owned { unlink(path) }
    }
}

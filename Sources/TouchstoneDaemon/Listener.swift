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
        // Every user may connect (0666); the kernel tells the daemon who did.
        let fd: Int32
        switch listenOnUnixSocket(path, mode: 0o666, backlog: 128) {
        case .success(let listening): fd = listening
        case .failure(.pathTooLong): throw Touchstoned.UsageError(text: "the socket path is longer than 107 bytes: \(path)")
        case .failure(.notASocket): throw Touchstoned.UsageError(text: "\(path) exists and is not a socket")
        case .failure(.inUse): throw Touchstoned.UsageError(text: "another daemon listens on \(path)")
        case .failure(.system("listen", let why)): throw Touchstoned.UsageError(text: "listen on \(path): \(why)")
        case .failure(.system(_, let why)): throw Touchstoned.UsageError(text: "cannot listen on \(path): \(why)")
        }
        return Listener(fd: fd, path: path, owned: true)
    }

    func close() {
        Glibc.close(fd)
        if owned { unlink(path) }
    }
}

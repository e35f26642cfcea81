import Foundation
import TouchstoneModel
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's listening socket: the one systemd passes (socket
/// activation, LISTEN_FDS), or one it binds itself.
package struct Listener {
    package let fd: Int32
    /// Where it listens, as the log says it.
    package let path: String
    /// Whether this process made the socket file (and removes it at the end).
    let owned: Bool

    static let systemdFirstDescriptor: Int32 = 3

    /// Why the daemon cannot listen, said for the person who started it.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package static func open(_ requested: String?) throws(Failure) -> Listener {
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
        case .failure(.pathTooLong): throw Failure(description: "the socket path is longer than 107 bytes: \(path)")
        case .failure(.notASocket): throw Failure(description: "\(path) exists and is not a socket")
        case .failure(.inUse): throw Failure(description: "another daemon listens on \(path)")
        case .failure(.system("listen", let why)): throw Failure(description: "listen on \(path): \(why)")
        case .failure(.system(_, let why)): throw Failure(description: "cannot listen on \(path): \(why)")
        }
        return Listener(fd: fd, path: path, owned: true)
    }

    package func close() {
        Glibc.close(fd)
        if owned { unlink(path) }
    }
}

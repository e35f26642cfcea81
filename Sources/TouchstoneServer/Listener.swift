import Foundation
import TouchstoneModel
import TouchstonePOSIX
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's listening socket: the one systemd passes (socket
/// activation, LISTEN_FDS), or one it binds itself.
package final class Listener {
    /// The listening socket, closed when this goes.
    package let descriptor: OwnedDescriptor
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
            let fd = OwnedDescriptor(adopting: systemdFirstDescriptor)
            try? fd.setCloseOnExec()
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
            return Listener(fd, path: "the socket systemd passed (fd 3)", owned: false)
        }
        let path = requested ?? "/run/touchstone/socket"
        // Every user may connect (0666); the kernel tells the daemon who did.
        do {
            return Listener(try unixSocketListener(path, mode: 0o666, backlog: 128), path: path, owned: true)
        } catch {
            switch error {
            case .pathTooLong: throw Failure(description: "the socket path is longer than 107 bytes: \(path)")
            case .notASocket: throw Failure(description: "\(path) exists and is not a socket")
            case .inUse: throw Failure(description: "another daemon listens on \(path)")
            case .system("listen", let errno): throw Failure(description: "listen on \(path): \(errno)")
            case .system(let call, let errno): throw Failure(description: "cannot listen on \(path): \(call): \(errno)")
            }
        }
    }

    private init(_ descriptor: consuming OwnedDescriptor, path: String, owned: Bool) {
        self.descriptor = descriptor
        self.path = path
        self.owned = owned
    }

    /// Removes the socket file this process made (the descriptor closes
    /// when the listener goes).
    package func removeSocketFile() {
        if owned { unlink(path) }
    }
}

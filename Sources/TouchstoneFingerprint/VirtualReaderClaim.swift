import Glibc
import Synchronization

/// An exclusive claim on a libfprint virtual reader's socket, held while the
/// reader is open: an advisory lock (flock) on `<socket>.lock`.
///
/// libfprint's virtual reader unlinks and rebinds its socket when a second
/// process opens it, silently taking touches away from the first. A real
/// USB reader is claimed by one process at a time; this gives the
/// simulated one the same behaviour: the second opener gets
/// `FingerprintError.busy`. The kernel drops the lock when the process
/// ends, however it ends.
package final class VirtualReaderClaim: Sendable {
    /// The lock file's descriptor; -1 once released.
    private let fd: Mutex<Int32>

    /// Claims the reader at `socket`, or throws `busy` when another process
    /// holds it.
    package init(socket: String) throws(FingerprintError) {
        let path = socket + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .notAvailable(reason: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw .busy }
            throw .notAvailable(reason: "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        self.fd = Mutex(fd)
    }

    /// Whether another process holds the claim on the reader at `socket`
    /// (checked without keeping it).
    package static func isHeld(socket: String) -> Bool {
        let fd = open(socket + ".lock", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(fd, LOCK_UN)
        return false
    }

    /// Gives the reader up (idempotent).
    package func release() {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
        }
    }

    deinit { release() }
}

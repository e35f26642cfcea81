import Foundation
import TouchstoneFingerprint

/// An exclusive claim on a libfprint virtual reader's socket, held while the
/// reader is open: an advisory lock (flock) on `<socket>.lock`.
///
/// libfprint's virtual reader unlinks and rebinds its socket when a second
/// process opens it, silently taking touches away from the first. A real
/// USB reader is claimed by one process at a time; this gives the
/// simulated one the same behaviour: the second opener gets
/// `FingerprintError.busy`. The kernel drops the lock when the process
/// ends, however it ends.
final class VirtualReaderClaim: @unchecked Sendable {
    // @unchecked Sendable: `fd` is only changed by `release`, guarded by `lock`.
    private let lock = NSLock()
    private var fd: Int32

    /// Claims the reader at `socket`, or throws `busy` when another process
    /// holds it.
    init(socket: String) throws {
        let path = socket + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw FingerprintError.notAvailable(reason: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw FingerprintError.busy }
            throw FingerprintError.notAvailable(reason: "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        self.fd = fd
    }

    /// Gives the reader up (idempotent).
    func release() {
        lock.withLock {
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
        }
    }

    deinit { release() }
}

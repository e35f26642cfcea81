import Glibc
import Synchronization
import TouchstonePOSIX

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
    /// The lock file, open (and locked) until released.
    private let file: Mutex<OwnedDescriptor?>

    /// Claims the reader at `socket`, or throws `busy` when another process
    /// holds it.
    package init(socket: String) throws(FingerprintError) {
        let path = socket + ".lock"
        let file = try Self.openLockFile(path)
        do throws(Errno) {
            try Self.lock(file)
        } catch where error == .resourceTemporarilyUnavailable {
            throw .busy
        } catch {
            throw .notAvailable(reason: "cannot lock \(path): \(error)")
        }
        self.file = Mutex(.some(file))
    }

    /// Whether another process holds the claim on the reader at `socket`
    /// (checked without keeping it).
    package static func isHeld(socket: String) -> Bool {
        guard let file = try? OwnedDescriptor.open(socket + ".lock", O_RDWR) else { return false }
        do throws(Errno) {
            try lock(file)
        } catch {
            return error == .resourceTemporarilyUnavailable
        }
        let raw = file.rawValue
        _ = try? valueOrErrno(retryOnInterrupt: true) { flock(raw, LOCK_UN) }
        return false
    }

    /// Gives the reader up (idempotent): the lock file closed, which drops
    /// the lock.
    package func release() {
        file.withLock { file in _ = file.take() }
    }

    /// The lock file, created 0600 if missing.
    private static func openLockFile(_ path: String) throws(FingerprintError) -> OwnedDescriptor {
        do throws(Errno) {
            return try OwnedDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        } catch {
            throw .notAvailable(reason: "cannot open \(path): \(error)")
        }
    }

    /// Takes the exclusive lock without waiting (EWOULDBLOCK: held elsewhere).
    private static func lock(_ file: borrowing OwnedDescriptor) throws(Errno) {
        let raw = file.rawValue
        _ = try valueOrErrno(retryOnInterrupt: true) { flock(raw, LOCK_EX | LOCK_NB) }
    }
}

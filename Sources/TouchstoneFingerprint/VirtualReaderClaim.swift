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

    /// The pid of the process that holds the claim on the reader at
    /// `socket`, as the kernel lists it (/proc/locks: the flock on the
    /// lock file's device and inode); nil when none is listed.
    package static func holder(socket: String) -> pid_t? {
        var info = stat()
        guard stat(socket + ".lock", &info) == 0,
              let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return nil }
        // "1: FLOCK  ADVISORY  WRITE 4242 00:2a:123456 0 EOF"; a waiter's
        // line has "->" after the number.
        let device = UInt64(info.st_dev)
        let major = (device >> 8) & 0xfff | (device >> 32) & ~0xfff
        let minor = device & 0xff | (device >> 12) & ~0xff
        let file = "\(String(major, radix: 16, uppercase: false).leftPadded(2)):\(String(minor, radix: 16).leftPadded(2)):\(info.st_ino)"
        for line in locks.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == file, let pid = pid_t(fields[4]) else { continue }
            return pid
        }
        return nil
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

extension String {
    /// At least `width` characters, zeros in front (as /proc/locks prints
    /// device numbers: `%02x`).
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// An error number of the C library (`errno`), kept as its code: callers
/// compare it (`catch Errno.interrupted`), people read its description,
/// which is the C library's (`strerror`).
package struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: CInt

    package init(rawValue: CInt) { self.rawValue = rawValue }

    /// The calling thread's `errno` as it is now: read it right after the
    /// call that failed.
    package static var current: Errno { Errno(rawValue: errno) }

    /// What the C library says of it (strerror), e.g. "No such file or directory".
    package var description: String { String(cString: strerror(rawValue)) }

    /// Operation not permitted (EPERM).
    package static var notPermitted: Errno { Errno(rawValue: EPERM) }
    /// No such file or directory (ENOENT).
    package static var noSuchFileOrDirectory: Errno { Errno(rawValue: ENOENT) }
    /// Interrupted system call (EINTR).
    package static var interrupted: Errno { Errno(rawValue: EINTR) }
    /// Bad file descriptor (EBADF).
    package static var badFileDescriptor: Errno { Errno(rawValue: EBADF) }
    /// Bad address (EFAULT).
    package static var badAddress: Errno { Errno(rawValue: EFAULT) }
    /// File exists (EEXIST).
    package static var fileExists: Errno { Errno(rawValue: EEXIST) }
    /// File name too long (ENAMETOOLONG).
    package static var fileNameTooLong: Errno { Errno(rawValue: ENAMETOOLONG) }
    /// Broken pipe (EPIPE).
    package static var brokenPipe: Errno { Errno(rawValue: EPIPE) }
    /// Software caused connection abort (ECONNABORTED).
    package static var connectionAbort: Errno { Errno(rawValue: ECONNABORTED) }
    /// Connection refused (ECONNREFUSED).
    package static var connectionRefused: Errno { Errno(rawValue: ECONNREFUSED) }
    /// Permission denied (EACCES).
    package static var permissionDenied: Errno { Errno(rawValue: EACCES) }
    /// Read-only file system (EROFS).
    package static var readOnlyFileSystem: Errno { Errno(rawValue: EROFS) }
    /// No such process (ESRCH).
    package static var noSuchProcess: Errno { Errno(rawValue: ESRCH) }
    /// Operation not supported (EOPNOTSUPP).
    package static var notSupported: Errno { Errno(rawValue: EOPNOTSUPP) }
    /// Connection reset by peer (ECONNRESET).
    package static var connectionReset: Errno { Errno(rawValue: ECONNRESET) }
    /// Resource temporarily unavailable (EAGAIN, EWOULDBLOCK): a non-blocking
    /// call, or a send whose deadline passed.
    package static var resourceTemporarilyUnavailable: Errno { Errno(rawValue: EAGAIN) }

    /// `catch Errno.interrupted` in code whose error is untyped.
    package static func ~= (pattern: Errno, error: any Error) -> Bool {
        (error as? Errno) == pattern
    }
}

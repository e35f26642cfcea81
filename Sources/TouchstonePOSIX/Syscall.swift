#if canImport(Glibc)
import Glibc
#endif

/// Runs a system call that returns -1 and sets `errno` when it fails, and
/// returns its value or throws that `errno`. With `retryOnInterrupt`, a call
/// a signal interrupted (EINTR) runs again. A bad descriptor (EBADF) or a
/// bad address (EFAULT) is this process's bug, never the world's, and stops
/// it (a precondition), as swift-nio does: carrying on could read or close a
/// descriptor someone else now owns. `descriptorMayBeClosed` lifts that for
/// EBADF on a descriptor this process was handed rather than opened (stdin,
/// stdout, a `--passcode-fd`: the caller may have closed it), or one another
/// thread may close meanwhile (a scan of /proc/self/fd): there it is thrown.
@inline(__always)
package func valueOrErrno<Value: FixedWidthInteger>(retryOnInterrupt: Bool, descriptorMayBeClosed: Bool = false,
                                                    _ call: () -> Value) throws(Errno) -> Value {
    while true {
        let value = call()
        guard value == -1 else { return value }
        let error = Errno.current
        if retryOnInterrupt && error == .interrupted { continue }
        if !(descriptorMayBeClosed && error == .badFileDescriptor) { preconditionIsNotProgrammerError(error) }
        throw error
    }
}

@inline(__always)
func preconditionIsNotProgrammerError(_ error: Errno, file: StaticString = #fileID, line: UInt = #line) {
    precondition(error != .badFileDescriptor && error != .badAddress,
                 "a system call failed with \(error.description) (errno \(error.rawValue)): a bug in this process",
                 file: file, line: line)
}

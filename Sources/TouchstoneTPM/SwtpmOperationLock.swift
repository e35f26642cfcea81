import Foundation

/// Turns taken by processes that share one swtpm on a unix socket: an
/// exclusive advisory lock (flock) on `<socket>.lock`, held for one TPM
/// operation at a time.
///
/// swtpm has no resource manager and the swtpm TCTI connects anew for each
/// command, so the commands of concurrent processes interleave: one
/// process's loaded objects and sessions occupy the slots another needs,
/// and the TPM answers TPM_RC_OBJECT_MEMORY. Every operation of `TPM`
/// loads, uses and flushes its own objects, so serialising whole
/// operations across processes is enough. A kernel TPM through
/// `/dev/tpmrm0` has a resource manager and needs none of this.
struct SwtpmOperationLock: Sendable {
    /// The lock file next to the socket.
    let path: String

    /// The lock for `tcti` when it is a swtpm on a unix socket
    /// (`swtpm:path=...`); nil for any other TCTI.
    init?(tcti: String) {
        guard tcti.hasPrefix("swtpm:") else { return nil }
        let options = tcti.dropFirst("swtpm:".count).split(separator: ",")
        guard let socket = options.first(where: { $0.hasPrefix("path=") })?.dropFirst("path=".count),
              !socket.isEmpty else { return nil }
        path = String(socket) + ".lock"
    }

    /// Waits for the turn; returns the descriptor holding it.
    func acquire() throws(TPMError) -> Int32 {
        var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 && (errno == EROFS || errno == EACCES) {
            // A state folder on a read-only mount: an existing lock file
            // locks as well through a read-only descriptor.
            fd = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard fd >= 0 else {
            throw TPMError.unreachable(detail: "cannot open the swtpm lock \(path): \(String(cString: strerror(errno)))")
        }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let code = errno
                close(fd)
                throw TPMError.unreachable(detail: "cannot lock \(path): \(String(cString: strerror(code)))")
            }
        }
        return fd
    }

    /// Ends the turn.
    func release(_ fd: Int32) {
        close(fd)
    }
}

import Foundation
import TouchstonePOSIX

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

    /// Runs `body` in this process's turn: waits for the lock, and gives
    /// it up (closes the lock file) when `body` returns or throws.
    func withTurn<R>(_ body: () throws(TPMError) -> R) throws(TPMError) -> R {
        let turn = try acquire()
        let result = Result { () throws(TPMError) in try body() }
        // The close drops the lock whatever it returns (nothing to retry).
        try? turn.close()
        return try result.get()
    }

    /// Waits for the turn; returns the descriptor holding it (closing it
    /// ends the turn).
    private func acquire() throws(TPMError) -> OwnedDescriptor {
        let file = try openLockFile()
        let raw = file.rawValue
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: true) { flock(raw, LOCK_EX) }
        } catch {
            throw TPMError.unreachable(detail: "cannot lock \(path): \(error)")
        }
        return file
    }

    /// The lock file, created 0600 if missing.
    private func openLockFile() throws(TPMError) -> OwnedDescriptor {
        do throws(Errno) {
            do throws(Errno) {
                return try OwnedDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
            } catch where error == .readOnlyFileSystem || error == .permissionDenied {
                // A state folder on a read-only mount: an existing lock file
                // locks as well through a read-only descriptor.
                return try OwnedDescriptor.open(path, O_RDONLY)
            }
        } catch {
            throw TPMError.unreachable(detail: "cannot open the swtpm lock \(path): \(error)")
        }
    }
}

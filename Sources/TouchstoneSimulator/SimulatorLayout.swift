import TouchstoneModel
import Foundation

/// Where the simulator lives under a state folder: `sim/tpm/` holds
/// swtpm's state, sockets, pid file and log; `sim/reader` is the virtual
/// reader's socket (with `sim/reader.lock`, its claim).
package struct SimulatorLayout: Sendable, Hashable {
    /// The longest unix socket path (sun_path holds 108 bytes with the NUL).
    package static let maximumSocketPath = 107
    /// swtpm's data socket must stay shorter than this (Swtpm's own limit).
    package static let maximumTPMSocketPath = 99

    package let home: String
    package var directory: String { home + "/sim" }
    package var swtpm: Swtpm { Swtpm(directory: directory + "/tpm") }
    package var readerSocket: String { directory + "/reader" }
    /// Where `sim start --daemon`'s touchstoned listens.
    package var daemonSocket: String { directory + "/daemon.sock" }

    package init(home: String) {
        self.home = home.count > 1 && home.hasSuffix("/") ? String(home.dropLast()) : home
    }

    /// Refuses a state folder so deep that the sockets would not fit.
    package func checkPaths() throws(SimulatorError) {
        let tpm = swtpm
        let checks = [(tpm.socketPath, Self.maximumTPMSocketPath), (tpm.controlPath, Self.maximumSocketPath),
                      (readerSocket + ".lock", Self.maximumSocketPath)]
        for (path, limit) in checks where path.utf8.count > limit {
            throw .stateFolderTooDeep(path: path, limit: limit,
                                      longestHome: home.utf8.count - (path.utf8.count - limit))
        }
    }

    /// Creates the state folder and `sim/`, both 0700.
    package func createDirectories() throws(SimulatorError) {
        for path in [home, directory] {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw .cannotCreate(path: path, reason: error.localizedDescription)
            }
        }
    }
}

import Foundation
import TouchstoneCommandLine
import TouchstoneTPM

/// Where the simulator lives under the state directory:
/// `$TOUCHSTONE_HOME/sim/` holds `tpm/` (swtpm's state, sockets, pid file
/// and log) and `reader` (the virtual reader's socket, with `reader.lock`).
struct SimulatorLayout {
    /// The longest unix socket path (sun_path holds 108 bytes with the NUL).
    static let maximumSocketPath = 107
    /// swtpm's data socket must stay shorter than this (Swtpm's own limit).
    static let maximumTPMSocketPath = 99

    let home: String
    var directory: String { home + "/sim" }
    var swtpm: Swtpm { Swtpm(directory: directory + "/tpm") }
    var readerSocket: String { directory + "/reader" }

    init(home: String) {
        self.home = home.count > 1 && home.hasSuffix("/") ? String(home.dropLast()) : home
    }

    /// Refuses a state directory so deep that the sockets would not fit.
    func checkPaths() throws {
        let tpm = swtpm
        let checks = [(tpm.socketPath, Self.maximumTPMSocketPath), (tpm.controlPath, Self.maximumSocketPath),
                      (readerSocket + ".lock", Self.maximumSocketPath)]
        for (path, limit) in checks where path.utf8.count > limit {
            throw CLIFailure(.failure, "the state directory is too deep for the simulator: \(path) is \(path.utf8.count) bytes, and unix socket paths here hold at most \(limit)",
                             hint: "use a shorter --home or TOUCHSTONE_HOME (at most \(home.utf8.count - (path.utf8.count - limit)) bytes)")
        }
    }

    /// Creates the state directory and `sim/`, both 0700.
    func createDirectories() throws {
        for path in [home, directory] {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw CLIFailure(.failure, "cannot create \(path): \(error.localizedDescription)")
            }
        }
    }
}

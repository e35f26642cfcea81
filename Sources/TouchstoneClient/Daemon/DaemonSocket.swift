import FoundationEssentials
import Glibc

/// Where the automatic engine looks for a daemon: the rule both the
/// library (`Configuration.resolvedEngine`) and a daemon client follow.
package enum DaemonSocket {
    /// The system's `touchstoned` (its systemd socket unit).
    package static let system = "/run/touchstone/socket"

    /// The simulator's daemon of the state folder `home`
    /// (`touchstone sim start --daemon`).
    package static func simulator(home: String) -> String { home + "/sim/daemon.sock" }

    /// The socket the automatic engine talks to, when one exists there:
    /// with the simulator's TPM and reader the simulator's daemon, else the
    /// system's. nil: the embedded engine.
    package static func automatic(home: String, simulated: Bool) -> String? {
        let path = simulated ? simulator(home: home) : system
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK ? path : nil
    }
}

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

    /// The socket the automatic engine must use even when nothing listens
    /// there (the client then says the daemon cannot be reached, exit 11):
    /// the state folder's vault was moved into the daemon (`movedMarker`),
    /// or, for the system's TPM and reader, the machine's client settings
    /// say `engine=daemon` (`clientConfiguration`). nil: no such rule.
    package static func required(home: String, simulated: Bool) -> String? {
        if access(movedMarker(home: home), F_OK) == 0 { return simulated ? simulator(home: home) : system }
        if !simulated, clientSettings()["engine"] == "daemon" { return system }
        return nil
    }

    /// Written into a state folder whose vault `touchstone import` moved
    /// into the daemon: from then on, that folder's automatic engine is the
    /// daemon's, never the embedded vault.
    package static func movedMarker(home: String) -> String { home + "/moved-to-daemon" }

    /// The machine's client settings (`scripts/install-daemon` writes
    /// `engine=daemon` there).
    package static let clientConfiguration = "/etc/touchstone/client.conf"

    /// `key=value` lines of the client settings (`#` comments, blank
    /// lines); empty when there is no file.
    package static func clientSettings() -> [String: String] {
        var path = clientConfiguration
        #if TOUCHSTONE_TEST_SUPPORT
        // Debug builds: a test's own file, so that tests never share /etc.
        if let own = getenv("TOUCHSTONE_TEST_CLIENT_CONF") { path = String(cString: own) }
        #endif
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        func trimmed(_ text: Substring) -> String {
            String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
        }
        var settings: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let entry = trimmed(line)
            guard !entry.hasPrefix("#"), let equals = entry.firstIndex(of: "=") else { continue }
            settings[trimmed(entry[..<equals])] = trimmed(entry[entry.index(after: equals)...])
        }
        return settings
    }
}

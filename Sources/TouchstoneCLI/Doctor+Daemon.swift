import Foundation
import Glibc
import Touchstone

/// The daemon: the engine as this command resolved it (docs/daemon.md,
/// "Choosing the engine"); through a daemon, whether it answered the
/// status call; touchstoned installed or not.
extension Doctor {
    func daemon(_ status: Status) -> DoctorCheck {
        let installed = Session.installedDaemon.map { "touchstoned: \($0)" } ?? "touchstoned is not installed"
        guard let socket = daemonSocket else {
            if !options.usesSimulator, DaemonSocket.clientSettings()["engine"] == "daemon" {
                return .problem(.daemon, "\(DaemonSocket.clientConfiguration) says engine=daemon, and --embedded opens a vault in this process instead",
                                fix: "leave out --embedded: on this machine your vault is touchstoned's")
            }
            let looked = options.engine == .embedded ? "--embedded"
                : "no socket at " + (options.usesSimulator ? DaemonSocket.simulator(home: configuration.home.path) : DaemonSocket.system)
            return .notUsed(.daemon, "embedded: this process opens the vault (\(looked)); \(installed)")
        }
        let chosen = daemonChoice(socket)
        guard let failure = status.daemonFailure else {
            return .ok(.daemon, "touchstoned answers at \(socket) (\(chosen))")
        }
        var info = stat()
        let found = stat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
            ? "nothing answers at \(socket): \(failure.reason)" : "no socket at \(socket)"
        return .problem(.daemon, "\(found) (\(chosen)); \(installed)", fix: daemonFix(socket))
    }

    /// Why this command uses the daemon at `socket`.
    private func daemonChoice(_ socket: String) -> String {
        if case .daemon = options.engine { return "--daemon or TOUCHSTONE_DAEMON" }
        let home = configuration.home.path
        if DaemonSocket.automatic(home: home, simulated: options.usesSimulator) != nil { return "its socket exists" }
        if access(DaemonSocket.movedMarker(home: home), F_OK) == 0 { return "the vault of \(home) was moved into it" }
        return "\(DaemonSocket.clientConfiguration) says engine=daemon"
    }

    /// How to bring the daemon at `socket` back.
    func daemonFix(_ socket: String) -> String {
        if socket == configuration.simulator.daemonSocket { return "touchstone sim start --daemon" }
        guard socket == DaemonSocket.system else {
            return "start touchstoned --socket \(socket), or point --daemon (TOUCHSTONE_DAEMON) at the socket it listens on"
        }
        guard Session.installedDaemon != nil else {
            return "install it: swift build -c release --static-swift-stdlib, then sudo scripts/install-daemon (docs/daemon.md)"
        }
        return "sudo systemctl enable --now touchstoned.socket (journalctl -u touchstoned says why it stopped)"
    }

    /// A device check whose answer only the daemon has, when it gave none.
    func unknownThroughDaemon(_ check: DoctorCheck.Name, _ failure: DaemonFailure) -> DoctorCheck {
        .problem(check, "not known: touchstoned does not answer at \(failure.socket)", fix: daemonFix(failure.socket))
    }
}

extension Session {
    /// The `touchstoned` a command would run: the one next to this binary,
    /// else the first on PATH, else in /usr/bin or /usr/local/bin; nil
    /// when there is none.
    static var installedDaemon: String? {
        let folders = [ownFolder] + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/bin", "/usr/local/bin"]
        return folders.lazy.map { $0 + "/touchstoned" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The folder of this process's executable.
    static var ownFolder: String {
        let here = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (here as NSString).deletingLastPathComponent
    }
}

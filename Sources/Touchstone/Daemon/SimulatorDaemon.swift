import Foundation
import TouchstonePOSIX
import TouchstoneSimulator
#if canImport(Glibc)
import Glibc
#endif

/// The simulator's `touchstoned` (`touchstone sim start --daemon`): run as
/// the calling user on the simulator of a state folder, listening on
/// `sim/daemon.sock`, its log in `sim/daemon.log`, its pid in
/// `sim/daemon.pid`. With the simulator's TPM and reader, the automatic
/// engine then is this daemon (`Configuration.resolvedEngine`).
public struct SimulatorDaemon: Sendable, Hashable {
    public let simulator: Simulator

    public init(simulator: Simulator) { self.simulator = simulator }

    public var socket: String { simulator.daemonSocket }
    public var logFile: String { simulator.directory + "/daemon.log" }
    var pidFile: String { simulator.directory + "/daemon.pid" }
    /// The daemon's --home: the state folder the simulator belongs to.
    var home: String { (simulator.directory as NSString).deletingLastPathComponent }

    /// The pid of the running daemon, if one runs.
    public var runningPID: Int32? {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0,
              kill(pid, 0) == 0 || errno == EPERM,
              let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
              comm.hasPrefix("touchstoned") else { return nil }
        return pid
    }

    public enum Start: Sendable, Hashable {
        case started(pid: Int32)
        case alreadyRunning(pid: Int32)
    }

    /// Starts the daemon (`executable`: the touchstoned binary) unless one
    /// runs, and waits until it accepts connections.
    public func start(executable: String) throws(SimulatorError) -> Start {
        if let pid = runningPID { return .alreadyRunning(pid: pid) }
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw .notInstalled("touchstoned (looked for \(executable))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let pid: pid_t
        do {
            pid = try ChildSpawn.start(executable, ["--home", home, "--sim", "--socket", socket], actions: &actions, newSession: true)
        } catch {
            throw .didNotStart(error.description)
        }
        do {
            try Data("\(pid)\n".utf8).write(to: URL(fileURLWithPath: pidFile))
        } catch {
            kill(pid, SIGTERM)
            throw .cannotCreate(path: pidFile, reason: "\(error)")
        }
        // Ready when it accepts a connection.
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if (try? FrameSocket.connect(to: socket)) != nil { return .started(pid: pid) }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                try? FileManager.default.removeItem(atPath: pidFile)
                throw .didNotStart("touchstoned exited at once; see \(logFile)")
            }
            usleep(20_000)
        }
        kill(pid, SIGTERM)
        throw .didNotStart("touchstoned did not listen on \(socket) within 20 s; see \(logFile)")
    }

    /// Stops the daemon (SIGTERM, then SIGKILL after 10 s); its pid, or nil
    /// when none ran.
    @discardableResult
    public func stop() -> Int32? {
        guard let pid = runningPID else {
            try? FileManager.default.removeItem(atPath: pidFile)
            return nil
        }
        Self.terminate(pid)
        try? FileManager.default.removeItem(atPath: pidFile)
        return pid
    }

    /// Ends a background process of the simulator's (this daemon, `sim
    /// start --fido`'s authenticator): SIGTERM, then SIGKILL after 10 s,
    /// reaped when it is this process's child.
    package static func terminate(_ pid: Int32) {
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, kill(pid, 0) == 0 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { break }
            usleep(20_000)
        }
        if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
    }
}

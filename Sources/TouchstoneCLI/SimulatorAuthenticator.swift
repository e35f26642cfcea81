import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstonePOSIX
import TouchstoneSimulator

/// The simulator's FIDO authenticator (`touchstone sim start --fido`):
/// `touchstone fido serve --udp 127.0.0.1:0` on the simulator of a state
/// folder, as the calling user, its port in `sim/fido.port`, its pid in
/// `sim/fido.pid`, its log in `sim/fido.log`.
struct SimulatorAuthenticator {
    let simulator: Simulator

    var portFile: String { simulator.directory + "/fido.port" }
    var pidFile: String { simulator.directory + "/fido.pid" }
    var logFile: String { simulator.directory + "/fido.log" }
    /// The state folder the simulator belongs to.
    var home: String { (simulator.directory as NSString).deletingLastPathComponent }

    /// The pid of the running authenticator, if one runs.
    var runningPID: Int32? {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0,
              kill(pid, 0) == 0 || errno == EPERM,
              let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
              command.contains("fido\0serve\0") else { return nil }
        return pid
    }

    /// Its UDP port, while it runs.
    var port: UInt16? {
        guard runningPID != nil, let text = try? String(contentsOfFile: portFile, encoding: .utf8) else { return nil }
        return UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    enum Start {
        case started(pid: Int32, port: UInt16)
        case alreadyRunning(pid: Int32, port: UInt16?)
    }

    /// Starts the authenticator (`executable`: this program) unless one
    /// runs, and waits until it prints its port.
    func start(executable: String) throws -> Start {
        if let pid = runningPID { return .alreadyRunning(pid: pid, port: port) }
        try? FileManager.default.removeItem(atPath: portFile)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, portFile, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        let pid: pid_t
        do {
            pid = try ChildSpawn.start(executable, ["--home", home, "--sim", "fido", "serve", "--udp", "127.0.0.1:0"], actions: &actions, newSession: true)
        } catch {
            throw CLIFailure(.failure, "the simulator's authenticator did not start: \(error)")
        }
        do {
            try Data("\(pid)\n".utf8).write(to: URL(fileURLWithPath: pidFile))
        } catch {
            kill(pid, SIGTERM)
            throw CLIFailure(.failure, "cannot write \(pidFile): \(error)")
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), text.hasSuffix("\n"),
               let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return .started(pid: pid, port: port)
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                try? FileManager.default.removeItem(atPath: pidFile)
                throw CLIFailure(.failure, "the simulator's authenticator exited at once; see \(logFile)")
            }
            usleep(20_000)
        }
        kill(pid, SIGTERM)
        throw CLIFailure(.failure, "the simulator's authenticator printed no port within 20 s; see \(logFile)")
    }

    /// Stops it (SIGTERM, then SIGKILL after 10 s); its pid, or nil when
    /// none ran.
    @discardableResult
    func stop() -> Int32? {
        defer {
            try? FileManager.default.removeItem(atPath: pidFile)
            try? FileManager.default.removeItem(atPath: portFile)
        }
        guard let pid = runningPID else { return nil }
        SimulatorDaemon.terminate(pid)
        return pid
    }
}

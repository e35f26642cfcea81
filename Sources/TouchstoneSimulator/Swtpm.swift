import TouchstoneModel
import TouchstonePOSIX
import Foundation
import TouchstoneTPM

/// A private software TPM (swtpm) on unix sockets, run as a background
/// process: the simulator's TPM and the test suite's.
///
/// Layout of its folder: `tpm2-00.permall` (swtpm's state), `sock` (TPM
/// commands), `sock.ctrl` (control channel), `pid`, `log`.
/// It is stopped the clean way: TPM2_Shutdown first (killing it without one
/// would lose orderly state and count as a dictionary-attack failure), then
/// SIGTERM to the PID from its pid file.
package struct Swtpm: Sendable {
    package let directory: String
    package var socketPath: String { directory + "/sock" }
    package var controlPath: String { directory + "/sock.ctrl" }
    package var pidPath: String { directory + "/pid" }
    package var logPath: String { directory + "/log" }
    /// The TCTI string that reaches it.
    package var tcti: String { "swtpm:path=" + socketPath }

    package init(directory: String) {
        self.directory = directory
    }

    /// The PID from the pid file, if that process is alive (not a zombie)
    /// and is the swtpm of this folder. A swtpm that died (killed, crashed,
    /// or the machine rebooted) leaves its pid file behind, and its PID may
    /// since belong to another process: that one is not taken for it (nor
    /// sent SIGTERM by `stop`).
    package var pid: Int32? {
        guard let text = try? String(contentsOfFile: pidPath, encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0 else { return nil }
        return Self.isAlive(pid) && isThisSwtpm(pid) ? pid : nil
    }

    /// Whether `pid` runs swtpm on this folder (its command line names the
    /// folder as --tpmstate). When /proc does not tell, it is assumed so.
    func isThisSwtpm(_ pid: Int32) -> Bool {
        guard let cmdline = readProcFile("/proc/\(pid)/cmdline"), !cmdline.isEmpty else { return true }
        let arguments = cmdline.split(separator: "\0", omittingEmptySubsequences: false)
        return arguments.contains { $0.hasPrefix("dir=\(directory),") || $0 == "dir=\(directory)" }
    }

    package var isRunning: Bool { pid != nil }

    /// Starts swtpm on this folder (created 0700 if missing; existing state
    /// is kept, so a restart finds its keys and NV indices) and waits until
    /// its control channel answers.
    @discardableResult
    package func start(timeout: TimeInterval = 30) throws(SimulatorError) -> Int32 {
        if let pid { return pid }
        let limit = SimulatorLayout.maximumTPMSocketPath
        guard socketPath.utf8.count <= limit else {
            throw .stateFolderTooDeep(path: socketPath, limit: limit,
                                      longestHome: directory.utf8.count - (socketPath.utf8.count - limit))
        }
        guard let swtpm = Self.which("swtpm") else { throw .notInstalled("swtpm") }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .cannotCreate(path: directory, reason: error.localizedDescription)
        }
        for stale in [socketPath, controlPath, pidPath] { try? FileManager.default.removeItem(atPath: stale) }
        let status = try Self.run(swtpm, [
            "socket", "--tpm2",
            "--tpmstate", "dir=\(directory),mode=0600",
            "--server", "type=unixio,path=\(socketPath),mode=0600",
            "--ctrl", "type=unixio,path=\(controlPath),mode=0600",
            "--flags", "not-need-init,startup-clear",
            "--pid", "file=\(pidPath)",
            "--log", "file=\(logPath),level=1",
            "-d",
        ])
        guard status == 0 else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw .didNotStart("exit \(status): \(log.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let pid, controlAnswers() { return pid }
            usleep(10_000)
        }
        throw .didNotStart("its control socket \(controlPath) did not answer within \(Int(timeout)) s")
    }

    /// TPM2_Shutdown, then SIGTERM (SIGKILL after `timeout`), waiting for
    /// the process to be gone. Does nothing if it is not running.
    package func stop(timeout: TimeInterval = 5) throws(SimulatorError) {
        guard let pid else { return }
        if let tpm = try? TPM(tcti: tcti) { try? tpm.shutdown() }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while Self.isAlive(pid) && Date() < deadline { usleep(10_000) }
        if Self.isAlive(pid) {
            kill(pid, SIGKILL)
            usleep(100_000)
            if Self.isAlive(pid) { throw .didNotStop(pid: pid) }
        }
        try? FileManager.default.removeItem(atPath: pidPath)
    }

    /// Kills swtpm without TPM2_Shutdown: what a crash or power loss does.
    package func kill9() {
        guard let pid else { return }
        kill(pid, SIGKILL)
        while Self.isAlive(pid) { usleep(5_000) }
        try? FileManager.default.removeItem(atPath: pidPath)
    }

    /// Whether swtpm's control channel accepts a connection and answers
    /// CMD_GET_CAPABILITY (swtpm_ioctl -c).
    func controlAnswers() -> Bool {
        guard let ioctl = Self.which("swtpm_ioctl") else { return FileManager.default.fileExists(atPath: socketPath) }
        return (try? Self.run(ioctl, ["--unix", controlPath, "-c"])) == 0
    }

    // MARK: - Process helpers

    static func isAlive(_ pid: Int32) -> Bool {
        do {
            _ = try valueOrErrno(retryOnInterrupt: false) { kill(pid, 0) }
        } catch .notPermitted {
            // Alive, and someone else's.
        } catch {
            return false
        }
        // A zombie (exited, not yet reaped by its new parent) is not alive.
        guard let stat = readProcFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return true }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }

    /// Finds an executable on PATH (and the sbin folders, where Debian puts
    /// some TPM tools).
    package static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/local/bin"] {
            let candidate = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs a program to completion and returns its exit status. Its
    /// standard streams are /dev/null and it inherits no other descriptor:
    /// a daemon (swtpm -d) must not keep this process's sockets or pipes
    /// open. (Foundation's Process waits on a descriptor the daemon would
    /// inherit, and never returns.)
    /// `output`: a file that receives stdout and stderr (instead of
    /// /dev/null); `environment`: the child's environment (default: ours);
    /// `directory`: its working directory.
    @discardableResult
    package static func run(_ executable: String, _ arguments: [String], output: String? = nil,
                           environment: [String: String]? = nil, directory: String? = nil) throws(SimulatorError) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output {
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // glibc's posix_spawn_file_actions_addchdir_np does not import:
        // coreutils' env changes the directory instead.
        let (program, list) = directory.map { ("/usr/bin/env", ["-C", $0, executable] + arguments) }
            ?? (executable, arguments)
        let pid: pid_t
        do {
            pid = try ChildSpawn.start(program, list, actions: &actions, environment: environment)
        } catch {
            throw .didNotStart(error.description)
        }
        return ChildSpawn.waitForExit(pid)
    }
}

import Foundation
import TouchstonePOSIX
import Glibc
import TestRigs
import TouchstoneTPM

/// The built `touchstone` binary run as a subprocess: stdin from bytes,
/// stdout and stderr captured in files, optionally a passcode descriptor 3.
/// Spawned with posix_spawn in a new session (no controlling terminal, so a
/// developer's terminal is never read), waited for by polling, never by
/// blocking a Swift concurrency thread on work of this process.
struct CLIResult {
    let code: Int32
    let stdout: [UInt8]
    let stderr: String

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

/// A touchstone process started in the background.
final class RunningCLI {
    let pid: pid_t
    let stdoutPath: String
    let stderrPath: String
    private(set) var status: Int32?

    init(pid: pid_t, stdoutPath: String, stderrPath: String) {
        self.pid = pid
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
    }

    /// Its stderr so far.
    var stderrSoFar: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits until its stderr contains `text` (true) or `timeout` passes or
    /// it exits (false).
    func waitForStderr(_ text: String, timeout: TimeInterval = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stderrSoFar.contains(text) { return true }
            if poll() != nil { return stderrSoFar.contains(text) }
            usleep(20_000)
        }
        return false
    }

    /// Waits until the process has stopped itself (state `T` in
    /// /proc/PID/stat: TOUCHSTONE_TEST_STOP_BEFORE_EXIT). False if it exits
    /// first or `timeout` passes.
    func waitUntilStopped(timeout: TimeInterval = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let stat = readProcFile("/proc/\(pid)/stat"),
               let paren = stat.lastIndex(of: ")") {
                // "PID (comm) S ...": the state follows the command name.
                let state = stat[stat.index(after: paren)...].dropFirst().first
                if state == "T" { return true }
                if state == "Z" { return false }
            }
            if poll() != nil { return false }
            usleep(10_000)
        }
        return false
    }

    /// The exit status if it has exited (reaping it once).
    @discardableResult
    func poll() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        let rc = waitpid(pid, &raw, WNOHANG)
        guard rc == pid else { return nil }
        status = ChildSpawn.exitStatus(raw)
        return status
    }

    /// Waits for the exit (killing it after `timeout`, reported as 137).
    func wait(timeout: TimeInterval = 120) -> CLIResult {
        let deadline = Date().addingTimeInterval(timeout)
        while poll() == nil {
            if Date() > deadline {
                kill(pid, SIGKILL)
                while poll() == nil { usleep(10_000) }
                break
            }
            usleep(20_000)
        }
        let out = (try? Data(contentsOf: URL(fileURLWithPath: stdoutPath))).map { [UInt8]($0) } ?? []
        return CLIResult(code: status ?? -1, stdout: out, stderr: stderrSoFar)
    }

    func signal(_ number: Int32) { kill(pid, number) }
}

/// Spawns the binary.
enum CLIProcess {
    /// The `touchstone` executable next to the test bundle (the same build
    /// products folder); `swift build` makes it.
    static let binary: String = {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [bundleDirectory.appendingPathComponent("touchstone").path]
        // The test binary may sit inside the .xctest bundle.
        candidates.append(bundleDirectory.deletingLastPathComponent().appendingPathComponent("touchstone").path)
        candidates.append(bundleDirectory.deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("touchstone").path)
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }()

    private static let counter = NSLock()
    nonisolated(unsafe) private static var serial = 0

    /// Starts `touchstone arguments` with `stdin` as its standard input,
    /// `fd3` (if given) readable on descriptor 3, and `environment`.
    /// `wrapper`, when given, is a command (absolute path first) that runs
    /// the binary: `wrapper... touchstone arguments...`.
    /// `program`: another binary of the build (`touchstoned`).
    static func start(_ arguments: [String], stdin: [UInt8] = [], fd3: [UInt8]? = nil,
                      environment: [String: String], scratch: String, wrapper: [String] = [],
                      program: String = CLIProcess.binary) throws -> RunningCLI {
        try start(bytes: arguments.map { Array($0.utf8) }, stdin: stdin, fd3: fd3,
                  environment: environment, scratch: scratch, wrapper: wrapper, program: program)
    }

    /// The same with the arguments as bytes (which need not be UTF-8).
    static func start(bytes arguments: [[UInt8]], stdin: [UInt8] = [], fd3: [UInt8]? = nil,
                      environment: [String: String], scratch: String, wrapper: [String] = [],
                      program: String = CLIProcess.binary) throws -> RunningCLI {
        let n = counter.withLock { serial += 1; return serial }
        let base = "\(scratch)/run\(n)"
        let stdinPath = base + ".in", stdoutPath = base + ".out", stderrPath = base + ".err"
        try Data(stdin).write(to: URL(fileURLWithPath: stdinPath))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let fd3 {
            let fd3Path = base + ".fd3"
            try Data(fd3).write(to: URL(fileURLWithPath: fd3Path))
            posix_spawn_file_actions_addopen(&actions, 3, fd3Path, O_RDONLY, 0)
        }
        // A new session: no controlling terminal, as in CI.
        let pid: pid_t
        do {
            let executable = wrapper.first ?? program
            let argv = wrapper.isEmpty ? arguments : (wrapper.dropFirst() + [program]).map { Array($0.utf8) } + arguments
            pid = try ChildSpawn.start(executable, bytes: argv, actions: &actions, environment: environment, newSession: true,
                                       inheritedBelow: fd3 == nil ? 3 : 4)
        } catch {
            throw RigFailure("\(error) (build it first: swift build)")
        }
        return RunningCLI(pid: pid, stdoutPath: stdoutPath, stderrPath: stderrPath)
    }
}

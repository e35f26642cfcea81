import Foundation
import Glibc
import TestRigs

/// One test's world: a fresh TOUCHSTONE_HOME under /tmp (short, for the
/// unix sockets), a scratch folder for the captured output, the simulator
/// started and stopped through the CLI itself. Call `close()` at the end
/// (a `defer`); deinit only cleans up what a failed test left, without
/// waiting on anything.
final class CLISandbox {
    let root: String
    let home: String
    let scratch: String
    private var closed = false
    /// Added to every run's environment (e.g. a test hook).
    var extraEnvironment: [String: String] = [:]
    /// The simulator runs the image reader: a finger's first touch grows
    /// its master print, done ahead of the command that waits (`growFinger`).
    var imageReader = false
    /// The simulated fingers whose master print the simulator keeps.
    private var grownFingers: Set<String> = []

    /// The passcode the tests set (never in argv or the environment).
    static let passcode = "s3cret-pass"

    init(startSimulator: Bool = true) throws {
        root = try makeTemporaryDirectory("tsc")
        home = root + "/h"
        scratch = root + "/x"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        if startSimulator {
            let started = run(["sim", "start"])
            guard started.code == 0 else { throw RigFailure("sim start failed: \(started.stderr)") }
        }
    }

    /// The environment every run gets: nothing of the caller's TOUCHSTONE_*.
    var environment: [String: String] {
        var environment = ["TOUCHSTONE_HOME": home, "TSS2_LOG": "all+none"]
        let caller = ProcessInfo.processInfo.environment
        for key in ["PATH", "HOME", "LANG"] { environment[key] = caller[key] }
        environment.merge(extraEnvironment) { _, extra in extra }
        return environment
    }

    /// Runs touchstone to completion.
    /// `wrapper` runs it under another command (see `CLIProcess.start`).
    @discardableResult
    func run(_ arguments: [String], stdin: [UInt8] = [], fd3: [UInt8]? = nil, timeout: TimeInterval = 120,
             wrapper: [String] = []) -> CLIResult {
        run(bytes: arguments.map { Array($0.utf8) }, stdin: stdin, fd3: fd3, timeout: timeout, wrapper: wrapper)
    }

    /// Runs touchstone with arguments given as bytes (which need not be UTF-8).
    @discardableResult
    func run(bytes arguments: [[UInt8]], stdin: [UInt8] = [], fd3: [UInt8]? = nil, timeout: TimeInterval = 120,
             wrapper: [String] = []) -> CLIResult {
        do {
            return try CLIProcess.start(bytes: arguments, stdin: stdin, fd3: fd3, environment: environment,
                                        scratch: scratch, wrapper: wrapper).wait(timeout: timeout)
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// Starts touchstone in the background.
    func start(_ arguments: [String], stdin: [UInt8] = [], fd3: [UInt8]? = nil, wrapper: [String] = []) throws -> RunningCLI {
        try CLIProcess.start(arguments, stdin: stdin, fd3: fd3, environment: environment, scratch: scratch, wrapper: wrapper)
    }

    /// `text` plus a newline, as bytes: a passcode line.
    static func line(_ text: String) -> [UInt8] { Array((text + "\n").utf8) }

    /// Sets the passcode through --passcode-fd 0.
    func setPasscode() -> CLIResult {
        run(["--sim", "passcode", "set", "--passcode-fd", "0"], stdin: Self.line(Self.passcode))
    }

    /// Enrols `finger` with five touches of simulated finger `id`, the
    /// touches sent from a second process as a person would from a second
    /// terminal. Returns the enrol command's result.
    func enroll(_ finger: String, as id: String, passcode: String = CLISandbox.passcode) -> CLIResult {
        guard let enrolling = try? start(["--sim", "enroll", finger, "--passcode-fd", "0"], stdin: Self.line(passcode)) else {
            return CLIResult(code: -1, stdout: [], stderr: "cannot start enroll")
        }
        let touches = run(["sim", "touch", id, "--count", "5", "--wait", "60"])
        let result = enrolling.wait()
        return touches.code == 0 ? result : CLIResult(code: -1, stdout: [], stderr: "sim touch: \(touches.stderr)")
    }

    /// Runs a command that waits for a touch, touches with `id` once it
    /// waits, and returns its result.
    func withTouch(_ id: String, _ arguments: [String], stdin: [UInt8] = [], fd3: [UInt8]? = nil) -> CLIResult {
        growFinger(id)
        guard let waiting = try? start(arguments, stdin: stdin, fd3: fd3) else {
            return CLIResult(code: -1, stdout: [], stderr: "cannot start")
        }
        guard waiting.waitForStderr("touch the reader") else { return waiting.wait() }
        let touch = run(["sim", "touch", id, "--wait", "60"])
        let result = waiting.wait()
        return touch.code == 0 ? result : CLIResult(code: -1, stdout: result.stdout, stderr: "sim touch: \(touch.stderr)\n" + result.stderr)
    }

    /// On the image reader, grows simulated finger `id`'s master print
    /// into the simulator's `sim/fingers` (`sim print`) before a command
    /// waits for its touch: half a second of a core, far more on a machine
    /// busy with the whole suite (once over a minute), which would otherwise count
    /// against the wait (the daemon caps each at 60 s). What a test
    /// checks is the match, never how long a master takes to grow.
    func growFinger(_ id: String) {
        guard imageReader, !grownFingers.contains(id) else { return }
        let grown = run(["sim", "print", id, "--output", "/dev/null"], timeout: 600)
        if grown.code == 0 { grownFingers.insert(id) }
    }

    /// Stops the simulator and deletes everything.
    func close() {
        guard !closed else { return }
        closed = true
        run(["sim", "stop"])
        try? FileManager.default.removeItem(atPath: root)
    }

    deinit {
        guard !closed else { return }
        // A test that failed early: stop swtpm by its PID without waiting.
        if let text = try? String(contentsOfFile: home + "/sim/tpm/pid", encoding: .utf8),
           let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGTERM)
        }
        try? FileManager.default.removeItem(atPath: root)
    }
}

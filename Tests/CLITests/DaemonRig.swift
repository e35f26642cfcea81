import Foundation
import Glibc
import TestRigs
import TouchstoneSimulator
import TouchstoneModel

/// `name`'s uid and gid from the user database, read with getpwnam_r:
/// getpwnam's buffer is one per process, and rigs of tests that run in
/// parallel look up users at the same time.
func passwdEntry(_ name: String) -> (uid: uid_t, gid: gid_t)? {
    var entry = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 16384)
    guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
    return (entry.pw_uid, entry.pw_gid)
}

/// A user this test created (useradd) and removes (userdel).
struct TestUser {
    let name: String
    let uid: uid_t
    let gid: gid_t
    /// The user's own folder under the rig (0700, theirs).
    let home: String

    /// setpriv as this user: no supplementary groups, no capabilities but
    /// `ambient` (names as setpriv spells them: `sys_ptrace`), which the
    /// program keeps.
    func wrapper(ambient: [String] = []) throws -> [String] {
        let added = ambient.map { ",+" + $0 }.joined()
        return [try Confinement.tool("setpriv"), "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups",
                "--inh-caps=-all" + added, "--bounding-set=-all" + added]
            + (ambient.isEmpty ? [] : ["--ambient-caps=" + ambient.map { "+" + $0 }.joined(separator: ",")]) + ["--"]
    }
}

/// The daemon's world for one test, as CI has it (root, in a sandbox): a
/// system user for `touchstoned` and two login users, all made here and
/// removed at `close()`; the daemon's state folder (0700, the daemon
/// user's) with its own simulator, started as the daemon user; the daemon
/// run under setpriv as that user, listening on a socket under the rig;
/// the clients run as the login users. Everything under one fresh /tmp
/// folder; processes stopped by PID.
final class DaemonRig {
    let root: String
    /// The daemon's --home (its simulator in `daemonHome/sim`).
    let daemonHome: String
    let socket: String
    let scratch: String
    let daemonUser: TestUser
    let alice: TestUser
    let bob: TestUser
    private(set) var daemon: RunningCLI?
    private var closed = false
    /// Copies of the built binaries that the test's users can run: the
    /// build folder may be private to root (a umask of 077), and setpriv's
    /// own exec is still root's while the binaries' execs of each other are
    /// the user's.
    let bin: String
    var touchstone: String { bin + "/touchstone" }
    var touchstoned: String { bin + "/touchstoned" }

    static let passcode = CLISandbox.passcode
    static var daemonBinary: String {
        URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().appendingPathComponent("touchstoned").path
    }

    init(startDaemon: Bool = true) throws {
        guard geteuid() == 0 else {
            throw RigFailure("the daemon tests create users and run programs as them: run them as root (CI does)")
        }
        root = try makeTemporaryDirectory("tsd")
        chmod(root, 0o755)
        scratch = root + "/x"
        daemonHome = root + "/d"
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        var made: [TestUser] = []
        do {
            daemonUser = try Self.makeUser("tsd\(tag)", system: true, under: root)
            made.append(daemonUser)
            alice = try Self.makeUser("tsa\(tag)", system: false, under: root)
            made.append(alice)
            bob = try Self.makeUser("tsb\(tag)", system: false, under: root)
            made.append(bob)
        } catch {
            for user in made { Self.removeUser(user) }
            try? FileManager.default.removeItem(atPath: root)
            throw error
        }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        chmod(scratch, 0o700)
        bin = root + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false)
        chmod(bin, 0o755)
        // Copied by cp, a process of its own: a copy written from this
        // process would hold the new file open for writing while other
        // tests' threads spawn children, and a child that has not exec'd
        // yet keeps that descriptor; executing the copy then fails with
        // "Text file busy" (ETXTBSY). cp's descriptor is never ours to pass on.
        for name in ["touchstone", "touchstone-cli", "touchstone-get", "touchstoned"] {
            let built = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().appendingPathComponent(name).path
            guard try Swtpm.run("/bin/cp", [built, bin + "/" + name]) == 0 else { throw RigFailure("cp \(built) failed") }
            chmod(bin + "/" + name, 0o755)
        }
        // The socket's folder: the daemon's, open for every user to reach
        // the socket (0755), as /run/touchstone is.
        let sockets = root + "/s"
        try FileManager.default.createDirectory(atPath: sockets, withIntermediateDirectories: false)
        chown(sockets, daemonUser.uid, daemonUser.gid)
        chmod(sockets, 0o755)
        socket = sockets + "/daemon.sock"
        try FileManager.default.createDirectory(atPath: daemonHome, withIntermediateDirectories: false)
        chown(daemonHome, daemonUser.uid, daemonUser.gid)
        chmod(daemonHome, 0o700)
        let started = asDaemonUser(["--home", daemonHome, "sim", "start"])
        guard started.code == 0 else {
            close()
            throw RigFailure("sim start as the daemon user failed: \(started.stderr)")
        }
        if startDaemon { try self.startDaemon() }
    }

    private static func makeUser(_ name: String, system: Bool, under root: String) throws -> TestUser {
        let home = root + "/" + name
        var arguments = ["--no-create-home", "--home-dir", system ? "/nonexistent" : home, "--user-group"]
        arguments += system ? ["--system", "--shell", "/usr/sbin/nologin"] : ["--shell", "/bin/sh"]
        let status = try Swtpm.run(try Confinement.tool("useradd"), arguments + [name])
        guard status == 0, let entry = passwdEntry(name) else { throw RigFailure("useradd \(name) failed (status \(status))") }
        let user = TestUser(name: name, uid: entry.uid, gid: entry.gid, home: home)
        if !system {
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
            chown(home, user.uid, user.gid)
            chmod(home, 0o700)
        }
        return user
    }

    private static func removeUser(_ user: TestUser) {
        _ = try? Swtpm.run(try Confinement.tool("userdel"), [user.name])
    }

    // MARK: - Running things

    private func environment(home: String, extra: [String: String] = [:]) -> [String: String] {
        var environment = ["HOME": home, "TSS2_LOG": "all+none", "LANG": "C.UTF-8"]
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"]
        return environment.merging(extra) { _, new in new }
    }

    /// Runs `touchstone arguments` as the daemon's user (its simulator).
    @discardableResult
    func asDaemonUser(_ arguments: [String]) -> CLIResult {
        do {
            return try CLIProcess.start(arguments, environment: environment(home: daemonHome), scratch: scratch,
                                        wrapper: try daemonUser.wrapper(), program: touchstone).wait()
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// Starts `touchstoned` as the daemon's user and waits until it listens.
    /// `capabilities`: the daemon keeps these (setpriv's names), as a
    /// unit's AmbientCapabilities= would give them.
    /// `arguments`: where its state, TPM and reader are (the rig's home
    /// and simulator unless given).
    func startDaemon(arguments: [String]? = nil, extraArguments: [String] = [], extraEnvironment: [String: String] = [:],
                     capabilities: [String] = []) throws {
        let running = try CLIProcess.start((arguments ?? ["--home", daemonHome, "--sim"]) + ["--socket", socket] + extraArguments,
                                           environment: environment(home: daemonHome, extra: extraEnvironment), scratch: scratch,
                                           wrapper: try daemonUser.wrapper(ambient: capabilities), program: touchstoned)
        daemon = running
        lastDaemonLog = running.stderrPath
        guard running.waitForStderr("listening on", timeout: 30) else {
            throw RigFailure("touchstoned did not start: \(running.stderrSoFar)")
        }
    }

    /// The daemon's log so far.
    var daemonLog: String { daemon?.stderrSoFar ?? "" }
    /// The log file of the daemon last started (it stays after a stop).
    private(set) var lastDaemonLog: String?

    /// Stops the daemon with `signal` and waits for it; its exit status.
    @discardableResult
    func stopDaemon(_ signal: Int32 = SIGTERM) -> Int32? {
        guard let daemon else { return nil }
        daemon.signal(signal)
        let result = daemon.wait(timeout: 30)
        self.daemon = nil
        return result.code
    }

    /// Runs `touchstone --daemon SOCKET arguments` as `user`, with the
    /// passcode (or anything) on stdin.
    @discardableResult
    func run(_ user: TestUser, _ arguments: [String], stdin: [UInt8] = [], timeout: TimeInterval = 120,
             program: String? = nil) -> CLIResult {
        do {
            return try start(user, arguments, stdin: stdin, program: program).wait(timeout: timeout)
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// `program`: another binary than `touchstone` (a copy or link of it).
    func start(_ user: TestUser, _ arguments: [String], stdin: [UInt8] = [], program: String? = nil) throws -> RunningCLI {
        try CLIProcess.start(["--daemon", socket] + arguments, stdin: stdin,
                             environment: environment(home: user.home, extra: ["TOUCHSTONE_HOME": user.home + "/ts"]),
                             scratch: scratch, wrapper: try user.wrapper(), program: program ?? touchstone)
    }

    /// Touches the daemon's simulated reader with finger `id` (as root, from
    /// another process, as a person would).
    @discardableResult
    func touch(_ id: String, count: Int = 1) -> CLIResult {
        do {
            return try CLIProcess.start(["--home", daemonHome, "sim", "touch", id, "--count", "\(count)", "--wait", "60"],
                                        environment: environment(home: daemonHome), scratch: scratch).wait()
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// Runs a command as `user` that waits for a touch, touches with `id`
    /// once it waits, and returns its result.
    func withTouch(_ user: TestUser, _ id: String, _ arguments: [String], stdin: [UInt8] = []) -> CLIResult {
        guard let waiting = try? start(user, arguments, stdin: stdin) else {
            return CLIResult(code: -1, stdout: [], stderr: "cannot start")
        }
        guard waiting.waitForStderr("touch the reader") else { return waiting.wait() }
        let touched = touch(id)
        let result = waiting.wait()
        return touched.code == 0 ? result : CLIResult(code: -1, stdout: result.stdout, stderr: "sim touch: \(touched.stderr)\n" + result.stderr)
    }

    /// Runs `touchstone --daemon SOCKET` as this process's user (root), with
    /// a home of its own under the scratch folder: root's vault in the
    /// daemon, the attacker's user of the tests that speak the protocol by hand.
    func asRoot(_ arguments: [String], stdin: [UInt8] = []) throws -> RunningCLI {
        let home = scratch + "/root-home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        return try CLIProcess.start(["--daemon", socket] + arguments, stdin: stdin,
                                    environment: ["HOME": home, "TOUCHSTONE_HOME": home + "/ts", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"],
                                    scratch: scratch, program: touchstone)
    }

    /// Root's vault in the daemon: its passcode set, `right-index-finger`
    /// enrolled with five touches of simulated finger `id`.
    func setUpRoot(as id: String) throws {
        let set = try asRoot(["passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode)).wait()
        guard set.code == 0 else { throw RigFailure("passcode set as root: \(set.stderr)") }
        let enrolling = try asRoot(["enroll", "right-index-finger", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
        let touches = touch(id, count: 5)
        let enrolled = enrolling.wait()
        guard touches.code == 0, enrolled.code == 0 else { throw RigFailure("enroll as root: \(enrolled.stderr) / \(touches.stderr)") }
    }

    /// Sets `user`'s passcode and enrols `finger` with simulated finger `id`.
    func setUp(_ user: TestUser, finger: String? = nil, as id: String = "") throws {
        let set = run(user, ["passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
        guard set.code == 0 else { throw RigFailure("passcode set as \(user.name): \(set.stderr)") }
        guard let finger else { return }
        try setUpFinger(user, finger, as: id)
    }

    /// Enrols `finger` for `user` with five touches of simulated finger `id`.
    func setUpFinger(_ user: TestUser, _ finger: String, as id: String) throws {
        let enrolling = try start(user, ["enroll", finger, "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
        let touches = touch(id, count: 5)
        let enrolled = enrolling.wait()
        guard touches.code == 0, enrolled.code == 0 else {
            throw RigFailure("enroll as \(user.name): \(enrolled.stderr) / \(touches.stderr)")
        }
    }

    // MARK: - The daemon's clock (debug builds)

    /// The file the daemon reads its clock from (TOUCHSTONE_TEST_CLOCK_FILE,
    /// `TestClockFile`): a test moves time on instead of sleeping through it.
    var clockFile: String { root + "/clock" }

    /// Moves the daemon's clock on by `seconds` (0: makes the file), where
    /// it then stands: no step of the test, however slow, moves it.
    func advanceClock(_ seconds: Double) throws {
        try TestClockFile.advanced(clockFile, by: seconds).write(toFile: clockFile, atomically: true, encoding: .utf8)
        // The daemon's user reads it, whatever this process's umask.
        guard chmod(clockFile, 0o644) == 0 else { throw RigFailure("chmod \(clockFile) failed") }
    }

    // MARK: - The end

    func close() {
        guard !closed else { return }
        closed = true
        stopDaemon()
        asDaemonUser(["--home", daemonHome, "sim", "stop"])
        for user in [daemonUser, alice, bob] { Self.removeUser(user) }
        try? FileManager.default.removeItem(atPath: root)
    }

    deinit {
        guard !closed else { return }
        if let daemon { kill(daemon.pid, SIGKILL) }
        if let text = try? String(contentsOfFile: daemonHome + "/sim/tpm/pid", encoding: .utf8),
           let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGTERM)
        }
        for user in [daemonUser, alice, bob] { Self.removeUser(user) }
        try? FileManager.default.removeItem(atPath: root)
    }
}

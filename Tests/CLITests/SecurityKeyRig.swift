import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneSimulator

/// OpenSSH's own programs (ssh-keygen, ssh, ssh-agent, ssh-add) with
/// Touchstone's security-key provider, through either engine: embedded
/// (the provider opens the simulator's TPM and reader inside ssh-sk-helper)
/// or through touchstoned (the programs run as a fresh user under setpriv,
/// the daemon holds the vault, TPM and reader). The owner's finger is
/// enrolled; `stranger` is a finger nobody enrolled.
final class SecurityKeyRig {
    enum Engine: String, CustomStringConvertible, CaseIterable {
        case embedded, daemon
        var description: String { rawValue }
    }

    static let owner = "alice-right-index"
    static let stranger = "mallory-thumb"

    let engine: Engine
    private var sandbox: CLISandbox?
    /// The daemon's rig (daemon engine only), for tests that speak its protocol by hand.
    private(set) var daemon: DaemonRig?
    /// The user's own folder: key files, messages, signatures.
    let folder: String
    /// The provider library, where the user may load it.
    let provider: String
    /// For the test's own files (root's).
    let scratch: String
    /// Added to every program's environment.
    var extraEnvironment: [String: String] = [:]

    init(_ engine: Engine) throws {
        self.engine = engine
        let built = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().appendingPathComponent("libtouchstone-sk.so").path
        switch engine {
        case .embedded:
            let sandbox = try CLISandbox()
            self.sandbox = sandbox
            folder = sandbox.scratch + "/keys"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            provider = built
            scratch = sandbox.scratch
            guard sandbox.setPasscode().code == 0 else { throw RigFailure("passcode set failed") }
            let enrolled = sandbox.enroll("right-index-finger", as: Self.owner)
            guard enrolled.code == 0 else { throw RigFailure("enroll failed: \(enrolled.stderr)") }
        case .daemon:
            let rig = try DaemonRig()
            daemon = rig
            folder = rig.alice.home
            scratch = rig.scratch
            provider = rig.bin + "/libtouchstone-sk.so"
            guard try Swtpm.run("/bin/cp", [built, provider]) == 0 else { throw RigFailure("cp \(built) failed") }
            chmod(provider, 0o755)
            try rig.setUp(rig.alice, finger: "right-index-finger", as: Self.owner)
        }
    }

    /// What every program gets: the user's home, the engine's variables,
    /// the provider for ssh-keygen.
    var environment: [String: String] {
        var environment = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TSS2_LOG": "all+none", "SSH_SK_PROVIDER": provider]
        switch engine {
        case .embedded:
            environment.merge(sandbox!.environment) { _, sandbox in sandbox }
            environment["HOME"] = folder
            environment["TOUCHSTONE_SIM"] = "1"
        case .daemon:
            let rig = daemon!
            environment["HOME"] = rig.alice.home
            environment["TOUCHSTONE_HOME"] = rig.alice.home + "/ts"
            environment["TOUCHSTONE_DAEMON"] = rig.socket
        }
        return environment.merging(extraEnvironment) { _, extra in extra }
    }

    /// Starts `program` (an absolute path) as the user.
    func start(_ program: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> RunningCLI {
        let wrapper = try daemon.map { try $0.alice.wrapper() } ?? []
        return try CLIProcess.start(arguments, environment: environment.merging(extra) { _, new in new }, scratch: scratch,
                                    wrapper: wrapper, program: program)
    }

    /// Runs `program` to completion as the user.
    func run(_ program: String, _ arguments: [String], environment extra: [String: String] = [:]) -> CLIResult {
        do {
            return try start(program, arguments, environment: extra).wait()
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// `sh -c script` as the user (for a redirection or a folder).
    func shell(_ script: String, _ arguments: [String] = []) -> CLIResult {
        run("/bin/sh", ["-c", script, "sh"] + arguments)
    }

    /// Runs `program`; once `watched` (its own stderr when nil) asks for a
    /// touch, touches the reader with `finger`.
    func runTouching(_ finger: String, _ program: String, _ arguments: [String], watching watched: RunningCLI? = nil) -> CLIResult {
        let asked = Self.touchRequests(watched?.stderrSoFar ?? "")
        let started: RunningCLI
        do {
            started = try start(program, arguments)
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
        let deadline = Date().addingTimeInterval(60)
        var waiting = false
        while Date() < deadline, started.poll() == nil {
            if Self.touchRequests((watched ?? started).stderrSoFar) > asked {
                waiting = true
                break
            }
            usleep(20_000)
        }
        guard waiting else {
            let result = started.wait()
            return CLIResult(code: result.code, stdout: result.stdout, stderr: result.stderr + "\n(no touch was asked for)")
        }
        let touched = touch(finger)
        let result = started.wait()
        return touched.code == 0 ? result : CLIResult(code: -1, stdout: result.stdout, stderr: "sim touch: \(touched.stderr)\n" + result.stderr)
    }

    private static func touchRequests(_ text: String) -> Int { text.components(separatedBy: "touch the reader (").count - 1 }

    /// Touches the simulated reader with `finger`, as a person would.
    @discardableResult
    func touch(_ finger: String, count: Int = 1) -> CLIResult {
        if let daemon { return daemon.touch(finger, count: count) }
        return sandbox!.run(["sim", "touch", finger, "--count", "\(count)", "--wait", "60"])
    }

    /// `touchstone arguments` as the user, through the rig's engine.
    @discardableResult
    func touchstone(_ arguments: [String], stdin: [UInt8] = []) -> CLIResult {
        if let daemon { return daemon.run(daemon.alice, arguments, stdin: stdin) }
        return sandbox!.run(["--sim"] + arguments, stdin: stdin)
    }

    /// Enrols another finger (an enrolment change).
    func enrollAnother(_ finger: String, as id: String) throws {
        if let daemon {
            try daemon.setUpFinger(daemon.alice, finger, as: id)
            return
        }
        let enrolled = sandbox!.enroll(finger, as: id)
        guard enrolled.code == 0 else { throw RigFailure("enroll \(finger): \(enrolled.stderr)") }
    }

    /// Stops and starts what holds the TPM state: the simulator (embedded),
    /// touchstoned (daemon).
    func restart() throws {
        if let daemon {
            daemon.stopDaemon()
            try daemon.startDaemon()
            return
        }
        sandbox!.run(["sim", "stop"])  // fails when swtpm crashed: it is stopped either way
        let started = sandbox!.run(["sim", "start"])
        guard started.code == 0 else { throw RigFailure("sim start: \(started.stderr)") }
    }

    /// The state folder whose simulator holds the TPM (the embedded
    /// engine's, or the daemon's), for the TPM tap.
    var simulatorHome: String { daemon?.daemonHome ?? sandbox!.home }

    /// A tap that kills swtpm at the first `command`; the daemon's user may
    /// connect to it as to swtpm's own socket.
    func tap(_ command: UInt32) throws -> TPMTap {
        let tap = try TPMTap(simulatorHome: simulatorHome, target: command, moment: .afterTPM)
        if daemon != nil { chmod(tap.swtpm.socketPath, 0o777) }
        return tap
    }

    /// After swtpm crashed: the simulator started again (as the daemon's
    /// user, and the daemon with it, through the daemon).
    func restartAfterCrash() throws {
        if let daemon {
            daemon.stopDaemon()
            let started = daemon.asDaemonUser(["--home", daemon.daemonHome, "sim", "start"])
            guard started.code == 0 else { throw RigFailure("sim start as the daemon's user: \(started.stderr)") }
            try daemon.startDaemon()
            return
        }
        try restart()
    }

    // MARK: - ssh-keygen

    /// `ssh-keygen -t ecdsa-sk` into the user's folder as `name` with the
    /// `-O` options given; the public key line.
    func makeKey(_ name: String, _ options: [String] = [], type: String = "ecdsa-sk") throws -> String {
        let made = run("/usr/bin/ssh-keygen", ["-q", "-t", type, "-f", folder + "/" + name, "-N", "", "-w", provider]
                       + options.flatMap { ["-O", $0] })
        guard made.code == 0 else { throw RigFailure("ssh-keygen -t \(type) \(options): \(made.code) \(made.stderr)") }
        return try String(contentsOfFile: folder + "/" + name + ".pub", encoding: .utf8).trimmingCharacters(in: .newlines)
    }

    /// Writes `text` to a file of the user's folder (theirs); its path.
    func file(_ name: String, _ text: String) throws -> String {
        let path = folder + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        if let daemon { chown(path, daemon.alice.uid, daemon.alice.gid) }
        return path
    }

    /// `ssh-keygen -Y sign` of `message` with the key `name`, touched by
    /// `finger`; the signature file's path when one was written.
    func sign(_ message: String, key name: String, touching finger: String) -> (CLIResult, String?) {
        let path = folder + "/" + message
        unlink(path + ".sig")
        let result = runTouching(finger, "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", folder + "/" + name, "-n", "file", path])
        return (result, FileManager.default.fileExists(atPath: path + ".sig") ? path + ".sig" : nil)
    }

    /// `ssh-keygen -Y verify -vv` of the signature: whether it verified,
    /// and the counter and flags it carries (from the verbose output).
    func verify(_ message: String, signature: String, publicKey: String) throws -> (good: Bool, counter: UInt32?, flags: UInt8?, output: String) {
        let allowed = try file("allowed_signers", "owner " + publicKey + "\n")
        let result = shell("exec ssh-keygen -vv -Y verify -f \"$1\" -I owner -n file -s \"$2\" < \"$3\"",
                           [allowed, signature, folder + "/" + message])
        let output = result.stdoutText + result.stderr
        var counter: UInt32?, flags: UInt8?
        if let line = output.split(whereSeparator: \.isNewline).first(where: { $0.contains("signature details: counter = ") }) {
            let parts = line.components(separatedBy: "counter = ").last?.components(separatedBy: ", flags = 0x") ?? []
            if parts.count == 2 {
                counter = UInt32(parts[0].trimmingCharacters(in: .whitespaces))
                flags = UInt8(parts[1].trimmingCharacters(in: .whitespacesAndNewlines), radix: 16)
            }
        }
        return (result.code == 0 && output.contains("Good \"file\" signature"), counter, flags, output)
    }

    /// The `fido list --json` entries.
    func credentials() throws -> [[String: Any]] {
        let listed = touchstone(["fido", "list", "--json"])
        guard listed.code == 0, let entries = try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]] else {
            throw RigFailure("fido list --json: \(listed.code) \(listed.stderr)")
        }
        return entries
    }

    var daemonLog: String { daemon?.daemonLog ?? "" }

    /// A user for sshd's login; `extraConfig` added to sshd_config.
    func sshServer(authorizedKeys: [String], extraConfig: String = "") throws -> SSHServerRig {
        try SSHServerRig(authorizedKey: authorizedKeys.joined(separator: "\n"), extraConfig: extraConfig)
    }

    func close() {
        daemon?.close()
        sandbox?.close()
    }
}

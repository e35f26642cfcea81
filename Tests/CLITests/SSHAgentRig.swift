import Foundation
import Glibc
import TestRigs

/// One test's ssh world: a sandbox (its own swtpm and virtual reader) with
/// the passcode set and finger `alice` enrolled, and `touchstone ssh-agent`
/// serving on a socket in the scratch folder. OpenSSH's programs run with
/// SSH_AUTH_SOCK on it and HOME in the scratch folder (no key of the
/// caller's). `close()` stops the agent by its PID, then the sandbox.
final class SSHAgentRig {
    let sandbox: CLISandbox
    let socket: String
    private(set) var agent: RunningCLI?

    /// The enrolled finger's simulated id, and one that is not enrolled.
    static let owner = "alice-right-index"
    static let stranger = "mallory-thumb"

    /// `imageReader`: the simulator's image reader (synthetic impressions).
    init(enroll: Bool = true, imageReader: Bool = false) throws {
        sandbox = try CLISandbox()
        sandbox.imageReader = imageReader
        socket = sandbox.scratch + "/agent.sock"
        if imageReader, sandbox.run(["sim", "start", "--reader-kind", "image"]).code != 0 {
            throw RigFailure("sim start --reader-kind image failed")
        }
        guard sandbox.setPasscode().code == 0 else { throw RigFailure("passcode set failed") }
        if enroll {
            let enrolled = imageReader ? sandbox.enrollImages("right-index-finger", as: Self.owner)
                : sandbox.enroll("right-index-finger", as: Self.owner)
            guard enrolled.code == 0 else { throw RigFailure("enroll failed: \(enrolled.stderr)") }
        }
        sandbox.extraEnvironment = ["SSH_AUTH_SOCK": socket, "HOME": sandbox.scratch]
        if imageReader { sandbox.extraEnvironment["TOUCHSTONE_TIMEOUT"] = CLISandbox.imageTouchTimeout }
    }

    /// `ssh-key create NAME --access ACCESS`: the public key line.
    func createKey(_ name: String, access: String, comment: String? = nil) throws -> String {
        let result = sandbox.run(["--sim", "ssh-key", "create", name, "--access", access] + (comment.map { ["--comment", $0] } ?? []))
        guard result.code == 0 else { throw RigFailure("ssh-key create \(name): \(result.code) \(result.stderr)") }
        return result.stdoutText.trimmingCharacters(in: .newlines)
    }

    /// Starts the agent and waits until it listens.
    func startAgent() throws {
        let started = try sandbox.start(["--sim", "ssh-agent", "--socket", socket])
        agent = started
        guard started.waitForStderr("listening on") else { throw RigFailure("the agent did not start: \(started.stderrSoFar)") }
    }

    /// Runs `program` (an absolute path) to completion.
    func run(_ program: String, _ arguments: [String], timeout: TimeInterval = 120) -> CLIResult {
        do {
            return try CLIProcess.start(arguments, environment: sandbox.environment, scratch: sandbox.scratch, program: program)
                .wait(timeout: timeout)
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// Runs `program`, which asks the agent for one signature; once the
    /// agent waits for a touch, touches the reader with `finger`.
    func runTouching(_ finger: String, _ program: String, _ arguments: [String]) -> CLIResult {
        sandbox.growFinger(finger)
        let before = touchRequests
        let started: RunningCLI
        do {
            started = try CLIProcess.start(arguments, environment: sandbox.environment, scratch: sandbox.scratch, program: program)
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
        guard waitForTouchRequest(after: before) else {
            let result = started.wait()
            return CLIResult(code: result.code, stdout: result.stdout, stderr: result.stderr + "\n(the agent never asked for a touch)")
        }
        let touch = sandbox.run(["sim", "touch", finger, "--wait", "60"])
        let result = started.wait()
        return touch.code == 0 ? result : CLIResult(code: -1, stdout: result.stdout, stderr: "sim touch: \(touch.stderr)\n" + result.stderr)
    }

    /// How many touches the agent has asked for so far.
    var touchRequests: Int { (agent?.stderrSoFar ?? "").components(separatedBy: "touch the reader (").count - 1 }

    /// Waits (at most a minute) until the agent asks for more touches than `count`.
    func waitForTouchRequest(after count: Int) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if touchRequests > count { return true }
            usleep(20_000)
        }
        return false
    }

    /// Writes `text` to a file in the scratch folder; its path.
    func file(_ name: String, _ text: String) throws -> String {
        let path = sandbox.scratch + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func close() {
        if let agent, agent.poll() == nil {
            agent.signal(SIGTERM)
            _ = agent.wait(timeout: 60)
        }
        sandbox.close()
    }
}

/// Bytes to a Unix socket; back, what came until the peer closed, or one
/// whole agent message (its length, then that many bytes) arrived, or 30 s
/// passed without either; and whether the peer closed (or reset it).
func exchange(_ socket: String, _ bytes: [UInt8]) -> (reply: [UInt8], closed: Bool)? {
    let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { Glibc.close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, byte) in socket.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard connected == 0 else { return nil }
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        if out.count >= 4 {
            let length = out.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            if out.count >= 4 + length { return (out, false) }
        }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        // A peer that closed with bytes of ours unread resets the connection.
        if n == 0 || (n < 0 && errno == ECONNRESET) { return (out, true) }
        if n < 0 { return (out, false) }
        out += buffer[0..<n]
    }
}

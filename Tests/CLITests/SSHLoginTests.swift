import Foundation
import Glibc
import Testing
import TestRigs
import TouchstonePOSIX
import TouchstoneSimulator

/// A real sshd for one test: on 127.0.0.1 and a port of its own, its own
/// config and host key in a fresh folder, a fresh user (useradd) whose
/// authorized_keys holds the given key; stopped by its PID and the user
/// removed at `close()`.
final class SSHServerRig {
    let folder: String
    let user: String
    /// Where it listens (set once it answers).
    private(set) var port = 0
    private var pid: pid_t?

    /// `extraConfig`: lines added to sshd_config (`PubkeyAuthOptions verify-required`).
    let extraConfig: String

    init(authorizedKey: String, extraConfig: String = "") throws {
        self.extraConfig = extraConfig
        folder = try makeTemporaryDirectory("tsh")
        chmod(folder, 0o755)  // sshd reads authorized_keys as the user
        user = "tss\(UInt32.random(in: 10_000...99_999))"
        // A password of "*": no password login, but not a locked account (sshd refuses those without PAM).
        let added = try Swtpm.run(try Confinement.tool("useradd"),
                                  ["--no-create-home", "--home-dir", folder, "--shell", "/bin/sh", "--password", "*", user])
        guard added == 0 else { throw RigFailure("useradd \(user): \(added)") }
        do {
            try (authorizedKey + "\n").write(toFile: folder + "/authorized_keys", atomically: true, encoding: .utf8)
            chmod(folder + "/authorized_keys", 0o644)
            let keygen = try Swtpm.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", folder + "/host_key"],
                                       output: folder + "/keygen.log")
            guard keygen == 0 else { throw RigFailure("ssh-keygen host key: \(keygen)") }
            // The privilege-separation folder sshd insists on.
            mkdir("/run/sshd", 0o755)
            try start()
        } catch {
            close()
            throw error
        }
    }

    /// Starts sshd on a free port (one bound and released first; a port
    /// another process took meanwhile is retried), and waits until it
    /// answers with its banner.
    private func start() throws {
        for _ in 0..<10 {
            let candidate = try Self.freePort()
            let config = """
                Port \(candidate)
                ListenAddress 127.0.0.1
                HostKey \(folder)/host_key
                PidFile \(folder)/sshd.pid
                AuthorizedKeysFile \(folder)/authorized_keys
                AllowUsers \(user)
                StrictModes no
                UsePAM no
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                PubkeyAuthentication yes
                LogLevel VERBOSE
                \(extraConfig)
                """
            try config.write(toFile: folder + "/sshd_config", atomically: true, encoding: .utf8)
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, folder + "/sshd.log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            let started = try ChildSpawn.start("/usr/sbin/sshd", ["-D", "-e", "-f", folder + "/sshd_config"], actions: &actions,
                                               environment: ["PATH": "/usr/sbin:/usr/bin:/bin"], newSession: true)
            pid = started
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                var status: Int32 = 0
                if waitpid(started, &status, WNOHANG) == started { pid = nil; break }  // the port was taken: try another
                // Ours listens (its log says so), not another test's sshd
                // that took the port first while this one was starting.
                if log.contains("Server listening on 127.0.0.1 port \(candidate).") && Self.banner(candidate) {
                    port = candidate
                    return
                }
                usleep(20_000)
            }
            if let running = pid { kill(running, SIGTERM); var s: Int32 = 0; waitpid(running, &s, 0); pid = nil }
        }
        throw RigFailure("sshd did not start: \((try? String(contentsOfFile: folder + "/sshd.log", encoding: .utf8)) ?? "")")
    }

    /// The server's log so far.
    var log: String { (try? String(contentsOfFile: folder + "/sshd.log", encoding: .utf8)) ?? "" }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw RigFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something on 127.0.0.1:port sends an SSH banner.
    private static func banner(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n >= 4 && buffer.starts(with: Array("SSH-".utf8))
    }

    /// The ssh client's arguments for a login that runs `command`: only the
    /// agent's keys (no files, no known hosts, no prompts).
    func sshArguments(_ command: String) -> [String] {
        ["-F", "/dev/null", "-p", String(port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
         "-o", "UserKnownHostsFile=/dev/null", "-o", "PreferredAuthentications=publickey", "-o", "ConnectTimeout=30",
         "-o", "LogLevel=ERROR", "\(user)@127.0.0.1", command]
    }

    func close() {
        if let pid {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            self.pid = nil
        }
        _ = try? Swtpm.run(try Confinement.tool("userdel"), [user])
        try? FileManager.default.removeItem(atPath: folder)
    }
}

@Suite("A login to a real sshd with a TPM key through the agent")
struct SSHLoginTests {
    @Test("ssh to a fresh user on 127.0.0.1: the enrolled finger's touch logs in, a stranger's touch does not")
    func loginNeedsTheOwnersTouch() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig()
            defer { rig.close() }
            let line = try rig.createKey("login", access: "biometry-any", comment: "alice@laptop")
            try rig.startAgent()
            let server = try SSHServerRig(authorizedKey: line)
            defer { server.close() }

            let login = rig.runTouching(SSHAgentRig.owner, "/usr/bin/ssh", server.sshArguments("echo logged-in-as-$(id -un)"))
            #expect(login.code == 0 && login.stdoutText == "logged-in-as-\(server.user)\n", "\(login.stdoutText) \(login.stderr)\n\(server.log)")
            #expect(server.log.contains("Accepted publickey for \(server.user)"), "\(server.log)")

            let refused = rig.runTouching(SSHAgentRig.stranger, "/usr/bin/ssh", server.sshArguments("echo logged-in-as-$(id -un)"))
            #expect(refused.code == 255 && !refused.stdoutText.contains("logged-in") && refused.stderr.contains("Permission denied"),
                    "\(refused.stdoutText) \(refused.stderr)")
            #expect(server.log.components(separatedBy: "Accepted publickey").count == 2, "one login only: \(server.log)")
        }
    }
}

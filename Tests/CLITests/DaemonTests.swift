import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneModel
import TouchstoneSimulator

/// touchstoned for real: a system user runs it (setpriv), two login users
/// run the CLI against it, the simulator's swtpm and virtual reader behind
/// it (DaemonRig).
@Suite("touchstoned", .serialized)
struct DaemonTests {
    static let passcode = DaemonRig.passcode

    @Test("the whole journey through the daemon: passcode, enrolment, items of each kind, a stranger's touch refused, status and list as embedded; the log names the caller and never a secret")
    func journey() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let alice = rig.alice
            try rig.setUp(alice, finger: "right-index-finger", as: "right-index")

            #expect(rig.run(alice, ["add", "mail", "alice", "--access", "passcode"], stdin: Array("pass-secret".utf8)).code == 0)
            #expect(rig.run(alice, ["add", "bank", "alice", "--access", "biometry-current-set"], stdin: Array("touch-secret".utf8)).code == 0)
            #expect(rig.run(alice, ["add", "note", "alice", "--access", "none"], stdin: Array("plain-secret".utf8)).code == 0)

            let byPasscode = rig.run(alice, ["get", "mail", "alice", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
            #expect(byPasscode.code == 0, "\(byPasscode.stderr)")
            #expect(byPasscode.stdoutText == "pass-secret")
            let wrong = rig.run(alice, ["get", "mail", "alice", "--passcode-fd", "0"], stdin: CLISandbox.line("not-it"))
            #expect(wrong.code == 2, "\(wrong.stderr)")
            #expect(wrong.stdout.isEmpty)

            let touched = rig.withTouch(alice, "right-index", ["get", "bank", "alice"])
            #expect(touched.code == 0, "\(touched.stderr)")
            #expect(touched.stdoutText == "touch-secret")
            let stranger = rig.withTouch(alice, "left-thumb", ["get", "bank", "alice"])
            #expect(stranger.code == 2, "\(stranger.stderr)")
            #expect(stranger.stdout.isEmpty)

            let plain = rig.run(alice, ["get", "note", "alice"])
            #expect(plain.stdoutText == "plain-secret", "\(plain.stderr)")
            #expect(rig.run(alice, ["get", "nothing", "here"]).code == 8)

            let list = rig.run(alice, ["--json", "list"])
            #expect(list.code == 0, "\(list.stderr)")
            let items = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [[String: Any]] ?? []
            #expect(Set(items.compactMap { $0["service"] as? String }) == ["mail", "bank", "note"])
            #expect(items.allSatisfy { $0["state"] as? String == "ok" })

            let status = rig.run(alice, ["--json", "status"])
            #expect(status.code == 0, "\(status.stderr)")
            let fields = try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any] ?? [:]
            #expect(fields["passcodeSet"] as? Bool == true)
            #expect(fields["fingers"] as? [String] == ["right-index-finger"])
            #expect(fields["items"] as? Int == 3)

            #expect(rig.stopDaemon(SIGTERM) == 0, "SIGTERM: exit 0")
            let log = (try? String(contentsOfFile: rig.lastDaemonLog ?? "", encoding: .utf8)) ?? ""
            #expect(log.hasSuffix("touchstoned: stopped\n"), "\(log.suffix(200))")
            // The daemon (its own user, no CAP_SYS_PTRACE) names alice's
            // programs by the command name they gave themselves.
            #expect(log.contains("uid \(alice.uid), touchstone-get (pid "), "\(log)")
            #expect(log.split(separator: "\n").contains { $0.contains("touchstone-get (pid ") && $0.contains(", a name it gave itself): get: ok") },
                    "a get ran in touchstone-get, which loads no backend")
            #expect(log.contains("reason: touchstone get: read the secret of bank / alice"))
            for secret in [Self.passcode, "pass-secret", "touch-secret", "plain-secret", "not-it"] {
                #expect(!log.contains(secret), "the daemon's log holds \(secret)")
            }
        }
    }

    @Test("a warm passcode: the right one again opens with the TPM stopped (the daemon kept the key the TPM opened for it) where a change, which needs the TPM, waits for it; a wrong one is still refused; after the change the old one opens nothing and the new one does; ten wrong ones while it is warm throttle it like any other")
    func warmPasscode() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let alice = rig.alice
            try rig.setUp(alice)
            #expect(rig.run(alice, ["add", "mail", "alice", "--access", "passcode"], stdin: Array("pass-secret".utf8)).code == 0)
            func get(_ passcode: String) -> CLIResult {
                rig.run(alice, ["get", "mail", "alice", "--passcode-fd", "0"], stdin: CLISandbox.line(passcode), timeout: 60)
            }
            // The first right passcode goes the whole way: verifier, gate, TPM.
            let first = get(Self.passcode)
            #expect(first.code == 0 && first.stdoutText == "pass-secret", "\(first.stderr)")

            let swtpm = try #require(Int32((try String(contentsOfFile: rig.daemonHome + "/sim/tpm/pid", encoding: .utf8))
                .trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(kill(swtpm, SIGSTOP) == 0)
            var stopped = true
            defer { if stopped { kill(swtpm, SIGCONT) } }

            let warm = get(Self.passcode)
            #expect(warm.code == 0 && warm.stdoutText == "pass-secret", "\(warm.stderr)")
            let wrong = get("not-it")
            #expect(wrong.code == 2 && wrong.stdout.isEmpty, "\(wrong.stderr)")
            // A change seals anew: it waits for the stopped TPM.
            let change = try rig.start(alice, ["passcode", "change", "--passcode-fd", "0"],
                                       stdin: CLISandbox.line(Self.passcode) + CLISandbox.line("another-passcode"))
            usleep(1_500_000)
            #expect(change.poll() == nil, "a passcode change finished with the TPM stopped: \(change.stderrSoFar)")
            kill(swtpm, SIGCONT)
            stopped = false
            let changed = change.wait(timeout: 60)
            #expect(changed.code == 0, "\(changed.stderr)")

            let old = get(Self.passcode)
            #expect(old.code == 2 && old.stdout.isEmpty, "the old passcode, warm before the change, opened: \(old.stdoutText)")
            let new = get("another-passcode")
            #expect(new.code == 0 && new.stdoutText == "pass-secret", "\(new.stderr)")

            // Wrong passcodes while one is warm count as ever: after ten, the
            // warm one is refused too, with when to retry.
            for attempt in 1...10 {
                #expect(get("wrong-\(attempt)").code == 2, "wrong passcode \(attempt)")
            }
            let held = get("another-passcode")
            #expect(held.code == 12 && held.stdout.isEmpty, "\(held.stderr)")
            #expect(held.stderr.contains("touchstoned refuses passcode attempts"), "\(held.stderr)")
        }
    }

    @Test("users are kept apart: bob sees nothing of alice's, his own item of the same name is his; neither can read the daemon's state, which its own user can")
    func usersApart() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let (alice, bob) = (rig.alice, rig.bob)
            try rig.setUp(alice)
            #expect(rig.run(alice, ["add", "mail", "me", "--access", "none"], stdin: Array("alice-secret".utf8)).code == 0)

            let bobsList = rig.run(bob, ["--json", "list"])
            #expect(bobsList.code == 0, "\(bobsList.stderr)")
            #expect(bobsList.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            #expect(rig.run(bob, ["get", "mail", "me"]).code == 8)
            let bobsStatus = rig.run(bob, ["--json", "status"])
            #expect(bobsStatus.stdoutText.contains("\"passcodeSet\":false"), "\(bobsStatus.stdoutText)")

            try rig.setUp(bob)
            #expect(rig.run(bob, ["add", "mail", "me", "--access", "none"], stdin: Array("bob-secret".utf8)).code == 0)
            #expect(rig.run(bob, ["get", "mail", "me"]).stdoutText == "bob-secret")
            #expect(rig.run(alice, ["get", "mail", "me"]).stdoutText == "alice-secret")

            // The state on disk: the daemon's user reads it, the clients do not.
            let vault = rig.daemonHome + "/users/\(alice.uid)"
            let cat = try Confinement.tool("cat"), ls = try Confinement.tool("ls")
            let owner = try runAs(rig.daemonUser, [ls, vault])
            #expect(owner.status == 0 && owner.output.contains("vault.sqlite"), "\(owner.output)")
            for user in [alice, bob] {
                for command in [[ls, rig.daemonHome], [ls, vault], [cat, vault + "/vault.sqlite"]] {
                    let attempt = try runAs(user, command)
                    #expect(attempt.status != 0, "\(user.name) ran \(command.joined(separator: " ")): \(attempt.output)")
                }
            }
        }
    }

    @Test("the daemon killed (SIGKILL) while a client waits for a touch: the client exits 11 naming the socket; restarted, everything opens")
    func killedMidRequest() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let alice = rig.alice
            try rig.setUp(alice, finger: "right-index-finger", as: "right-index")
            #expect(rig.run(alice, ["add", "bank", "alice", "--access", "biometry-current-set"], stdin: Array("touch-secret".utf8)).code == 0)
            #expect(rig.run(alice, ["add", "mail", "alice", "--access", "passcode"], stdin: Array("pass-secret".utf8)).code == 0)

            let waiting = try rig.start(alice, ["get", "bank", "alice"])
            #expect(waiting.waitForStderr("touch the reader"))
            #expect(rig.stopDaemon(SIGKILL) != 0)
            let cut = waiting.wait(timeout: 30)
            #expect(cut.code == 11, "\(cut.stderr)")
            #expect(cut.stderr.contains(rig.socket))
            #expect(cut.stdout.isEmpty)
            let down = rig.run(alice, ["get", "mail", "alice", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
            #expect(down.code == 11, "\(down.stderr)")
            #expect(down.stderr.contains(rig.socket))

            try rig.startDaemon()
            let touched = rig.withTouch(alice, "right-index", ["get", "bank", "alice"])
            #expect(touched.stdoutText == "touch-secret", "\(touched.stderr)\n\(rig.daemonLog)")
            let byPasscode = rig.run(alice, ["get", "mail", "alice", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
            #expect(byPasscode.stdoutText == "pass-secret", "\(byPasscode.stderr)")
            #expect(rig.run(alice, ["list"]).code == 0)
        }
    }

    @Test("garbage, oversized and stalled frames, a flood of idle connections and a client killed mid-request never stop the daemon serving others")
    func garbageAndFloods() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            try rig.startDaemon(extraArguments: ["--timeout", "2"])
            let alice = rig.alice
            try rig.setUp(alice, finger: "right-index-finger", as: "right-index")
            #expect(rig.run(alice, ["add", "note", "alice", "--access", "none"], stdin: Array("plain-secret".utf8)).code == 0)
            #expect(rig.run(alice, ["add", "bank", "alice", "--access", "biometry-current-set"], stdin: Array("touch-secret".utf8)).code == 0)

            // Garbage: the daemon answers with a refusal, or just closes.
            let garbage = try RawConnection(rig.socket)
            garbage.send([0, 0, 0, 12] + Array("hello, world".utf8))
            #expect(garbage.readUntilClosed(seconds: 10).closed)
            // A length beyond the limit: closed at once, nothing read.
            let huge = try RawConnection(rig.socket)
            huge.send([0xff, 0xff, 0xff, 0xff])
            #expect(huge.readUntilClosed(seconds: 10).closed)
            // Half a frame, then silence: closed after the timeout.
            let stalled = try RawConnection(rig.socket)
            stalled.send([0, 0, 1, 0, 1])
            #expect(stalled.readUntilClosed(seconds: 15).closed)
            // A flood from one uid: the daemon keeps a few and refuses the rest.
            var flood: [RawConnection] = []
            for _ in 0..<300 { if let c = try? RawConnection(rig.socket) { flood.append(c) } }
            #expect(flood.count == 300)
            // A client killed while it waits for a touch.
            let abandoned = try rig.start(alice, ["get", "bank", "alice"])
            #expect(abandoned.waitForStderr("touch the reader"))
            abandoned.signal(SIGKILL)
            _ = abandoned.wait()

            // Through all of it, another client is served.
            let plain = rig.run(alice, ["get", "note", "alice"])
            #expect(plain.stdoutText == "plain-secret", "\(plain.stderr)")
            let touched = rig.withTouch(alice, "right-index", ["get", "bank", "alice"])
            #expect(touched.stdoutText == "touch-secret", "\(touched.stderr)")
            let refused = flood.filter { $0.readUntilClosed(seconds: 0.2).closed }.count
            #expect(refused >= 300 - 32, "\(refused) of 300 flooding connections refused")
            // The idle ones the daemon kept are closed after its timeout.
            let kept = flood.filter { !$0.isClosed }
            #expect(kept.allSatisfy { $0.readUntilClosed(seconds: 15).closed })
            #expect(rig.daemon?.poll() == nil, "the daemon exited: \(rig.daemonLog)")
            #expect(rig.daemonLog.contains("too many connections"))
        }
    }

    @Test("a client killed in the middle of an enrolment through the daemon: nothing is enrolled, the reader is free again, and the next enrolment works")
    func enrolmentCutShort() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let alice = rig.alice
            try rig.setUp(alice)
            let enrolling = try rig.start(alice, ["enroll", "right-index-finger", "--passcode-fd", "0"], stdin: CLISandbox.line(DaemonRig.passcode))
            #expect(enrolling.waitForStderr("Enrolling"))
            #expect(rig.touch("alice", count: 2).code == 0)
            #expect(enrolling.waitForStderr("Touch 2 of"), "\(enrolling.stderrSoFar)")
            enrolling.signal(SIGKILL)
            _ = enrolling.wait()
            let fingers = rig.run(alice, ["--json", "fingers"])
            #expect(fingers.code == 0 && fingers.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "[]",
                    "\(fingers.stdoutText) \(fingers.stderr)")
            // The daemon let go of the reader: a whole enrolment now works, and its finger opens.
            try rig.setUpFinger(alice, "left-thumb", as: "alice")
            #expect(rig.run(alice, ["add", "bank", "alice", "--access", "biometry-current-set"], stdin: Array("s".utf8)).code == 0)
            #expect(rig.withTouch(alice, "alice", ["get", "bank", "alice"]).stdoutText == "s")
            #expect(rig.daemon?.poll() == nil, "the daemon still runs")
        }
    }

    @Test("no daemon at the socket: exit 11, the message and hint name it; --embedded still opens this user's own vault")
    func unreachable() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let missing = sandbox.root + "/no-daemon.sock"
            let result = sandbox.run(["--daemon", missing, "list"])
            #expect(result.code == 11, "\(result.stderr)")
            #expect(result.stderr.contains(missing))
            let variable = sandbox.run(["list"], wrapper: [try Confinement.tool("env"), "TOUCHSTONE_DAEMON=\(missing)"])
            #expect(variable.code == 11, "\(variable.stderr)")
            let embedded = sandbox.run(["--sim", "--embedded", "list"], wrapper: [try Confinement.tool("env"), "TOUCHSTONE_DAEMON=\(missing)"])
            #expect(embedded.code == 0, "\(embedded.stderr)")
            #expect(sandbox.run(["--embedded", "--daemon", missing, "list"]).code == 64)
        }
    }

    @Test("a copy of a user's daemon vault, opened in a process of its own with the daemon's TPM, opens nothing (every key needs the daemon's gate); a copy of an embedded vault on the same TPM opens, so the attack is real")
    func copyOpensNothing() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let alice = rig.alice
            try rig.setUp(alice, finger: "right-index-finger", as: "right-index")
            for (service, access) in [("note", "none"), ("mail", "passcode"), ("bank", "biometry-current-set"), ("any", "biometry-any")] {
                #expect(rig.run(alice, ["add", service, "alice", "--access", access], stdin: Array("\(service)-secret".utf8)).code == 0)
            }
            #expect(rig.withTouch(alice, "right-index", ["get", "bank", "alice"]).stdoutText == "bank-secret")
            #expect(rig.run(alice, ["get", "note", "alice"]).stdoutText == "note-secret")

            // The attack: the daemon's files for alice, copied out, and the same TPM.
            let tcti = "swtpm:path=\(rig.daemonHome)/sim/tpm/sock"
            let copy = rig.root + "/copy"
            let cp = try Confinement.tool("cp")
            #expect(try Swtpm.run(cp, ["-a", rig.daemonHome + "/users/\(alice.uid)", copy]) == 0)
            #expect(try Swtpm.run(try Confinement.tool("chown"), ["-R", "\(getuid()):\(getgid())", copy]) == 0)
            let attacker = CLIAttacker(rig: rig, home: copy, tcti: tcti)
            for (service, passcode) in [("note", nil), ("mail", Self.passcode), ("bank", nil), ("any", nil)] as [(String, String?)] {
                let attempt = attacker.run(["get", service, "alice"] + (passcode != nil ? ["--passcode-fd", "0"] : []),
                                           stdin: passcode.map { CLISandbox.line($0) } ?? [])
                #expect(attempt.code != 0 && attempt.stdout.isEmpty, "\(service): \(attempt.stdoutText) \(attempt.stderr)")
                #expect(attempt.stderr.contains("touchstoned's gate"), "\(service): \(attempt.stderr)")
            }

            // The control: an embedded vault on the same TPM, copied the same way, opens.
            let own = rig.root + "/embedded"
            let control = CLIAttacker(rig: rig, home: own, tcti: tcti)
            #expect(control.run(["passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode)).code == 0)
            #expect(control.run(["add", "note", "me", "--access", "none"], stdin: Array("embedded-secret".utf8)).code == 0)
            #expect(try Swtpm.run(cp, ["-a", own, own + "-copy"]) == 0)
            let copied = CLIAttacker(rig: rig, home: own + "-copy", tcti: tcti).run(["get", "note", "me"])
            #expect(copied.stdoutText == "embedded-secret", "\(copied.stderr)")
        }
    }

    @Test("touchstoned's command line: --help and --version exit 0; an unknown option, a relative --home or a bad --timeout exit 64; a state folder others can read is refused")
    func commandLine() async throws {
        try await blockingTest {
            let scratch = try makeTemporaryDirectory("tsc")
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            func run(_ arguments: [String]) throws -> CLIResult {
                try CLIProcess.start(arguments, environment: ["PATH": "/usr/bin:/bin"], scratch: scratch,
                                     program: DaemonRig.daemonBinary).wait(timeout: 30)
            }
            let help = try run(["--help"])
            #expect(help.code == 0 && help.stdoutText.contains("USAGE: touchstoned [--home DIR]") && help.stdoutText.contains("--socket <path>"),
                    "\(help.stderr)")
            #expect(try run(["--version"]).stdoutText.hasPrefix("touchstoned "))
            for bad in [["--frob"], ["--home", "relative"], ["--timeout", "0"], ["--timeout", "x"], ["--socket"]] {
                let refused = try run(bad)
                #expect(refused.code == 64 && refused.stderr.contains("usage: touchstoned"), "\(bad): \(refused.stderr)")
            }
            let open = scratch + "/open"
            try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
            chmod(open, 0o755)
            let refused = try run(["--home", open, "--socket", scratch + "/s.sock"])
            #expect(refused.code == 1 && refused.stderr.contains("readable by others"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: scratch + "/s.sock"))
        }
    }

    /// Runs `command` as `user`; its status and output.
    private func runAs(_ user: TestUser, _ command: [String]) throws -> (status: Int32, output: String) {
        let wrapper = try user.wrapper()
        let out = try makeTemporaryDirectory("tso") + "/out"
        defer { try? FileManager.default.removeItem(atPath: (out as NSString).deletingLastPathComponent) }
        let status = try Swtpm.run(wrapper[0], Array(wrapper.dropFirst()) + command, output: out)
        return (status, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "")
    }
}

/// `touchstone --embedded` on a state folder of the test's choosing and a
/// given TPM, as root: the attacker's own process.
struct CLIAttacker {
    let rig: DaemonRig
    let home: String
    let tcti: String

    func run(_ arguments: [String], stdin: [UInt8] = []) -> CLIResult {
        do {
            return try CLIProcess.start(["--embedded", "--home", home, "--tpm", tcti] + arguments, stdin: stdin,
                                        environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                                                      "TSS2_LOG": "all+none", "HOME": home],
                                        scratch: rig.scratch).wait()
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }
}

/// A raw connection to the daemon's socket, for sending what no client would.
final class RawConnection {
    let fd: Int32
    private(set) var isClosed = false

    init(_ path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let rc = withUnixSocketAddress(path) { connect(fd, $0, $1) } ?? -1
        guard rc == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            // Thrown before `self.fd` is set, so deinit does not run and
            // close the number again: by then another test's descriptor
            // (a pseudo-terminal's master, in the whole suite) may have it.
            throw RigFailure("connect \(path): \(why)")
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the daemon closes the connection or `seconds` pass.
    func readUntilClosed(seconds: Double) -> (closed: Bool, bytes: [UInt8]) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !isClosed {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { break }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { isClosed = true } else { received += buffer[0..<n] }
        }
        return (isClosed, received)
    }
}

@Suite("touchstone sim start --daemon")
struct SimulatorDaemonTests {
    @Test("sim start --daemon: --sim commands go through the simulator's touchstoned, --embedded does not; killed, --sim is exit 11 with the hint to start it; sim stop stops it and --sim is embedded again")
    func simulatorDaemon() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let started = sandbox.run(["sim", "start", "--daemon"])
            #expect(started.code == 0, "\(started.stderr)")
            #expect(started.stderr.contains("touchstoned started"))
            let status = sandbox.run(["--json", "sim", "status"])
            let fields = try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any] ?? [:]
            let pid = try #require(fields["daemon"] as? Int, "\(status.stdoutText)")
            #expect(fields["daemonSocket"] as? String == sandbox.home + "/sim/daemon.sock")

            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.run(["--sim", "add", "svc", "acct", "--access", "none"], stdin: Array("via-daemon".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "get", "svc", "acct"]).stdoutText == "via-daemon")
            let log = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(log.contains("add: ok") && log.contains("get: ok"), "\(log)")
            // The daemon's vault is its own: the embedded one in the same folder has no such item.
            #expect(sandbox.run(["--sim", "--embedded", "get", "svc", "acct"]).code == 8)
            #expect(FileManager.default.fileExists(atPath: sandbox.home + "/users/\(getuid())/vault.sqlite"))

            kill(pid_t(pid), SIGKILL)
            var waited = 0
            while kill(pid_t(pid), 0) == 0, waited < 200 { usleep(10_000); waited += 1 }
            let gone = sandbox.run(["--sim", "list"])
            #expect(gone.code == 11, "\(gone.stderr)")
            #expect(gone.stderr.contains("sim start --daemon"))
            #expect(sandbox.run(["sim", "start", "--daemon"]).code == 0)
            #expect(sandbox.run(["--sim", "get", "svc", "acct"]).stdoutText == "via-daemon")

            let stopped = sandbox.run(["sim", "stop"])
            #expect(stopped.stderr.contains("touchstoned stopped"), "\(stopped.stderr)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.home + "/sim/daemon.sock"))
            #expect(sandbox.run(["sim", "start"]).code == 0)
            #expect(sandbox.run(["--sim", "get", "svc", "acct"]).code == 8, "embedded again: the daemon's item is not here")
        }
    }
}

@Suite("touchstoned's passcode throttle", .serialized)
struct DaemonThrottleTests {
    static let passcode = DaemonRig.passcode

    @Test("10 wrong passcodes in a row, then every attempt (the right one too) is refused with exit 12 and when to retry; the TPM saw none of them; a TPM DA reset and a daemon restart change nothing; another user is not held; after the wait the right one opens, and a wrong one then doubles the wait")
    func throttle() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            // The daemon's clock (debug builds): moved on by the test instead of slept through.
            let clock = rig.clockFile
            func advance(_ seconds: Double) throws { try rig.advanceClock(seconds) }
            try advance(0)
            let environment = ["TOUCHSTONE_TEST_CLOCK_FILE": clock]
            try rig.startDaemon(extraEnvironment: environment)
            let (alice, bob) = (rig.alice, rig.bob)
            try rig.setUp(alice)
            try rig.setUp(bob)
            for user in [alice, bob] {
                #expect(rig.run(user, ["add", "mail", "me", "--access", "passcode"], stdin: Array("\(user.name)-secret".utf8)).code == 0)
            }
            func get(_ user: TestUser, _ passcode: String) -> CLIResult {
                rig.run(user, ["get", "mail", "me", "--passcode-fd", "0"], stdin: CLISandbox.line(passcode))
            }
            func retryAfter(_ result: CLIResult) -> Double {
                // "... try again in N s"
                result.stderr.components(separatedBy: "try again in ").last.flatMap { Double($0.split(separator: " ").first ?? "") } ?? 0
            }
            #expect(get(alice, Self.passcode).stdoutText == "\(alice.name)-secret")
            for n in 1...10 {
                let wrong = get(alice, "wrong-\(n)")
                #expect(wrong.code == 2, "try \(n): \(wrong.stderr)")
            }
            let held = get(alice, Self.passcode)
            #expect(held.code == 12, "\(held.stderr)")
            #expect(held.stderr.contains("touchstoned refuses passcode attempts"))
            #expect(retryAfter(held) > 0 && retryAfter(held) <= 60, "\(held.stderr)")
            #expect(held.stdout.isEmpty)
            let change = rig.run(alice, ["passcode", "change", "--passcode-fd", "0"],
                                 stdin: CLISandbox.line(Self.passcode) + CLISandbox.line("another"))
            #expect(change.code == 12, "\(change.stderr)")

            // The TPM's dictionary-attack counter, which every user shares, saw none of them.
            let status = rig.run(bob, ["--json", "status"])
            let tpm = (try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any])?["tpm"] as? [String: Any]
            #expect(tpm?["failedTries"] as? Int == 0, "\(status.stdoutText)")
            #expect(get(bob, Self.passcode).stdoutText == "\(bob.name)-secret", "bob is not held by alice's tries")

            // A DA reset (the lockout authorization is empty) and a restart: still held.
            let reset = try Swtpm.run(try Confinement.tool("tpm2_dictionarylockout"), ["--clear-lockout"],
                                      environment: ["TPM2TOOLS_TCTI": "swtpm:path=\(rig.daemonHome)/sim/tpm/sock", "PATH": "/usr/bin:/bin"])
            #expect(reset == 0)
            #expect(get(alice, Self.passcode).code == 12)
            rig.stopDaemon()
            try rig.startDaemon(extraEnvironment: environment)
            #expect(get(alice, Self.passcode).code == 12, "the count survives a restart")

            // After the wait: one more wrong try doubles it; after that, the right one opens and clears the count.
            try advance(61)
            #expect(get(alice, "wrong-11").code == 2)
            let doubled = get(alice, Self.passcode)
            #expect(doubled.code == 12)
            #expect(retryAfter(doubled) > 60, "\(doubled.stderr)")
            try advance(121)
            #expect(get(alice, Self.passcode).stdoutText == "\(alice.name)-secret")
            #expect(get(alice, "wrong-again").code == 2)
            #expect(get(alice, Self.passcode).code == 0, "a right passcode cleared the count: one wrong try does not hold")
        }
    }
}

@Suite("touchstone import: an embedded vault moved into the daemon")
struct DaemonImportTests {
    static let passcode = CLISandbox.passcode

    @Test("import: a wrong passcode moves nothing; the right one moves the passcode, both fingers and every item that opens, with its attributes and access control, the invalidated one listed and left; the embedded vault then lists and opens and refuses changes; a second import is refused")
    func importEmbeddedVault() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "old", "a", "--access", "biometry-current-set"], stdin: Array("s-old".utf8)).code == 0)
            #expect(sandbox.enroll("left-thumb", as: "alice-thumb").code == 0)
            for access in ["none", "passcode", "biometry-current-set", "biometry-any", "user-presence"] {
                #expect(sandbox.run(["--sim", "add", access, "a", "--access", access, "--label", "L-\(access)", "--comment", "C"],
                                    stdin: Array("s-\(access)".utf8)).code == 0)
            }
            let before = try Self.list(sandbox, ["--sim", "--embedded"])
            #expect(before.count == 6)

            #expect(sandbox.run(["--sim", "import", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode)).code == 1,
                    "no daemon chosen yet")
            #expect(sandbox.run(["sim", "start", "--daemon"]).code == 0)
            let wrong = sandbox.run(["--sim", "import", "--passcode-fd", "0"], stdin: CLISandbox.line("not-it"))
            #expect(wrong.code == 2, "\(wrong.stderr)")
            #expect(try Self.list(sandbox, ["--sim"]).isEmpty, "a wrong passcode moved nothing")

            let imported = sandbox.run(["--sim", "import", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
            #expect(imported.code == 0, "\(imported.stderr)")
            #expect(imported.stderr.contains("imported 5 item(s) and 2 finger(s)"), "\(imported.stderr)")
            #expect(imported.stderr.contains("left out (invalidated): old / a"))

            // In the daemon: the same items (less the invalidated one), attributes and dates as they were.
            let after = try Self.list(sandbox, ["--sim"])
            let kept = before.filter { $0["service"] as? String != "old" }
            #expect(after.count == kept.count)
            for item in kept {
                let service = item["service"] as? String
                let moved = after.first { $0["service"] as? String == service }
                for key in ["account", "access", "label", "comment", "created", "modified", "state"] {
                    #expect("\(moved?[key] ?? "missing")" == "\(item[key] ?? "missing")", "\(service ?? "?"): \(key)")
                }
            }
            #expect(sandbox.run(["--sim", "get", "none", "a"]).stdoutText == "s-none")
            #expect(sandbox.run(["--sim", "get", "passcode", "a", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode)).stdoutText == "s-passcode")
            #expect(sandbox.withTouch("alice", ["--sim", "get", "biometry-current-set", "a"]).stdoutText == "s-biometry-current-set")
            #expect(sandbox.withTouch("alice-thumb", ["--sim", "get", "biometry-any", "a"]).stdoutText == "s-biometry-any")
            #expect(sandbox.withTouch("stranger", ["--sim", "get", "biometry-current-set", "a"]).code == 2)
            #expect(sandbox.run(["--sim", "fingers"]).stdoutText.contains("left-thumb"))

            // The embedded vault: lists and opens, changes nothing.
            #expect(try Self.list(sandbox, ["--sim", "--embedded"]).count == 6)
            #expect(sandbox.run(["--sim", "--embedded", "get", "none", "a"]).stdoutText == "s-none")
            let change = sandbox.run(["--sim", "--embedded", "add", "new", "a", "--access", "none"], stdin: Array("x".utf8))
            #expect(change.code == 1 && change.stderr.contains("moved into touchstoned"), "\(change.stderr)")
            let again = sandbox.run(["--sim", "import", "--passcode-fd", "0"], stdin: CLISandbox.line(Self.passcode))
            #expect(again.code == 1 && again.stderr.contains("already holds a vault"), "\(again.stderr)")
        }
    }

    static func list(_ sandbox: CLISandbox, _ options: [String]) throws -> [[String: Any]] {
        let result = sandbox.run(options + ["--json", "list"])
        guard result.code == 0 else { throw RigFailure("list: \(result.stderr)") }
        return try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [[String: Any]] ?? []
    }
}

@Suite("The same commands through the daemon as embedded")
struct DaemonEquivalenceTests {
    /// One step of the script: arguments (after `--sim`), stdin.
    typealias Step = (arguments: [String], stdin: [UInt8])

    static let passcode = CLISandbox.passcode
    static let script: [Step] = [
        (["status"], []),
        (["get", "nothing", "here"], []),
        (["passcode", "set", "--passcode-fd", "0"], CLISandbox.line(passcode) + CLISandbox.line(passcode)),
        (["passcode", "set", "--passcode-fd", "0"], CLISandbox.line(passcode) + CLISandbox.line(passcode)),
        (["add", "mail", "me", "--access", "passcode", "--label", "Mail"], Array("mail-secret".utf8)),
        (["add", "mail", "me", "--access", "passcode"], Array("again".utf8)),
        (["add", "note", "me", "--access", "none", "--comment", "a note"], Array("note-secret".utf8)),
        (["add", "bad", "me", "--access", "nonsense"], Array("x".utf8)),
        (["add", "empty", "me", "--access", "none"], []),
        (["get", "mail", "me", "--passcode-fd", "0"], CLISandbox.line(passcode)),
        (["get", "mail", "me", "--passcode-fd", "0"], CLISandbox.line("wrong")),
        (["get", "mail", "me"], []),
        (["get", "note", "me"], []),
        (["update", "note", "me"], Array("new-note".utf8)),
        (["get", "note", "me"], []),
        (["--json", "list"], []),
        (["list", "--service", "mail"], []),
        (["--json", "fingers"], []),
        (["fingers"], []),
        (["unenroll", "left-thumb", "--passcode-fd", "0"], CLISandbox.line(passcode)),
        (["delete", "note", "me"], []),
        (["delete", "note", "me"], []),
        (["verify", "--allow-passcode", "--passcode-fd", "0"], CLISandbox.line(passcode)),
        (["passcode", "change", "--passcode-fd", "0"], CLISandbox.line("wrong") + CLISandbox.line("x") + CLISandbox.line("x")),
        (["--json", "status"], []),
    ]

    @Test("a script of commands (errors included) gives the same exit codes, stdout and stderr through the simulator's daemon as embedded, dates and state folders aside")
    func sameOutput() async throws {
        try await blockingTest {
            let embedded = try CLISandbox()
            defer { embedded.close() }
            let daemon = try CLISandbox()
            defer { daemon.close() }
            #expect(daemon.run(["sim", "start", "--daemon"]).code == 0)
            for (n, step) in Self.script.enumerated() {
                let a = embedded.run(["--sim", "--embedded"] + step.arguments, stdin: step.stdin)
                let b = daemon.run(["--sim"] + step.arguments, stdin: step.stdin)
                let what = "step \(n): \(step.arguments.joined(separator: " "))"
                #expect(a.code == b.code, "\(what): exit \(a.code) embedded, \(b.code) through the daemon\n\(a.stderr)\n\(b.stderr)")
                #expect(Self.normalized(a.stdoutText, embedded) == Self.normalized(b.stdoutText, daemon), "\(what): stdout")
                #expect(Self.normalized(a.stderr, embedded) == Self.normalized(b.stderr, daemon), "\(what): stderr")
            }
            let log = (try? String(contentsOfFile: daemon.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(log.contains("get: ok") && log.contains("update: ok"), "the daemon did the work")
        }
    }

    /// Dates, the state folder (the daemon's is `users/UID` under it) and
    /// the TPM's failure count (the embedded vault's wrong passcode counts
    /// there, the daemon's verifier stops it before) made comparable.
    static func normalized(_ text: String, _ sandbox: CLISandbox) -> String {
        var out = text.replacingOccurrences(of: sandbox.home + "/users/\(getuid())", with: "HOME")
            .replacingOccurrences(of: sandbox.home, with: "HOME")
        for pattern in [#"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"#, #""failedTries":\d+"#, #"\d+ failed attempts? in a row"#] {
            out = out.replacingOccurrences(of: pattern, with: "<x>", options: .regularExpression)
        }
        return out
    }
}

import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneDBus
import TouchstoneTPM
import TouchstoneSimulator
import TouchstoneModel

/// `touchstone doctor` against the real parts it looks at: the simulator,
/// its touchstoned, a private session bus with Touchstone's provider or
/// another owner, Touchstone's ssh-agent and OpenSSH's, a TPM that is not
/// there. Each problem is checked beside the state that is right.
@Suite("touchstone doctor")
struct DoctorTests {
    /// One line of `doctor --json`.
    struct Finding: Decodable, Equatable {
        let check: String
        let state: String
        let detail: String
        let fix: String?
    }

    static let names = ["reader", "tpm", "daemon", "secret-service", "ssh-agent", "vault"]

    /// `doctor --json` with `arguments` before it: its exit code and its
    /// findings by check.
    static func doctor(_ sandbox: CLISandbox, _ arguments: [String] = ["--sim"]) throws -> (code: Int32, findings: [String: Finding]) {
        let result = sandbox.run(arguments + ["doctor", "--json"])
        let list = try JSONDecoder().decode([Finding].self, from: Data(result.stdout))
        #expect(list.map(\.check) == names, "every check, in order: \(result.stdoutText)")
        return (result.code, Dictionary(uniqueKeysWithValues: list.map { ($0.check, $0) }))
    }

    @Test("on the simulator with a passcode and a finger: every check ok or not used, one line each, exit 0; without a passcode the vault is a problem naming 'passcode set', exit 1; while an enrolment has the reader, the reader is busy, its holder named")
    func simulator() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let bare = sandbox.run(["--sim", "doctor"])
            #expect(bare.code == 1, "\(bare.stdoutText) \(bare.stderr)")
            #expect(bare.stdoutText.contains("vault: problem: no passcode set") && bare.stdoutText.contains("\n  fix: touchstone --sim passcode set\n"),
                    "\(bare.stdoutText)")
            #expect(bare.stderr.contains("touchstone: error: 1 check found a problem: vault"), "\(bare.stderr)")

            #expect(sandbox.setPasscode().code == 0)
            // While an enrolment has the simulated reader: busy, the holder named.
            let enrolling = try sandbox.start(["--sim", "enroll", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode))
            var held: Finding?
            #expect(blockingEventually {
                held = try? Self.doctor(sandbox).findings["reader"]
                return held?.state == "problem"
            }, "\(String(describing: held))")
            #expect(held?.detail.contains("busy: another touchstone process has it open") == true
                    && held?.detail.contains("touchstone-cli, pid \(enrolling.pid)") == true, "\(String(describing: held))")
            #expect(sandbox.run(["sim", "touch", "alice", "--count", "5", "--wait", "60"]).code == 0)
            #expect(enrolling.wait().code == 0)
            let healthy = sandbox.run(["--sim", "doctor"])
            #expect(healthy.code == 0, "\(healthy.stdoutText) \(healthy.stderr)")
            let lines = healthy.stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.map { $0.prefix { $0 != ":" } } == Self.names.map { Substring($0) }, "one line per check: \(lines)")
            #expect(lines[0].hasPrefix("reader: ok: Virtual device"), "\(lines[0])")
            #expect(lines[1].hasPrefix("tpm: ok: reachable through swtpm:path="), "\(lines[1])")
            #expect(lines[2].hasPrefix("daemon: not used: embedded"), "\(lines[2])")
            #expect(lines[3].hasPrefix("secret-service: not used: no session bus"), "\(lines[3])")
            #expect(lines[4].hasPrefix("ssh-agent: not used:"), "\(lines[4])")
            #expect(lines[5].hasPrefix("vault: ok: passcode set; fingers: right-index-finger"), "\(lines[5])")
            #expect(healthy.stderr.isEmpty, "\(healthy.stderr)")

            let (code, findings) = try Self.doctor(sandbox)
            #expect(code == 0)
            #expect(findings.values.allSatisfy { ($0.state == "ok" || $0.state == "not used") && $0.fix == nil }, "\(findings)")
        }
    }

    @Test("through the simulator's touchstoned (--daemon SOCKET): daemon ok; killed by PID: the daemon is a problem whose fix is 'touchstone sim start --daemon', exit 1; after the fix, ok again")
    func daemon() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            #expect(sandbox.run(["sim", "start", "--daemon"]).code == 0)
            let socket = sandbox.home + "/sim/daemon.sock"
            let options = ["--sim", "--daemon", socket]
            let answering = try Self.doctor(sandbox, options).findings
            #expect(answering["daemon"]?.state == "ok" && answering["daemon"]?.detail.contains("touchstoned answers at \(socket)") == true,
                    "\(String(describing: answering["daemon"]))")
            #expect(answering["tpm"]?.state == "ok" && answering["tpm"]?.detail.hasPrefix("touchstoned's") == true)

            let pidText = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.pid", encoding: .utf8)) ?? ""
            let pid = try #require(Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
            kill(pid, SIGKILL)
            #expect(blockingEventually { kill(pid, 0) != 0 })
            let (code, gone) = try Self.doctor(sandbox, options)
            #expect(code == 1)
            let daemon = try #require(gone["daemon"])
            #expect(daemon.state == "problem" && daemon.detail.contains("nothing answers at \(socket)"), "\(daemon)")
            #expect(daemon.fix == "touchstone sim start --daemon", "\(daemon)")
            #expect(gone["vault"]?.state == "problem" && gone["vault"]?.detail.contains("not known") == true, "what only the daemon knows is not known")

            #expect(sandbox.run(["sim", "start", "--daemon"]).code == 0, "the fix, as given")
            #expect(try Self.doctor(sandbox, options).findings["daemon"]?.state == "ok")
        }
    }

    @Test("client settings engine=daemon with no system daemon: the daemon is a problem (no socket at /run/touchstone/socket); with --embedded too, the fix is to leave it out; without the settings, embedded is 'not used'")
    func clientSettings() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let options = ["--tpm", "swtpm:path=\(sandbox.home)/sim/tpm/sock", "--reader", "sim"]
            #expect(try Self.doctor(sandbox, options).findings["daemon"]?.state == "not used")
            let conf = sandbox.scratch + "/client.conf"
            try "engine=daemon\n".write(toFile: conf, atomically: true, encoding: .utf8)
            sandbox.extraEnvironment["TOUCHSTONE_TEST_CLIENT_CONF"] = conf
            let required = try #require(try Self.doctor(sandbox, options).findings["daemon"])
            #expect(required.state == "problem" && required.detail.contains("no socket at /run/touchstone/socket")
                    && required.detail.contains("says engine=daemon"), "\(required)")
            #expect(required.fix?.contains("touchstoned") == true, "\(required)")
            let embedded = try #require(try Self.doctor(sandbox, options + ["--embedded"]).findings["daemon"])
            #expect(embedded.state == "problem" && embedded.fix?.hasPrefix("leave out --embedded") == true, "\(embedded)")
        }
    }

    @Test("Secret Service on a private bus: nobody is 'not used'; Touchstone's provider ok, named; the test's own connection and gnome-keyring-daemon are problems naming their program and the fix; an installed activation file makes nobody ok, a broken one a problem")
    func secretService() async throws {
        try await SecretServiceRig.with { rig in
            rig.sandbox.extraEnvironment["XDG_DATA_HOME"] = rig.sandbox.scratch + "/data"
            rig.sandbox.extraEnvironment["XDG_CONFIG_HOME"] = rig.sandbox.scratch + "/config"
            let finding = { () async throws -> Finding in
                try await offPool { try #require(try Self.doctor(rig.sandbox).findings["secret-service"]) }
            }
            let nobody = try await finding()
            #expect(nobody.state == "not used" && nobody.detail.contains("nobody owns org.freedesktop.secrets"), "\(nobody)")

            let provider = try await rig.startProvider()
            let served = try await finding()
            #expect(served.state == "ok" && served.detail.contains("Touchstone's provider owns org.freedesktop.secrets")
                    && served.detail.contains("touchstone-cli") && served.detail.contains("pid \(provider.pid)"), "\(served)")
            #expect(await rig.stopProvider()?.code == 0)

            let own = try await DBusBus(address: rig.bus.address)
            #expect(try await own.requestName("org.freedesktop.secrets", replace: false) == .owned)
            let taken = try await finding()
            #expect(taken.state == "problem" && taken.detail.contains("is owned by") && taken.detail.contains("pid \(getpid())")
                    && taken.detail.contains(own.uniqueName), "\(taken)")
            #expect(taken.fix?.contains("touchstone secret-service") == true && taken.fix?.contains("kill \(getpid())") == true, "\(String(describing: taken.fix))")
            await own.close()

            let keyring = try await offPool { try GnomeKeyring(rig: rig) }
            let gnome = try await finding()
            try await offPool { keyring.stop() }
            #expect(gnome.state == "problem" && gnome.detail.contains("gnome-keyring-daemon"), "\(gnome)")
            #expect(gnome.fix?.contains("touchstone import --from-secret-service") == true
                    && gnome.fix?.contains("scripts/install-secret-service --replace-gnome-keyring") == true, "\(String(describing: gnome.fix))")

            let activation = rig.sandbox.scratch + "/data/dbus-1/services/org.freedesktop.secrets.service"
            #expect(await rig.run(Self.installer, ["--touchstone", CLIProcess.binary]).code == 0)
            let activated = try await finding()
            #expect(activated.state == "ok" && activated.detail.contains("D-Bus starts Touchstone's provider (\(CLIProcess.binary) secret-service)")
                    && activated.detail.contains(activation), "\(activated)")
            #expect(await rig.run(Self.installer, ["--touchstone", rig.sandbox.scratch + "/gone/touchstone"]).code == 0)
            let broken = try await finding()
            #expect(broken.state == "problem" && broken.detail.contains("no such program")
                    && broken.fix?.hasPrefix("scripts/install-secret-service") == true, "\(broken)")
        }
    }

    @Test("fprintd (a private bus as the system bus, its name owned by this test): a real reader's check names it as the program that holds the reader for logins, found or not; nobody on the name, or the simulated reader, and fprintd is not mentioned")
    func fprintd() async throws {
        try await SecretServiceRig.with { rig in
            rig.sandbox.extraEnvironment["DBUS_SYSTEM_BUS_ADDRESS"] = rig.bus.address
            // A real reader as libfprint lists one: its virtual reader, enabled
            // by its variable, found by --reader auto (listed, never opened).
            rig.sandbox.extraEnvironment["FP_VIRTUAL_DEVICE"] = rig.sandbox.scratch + "/virtual-reader"
            let finding = { (arguments: [String]) async throws -> Finding in
                try await offPool { try #require(try Self.doctor(rig.sandbox, arguments).findings["reader"]) }
            }
            let alone = try await finding(["--sim", "--reader", "auto"])
            #expect(alone.state == "ok" && alone.detail.contains("(virtual_device/0), found") && !alone.detail.contains("fprintd"), "\(alone)")

            let own = try await DBusBus(address: rig.bus.address)
            #expect(try await own.requestName("net.reactivated.Fprint", replace: false) == .owned)
            let held = try await finding(["--sim", "--reader", "auto"])
            #expect(held.state == "ok" && held.detail.contains("(virtual_device/0), found; fprintd runs (")
                    && held.detail.contains("pid \(getpid())")
                    && held.detail.hasSuffix("and holds the reader while a login or lock-screen prompt asks for a finger"), "\(held)")

            rig.sandbox.extraEnvironment["FP_VIRTUAL_DEVICE"] = nil
            let none = try await finding(["--sim", "--reader", "auto"])
            #expect(none.state == "problem" && none.detail.hasPrefix("no fingerprint reader found; fprintd runs (")
                    && none.detail.contains("pid \(getpid())") && none.fix?.hasPrefix("plug in a reader that libfprint supports") == true, "\(none)")

            // The simulated reader is only ever touchstone's.
            let simulated = try await finding(["--sim"])
            #expect(!simulated.detail.contains("fprintd"), "\(simulated)")
            await own.close()
        }
    }

    static let installer = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/install-secret-service").path

    @Test("ssh-agent: no keys and no agent is 'not used'; a key and no agent a problem whose fix starts it; Touchstone's agent answering with SSH_AUTH_SOCK on it ok; SSH_AUTH_SOCK on OpenSSH's agent, or on the default socket after the agent stopped, problems with their fix")
    func sshAgent() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let runtime = sandbox.scratch + "/run"
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            sandbox.extraEnvironment["XDG_RUNTIME_DIR"] = runtime
            let socket = runtime + "/touchstone/ssh-agent.sock"
            let agentFinding = { () throws -> Finding in try #require(try Self.doctor(sandbox).findings["ssh-agent"]) }

            let unused = try agentFinding()
            #expect(unused.state == "not used" && unused.detail.contains("no agent on \(socket)") && unused.detail.contains("no ssh key"), "\(unused)")
            #expect(sandbox.run(["--sim", "ssh-key", "create", "laptop", "--access", "none"]).code == 0)
            let unserved = try agentFinding()
            #expect(unserved.state == "problem" && unserved.detail.contains("1 key that nothing serves"), "\(unserved)")
            #expect(unserved.fix?.hasPrefix("touchstone --sim ssh-agent &") == true, "\(String(describing: unserved.fix))")

            let agent = try sandbox.start(["--sim", "ssh-agent"])
            defer { if agent.poll() == nil { agent.signal(SIGTERM); _ = agent.wait(timeout: 30) } }
            #expect(agent.waitForStderr("listening on \(socket)"), "\(agent.stderrSoFar)")
            let unset = try agentFinding()
            #expect(unset.state == "problem" && unset.detail.contains("SSH_AUTH_SOCK is not set"), "\(unset)")
            #expect(unset.fix?.hasPrefix("export SSH_AUTH_SOCK=\"$XDG_RUNTIME_DIR/touchstone/ssh-agent.sock\"") == true, "\(String(describing: unset.fix))")

            // OpenSSH's own agent on SSH_AUTH_SOCK: named by its program.
            let openSSHSocket = sandbox.scratch + "/openssh.sock"
            let openSSH = try CLIProcess.start(["-D", "-a", openSSHSocket], environment: sandbox.environment, scratch: sandbox.scratch,
                                               program: "/usr/bin/ssh-agent")
            defer { openSSH.signal(SIGTERM); _ = openSSH.wait(timeout: 30) }
            #expect(blockingEventually { unixSocketAccepts(openSSHSocket) })
            sandbox.extraEnvironment["SSH_AUTH_SOCK"] = openSSHSocket
            let elsewhere = try agentFinding()
            #expect(elsewhere.state == "problem" && elsewhere.detail.contains("SSH_AUTH_SOCK points at \(openSSHSocket) (/usr/bin/ssh-agent"), "\(elsewhere)")

            sandbox.extraEnvironment["SSH_AUTH_SOCK"] = socket
            let served = try agentFinding()
            #expect(served.state == "ok" && served.detail.contains("Touchstone's agent answers on \(socket)")
                    && served.detail.contains("touchstone-cli") && served.detail.contains("1 key"), "\(served)")

            agent.signal(SIGTERM)
            #expect(agent.wait(timeout: 30).code == 0)
            let stopped = try agentFinding()
            #expect(stopped.state == "problem" && stopped.detail.contains("SSH_AUTH_SOCK points at \(socket), and there is no socket"), "\(stopped)")
            #expect(stopped.fix?.hasPrefix("touchstone --sim ssh-agent &") == true, "\(String(describing: stopped.fix))")
        }
    }

    @Test("the TPM: the simulator's by TCTI ok; in dictionary-attack lockout after wrong passcodes a problem whose fix (tpm2_dictionarylockout) makes it ok again; a swtpm TCTI or a device TCTI that points nowhere, and the simulator stopped, are problems with their fix")
    func tpm() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let tpmFinding = { (options: [String]) throws -> Finding in try #require(try Self.doctor(sandbox, options).findings["tpm"]) }
            let reached = try tpmFinding(["--tpm", "swtpm:path=\(sandbox.home)/sim/tpm/sock", "--reader", "sim"])
            #expect(reached.state == "ok" && reached.detail.contains("not in dictionary-attack lockout"), "\(reached)")

            // Wrong passcodes until the TPM locks out (two tries, to keep it short).
            #expect(sandbox.setPasscode().code == 0)
            do {
                let tpm = try TPM(tcti: "swtpm:path=\(sandbox.home)/sim/tpm/sock")
                try tpm.setDictionaryAttackParameters(maxTries: 2, recoveryTime: 600, lockoutRecovery: 600)
            }
            let change = ["--sim", "passcode", "change", "--passcode-fd", "0"]
            for _ in 0..<2 { #expect(sandbox.run(change, stdin: CLISandbox.line("wrong") + CLISandbox.line("new")).code == 2) }
            let locked = try tpmFinding(["--sim"])
            #expect(locked.state == "problem" && locked.detail.contains("in dictionary-attack lockout (2 of 2 failed passcode tries)"), "\(locked)")
            let fix = try #require(locked.fix?.components(separatedBy: "or clear it with the TPM's lockout authorization: ").last, "\(locked)")
            #expect(fix.hasPrefix("tpm2_dictionarylockout --clear-lockout -T swtpm:"), "\(fix)")
            let words = fix.split(separator: " ").map(String.init)
            let cleared = try ChildProcessResult.run("/usr/bin/" + words[0], Array(words.dropFirst()))
            #expect(cleared.status == 0, "\(cleared.output)")
            let again = try tpmFinding(["--sim"])
            #expect(again.state == "ok" && again.detail.contains("not in dictionary-attack lockout (0 of 2"), "\(again)")

            let nowhere = sandbox.scratch + "/nowhere"
            let swtpm = try tpmFinding(["--tpm", "swtpm:path=\(nowhere)", "--reader", "sim"])
            #expect(swtpm.state == "problem" && swtpm.detail.contains("not reachable through swtpm:path=\(nowhere)"), "\(swtpm)")
            #expect(swtpm.fix?.contains("point --tpm (TOUCHSTONE_TPM)") == true, "\(swtpm)")
            let device = try tpmFinding(["--tpm", "device:\(nowhere)", "--reader", "sim"])
            #expect(device.state == "problem" && device.detail.hasPrefix("no \(nowhere)"), "\(device)")
            #expect(device.fix?.contains("device:/dev/tpmrm0") == true, "\(device)")

            #expect(sandbox.run(["sim", "stop"]).code == 0)
            let (code, stopped) = try Self.doctor(sandbox)
            #expect(code == 1)
            #expect(stopped["tpm"]?.state == "problem" && stopped["tpm"]?.fix == "touchstone sim start", "\(String(describing: stopped["tpm"]))")
        }
    }

    @Test("the TPM's device node not open to the user (run as a user made here, under setpriv): a problem naming its mode, owner and group, the fix to join the group or install the seat's udev rule; with that rule installed (in a mount namespace of the test's), the fix to trigger it from the seat or join the group; joined after the session began: log out and in (newgrp); a session in the group: no problem with the node (the stand-in, a plain file, is then not a reachable TPM)")
    func deviceNodeAccess() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            let (alice, group) = (rig.alice, rig.bob)
            // A stand-in for /dev/tpmrm0: its mode and owner (root, a group alice is not in).
            let node = rig.root + "/tpmrm0"
            #expect(FileManager.default.createFile(atPath: node, contents: nil))
            chown(node, 0, group.gid)
            chmod(node, 0o660)
            func tpmFinding(_ wrapper: [String]) throws -> Finding {
                var environment = ["HOME": alice.home, "TOUCHSTONE_HOME": alice.home + "/ts", "LANG": "C.UTF-8", "TSS2_LOG": "all+none"]
                environment["PATH"] = ProcessInfo.processInfo.environment["PATH"]
                let result = try CLIProcess.start(["--tpm", "device:" + node, "--reader", "sim", "doctor", "--json"], environment: environment,
                                                  scratch: rig.scratch, wrapper: wrapper, program: rig.touchstone).wait()
                let list = try JSONDecoder().decode([Finding].self, from: Data(result.stdout))
                return try #require(list.first { $0.check == "tpm" }, "\(result.stdoutText) \(result.stderr)")
            }
            let join = "sudo usermod -aG \(group.name) \(alice.name), then log out and in again"
            // The doctor as alice with /etc/udev/rules.d of its own (a tmpfs in
            // a mount namespace of its own: the machine's is not touched),
            // holding `rules` (the repository's udev/ files, by name).
            func inRulesFolder(_ rules: [String]) throws -> [String] {
                let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                    .deletingLastPathComponent().appendingPathComponent("udev").path
                let copies = rules.map { "cp '\(repository)/\($0)' /etc/udev/rules.d/ && " }.joined()
                return [try Confinement.tool("unshare"), "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                        "mount -t tmpfs -o mode=0755 touchstone-test /etc/udev/rules.d && \(copies)exec \"$@\"", "sh"]
                    + (try alice.wrapper())
            }
            let outside = try tpmFinding(try inRulesFolder([]))
            #expect(outside.state == "problem"
                    && outside.detail.contains("\(node) (mode 660, root:\(group.name)) is not readable and writable by \(alice.name)"), "\(outside)")
            #expect(outside.fix?.contains(join) == true
                    && outside.fix?.contains("install Touchstone's udev rule udev/70-touchstone.rules as /etc/udev/rules.d/70-touchstone.rules") == true,
                    "\(outside)")

            // Touchstone's seat rule installed (udev/install's place): it gives
            // the node to the user at the seat, which this session is not.
            let besideRule = try tpmFinding(try inRulesFolder(["70-touchstone.rules"]))
            #expect(besideRule.state == "problem"
                    && besideRule.detail.contains("is not readable and writable by \(alice.name); Touchstone's udev rule "
                                                  + "(/etc/udev/rules.d/70-touchstone.rules) gives it only to the user at the local seat"),
                    "\(besideRule)")
            #expect(besideRule.fix == "sudo udevadm trigger --subsystem-match=tpmrm (from the seat's session); from any session: \(join)",
                    "\(besideRule)")

            // Joined (as the fix says), while this session's groups are still the old ones.
            #expect(try Swtpm.run(try Confinement.tool("usermod"), ["-aG", group.name, alice.name]) == 0)
            let stale = try tpmFinding(try alice.wrapper())
            #expect(stale.state == "problem" && stale.detail.contains("you joined group \(group.name) after this session started"), "\(stale)")
            #expect(stale.fix == "log out and in again (or, in this shell: newgrp \(group.name))", "\(stale)")

            // A new session, in the group: the node is open to it.
            let session = try alice.wrapper().map { $0 == "--clear-groups" ? "--groups=\(group.gid)" : $0 }
            let inGroup = try tpmFinding(session)
            #expect(!inGroup.detail.contains("is not readable and writable") && inGroup.detail.contains("not reachable through device:\(node)"),
                    "\(inGroup)")
        }
    }
}

import Foundation
import Glibc
import Testing
import TestRigs

/// Passkeys (docs/fido.md): `touchstone fido serve --udp` as the
/// authenticator, python-fido2 (PyPI) as the browser, py_webauthn as the
/// website verifying each registration and sign-in, through both engines.
/// Touches come from the simulated reader when the authenticator asks.
@Suite("Passkeys: fido serve over UDP, python-fido2 as the browser, py_webauthn as the website")
struct PasskeyTests {
    @Test("register and sign in with the owner's touch (UV set, packed self attestation verified, the counter rising), discoverable sign-in, PRF (hmac-secret) stable per salt, a stranger's touch gives no assertion, credential management lists and deletes (not for a stranger), the excludeList refuses a second registration after the owner's touch (a stranger's: denied), CTAPHID garbage is answered with errors and the next client is served", arguments: SecurityKeyRig.Engine.allCases)
    func registerAndSignIn(_ engine: SecurityKeyRig.Engine) async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(engine)
            defer { rig.close() }
            let passkeys = try PasskeyRig(rig)
            defer { passkeys.stop() }

            let registered = passkeys.scenario(["register", "--user", "alice", "--resident", "--uv", "required"], touching: SecurityKeyRig.owner)
            #expect(registered["ok"] as? Bool == true, "\(registered)")
            #expect(registered["fmt"] as? String == "packed" && registered["userVerified"] as? Bool == true && registered["userPresent"] as? Bool == true,
                    "\(registered)")
            #expect(registered["aaguid"] as? String == "7f3c518e-2b64-4d0a-9e21-5c8b17d406e3", "\(registered)")
            let id = try #require(registered["credentialId"] as? String)
            let listed = rig.touchstone(["fido", "list", "--json"])
            #expect(listed.code == 0 && listed.stdoutText.contains(id) && listed.stdoutText.contains("touchstone.test"), "\(listed.stderr)")

            let signedIn = passkeys.scenario(["authenticate", "--user", "alice", "--uv", "required"], touching: SecurityKeyRig.owner)
            #expect(signedIn["ok"] as? Bool == true && signedIn["userVerified"] as? Bool == true, "\(signedIn)")
            #expect(signedIn["credentialId"] as? String == id && signedIn["signCountIncreased"] as? Bool == true, "\(signedIn)")
            let first = try #require(signedIn["signCount"] as? Int)

            let discovered = passkeys.scenario(["authenticate", "--discoverable", "--uv", "required"], touching: SecurityKeyRig.owner)
            #expect(discovered["ok"] as? Bool == true && discovered["credentialId"] as? String == id, "\(discovered)")
            #expect((discovered["assertionUsers"] as? [Any])?.first as? String == "alice", "\(discovered)")
            #expect((discovered["signCount"] as? Int ?? 0) > first, "\(discovered)")

            // WebAuthn's PRF through hmac-secret: the same salt, the same
            // output; another salt, another.
            let prf = passkeys.scenario(["prf", "--user", "alice", "--salt", "00112233", "--uv", "required"], touching: SecurityKeyRig.owner)
            let again = passkeys.scenario(["prf", "--user", "alice", "--salt", "00112233", "--uv", "required"], touching: SecurityKeyRig.owner)
            let other = passkeys.scenario(["prf", "--user", "alice", "--salt", "44556677", "--uv", "required"], touching: SecurityKeyRig.owner)
            let output = try #require(prf["first"] as? String, "\(prf)")
            #expect(output.count == 64 && again["first"] as? String == output, "\(prf) \(again)")
            #expect(other["ok"] as? Bool == true && other["first"] as? String != output, "\(other)")

            let stranger = passkeys.scenario(["authenticate", "--user", "alice", "--uv", "required"], touching: SecurityKeyRig.stranger)
            #expect(stranger["ok"] as? Bool == false && stranger["ctapError"] as? String == "OPERATION_DENIED", "\(stranger)")

            // Credential management, as a platform's settings page: the
            // token's verification, then a deletion's own touch; a
            // stranger's touch gets neither.
            let refusedList = passkeys.scenario(["credman"], touching: SecurityKeyRig.stranger)
            #expect(refusedList["ok"] as? Bool == false && refusedList["ctapError"] as? String == "OPERATION_DENIED", "\(refusedList)")
            let listedByCTAP = passkeys.scenario(["credman"], touching: SecurityKeyRig.owner)
            let parties = (listedByCTAP["before"] as? [String: Any])?["parties"] as? [[String: Any]] ?? []
            let listedIDs = parties.flatMap { ($0["credentials"] as? [[String: Any]] ?? []).compactMap { $0["credentialId"] as? String } }
            #expect(listedIDs == [id] && parties.first?["rp"] as? String == "touchstone.test", "\(listedByCTAP)")

            // An excluded registration is said so only after the owner's
            // touch (a page learns nothing of the credentials here without
            // the person); a stranger's touch: denied.
            let excludedForStranger = passkeys.scenario(["register", "--user", "alice", "--exclude"], touching: SecurityKeyRig.stranger)
            #expect(excludedForStranger["ok"] as? Bool == false && excludedForStranger["ctapError"] as? String == "OPERATION_DENIED",
                    "\(excludedForStranger)")
            let excluded = passkeys.scenario(["register", "--user", "alice", "--exclude"], touching: SecurityKeyRig.owner)
            #expect(excluded["ok"] as? Bool == false && excluded["ctapError"] as? String == "CREDENTIAL_EXCLUDED", "\(excluded)")
            #expect(rig.touchstone(["fido", "list", "--json"]).stdoutText.components(separatedBy: "touchstone.test").count == 2,
                    "the refused registration left a credential")

            // updateUserInformation: the owner's touch renames the user,
            // a stranger's does not.
            let notRenamed = passkeys.scenario(["credman", "--rename=\(id)=alice@touchstone.test"], touching: SecurityKeyRig.owner, touches: 2,
                                               then: SecurityKeyRig.stranger)
            #expect(notRenamed["ok"] as? Bool == false && notRenamed["ctapError"] as? String == "OPERATION_DENIED", "\(notRenamed)")
            let renamed = passkeys.scenario(["credman", "--rename=\(id)=alice@touchstone.test"], touching: SecurityKeyRig.owner, touches: 2)
            let users = ((renamed["after"] as? [String: Any])?["parties"] as? [[String: Any]] ?? [])
                .flatMap { ($0["credentials"] as? [[String: Any]] ?? []).compactMap { $0["user"] as? String } }
            #expect(renamed["ok"] as? Bool == true && users == ["alice@touchstone.test"], "\(renamed)")

            let second = passkeys.scenario(["register", "--user", "bob", "--resident", "--uv", "required"], touching: SecurityKeyRig.owner)
            let bobs = try #require(second["credentialId"] as? String, "\(second)")
            let deleted = passkeys.scenario(["credman", "--delete=" + bobs], touching: SecurityKeyRig.owner, touches: 2)
            let remaining = ((deleted["after"] as? [String: Any])?["parties"] as? [[String: Any]] ?? [])
                .flatMap { ($0["credentials"] as? [[String: Any]] ?? []).compactMap { $0["credentialId"] as? String } }
            #expect(deleted["ok"] as? Bool == true && remaining == [id], "\(deleted)")
            #expect(!rig.touchstone(["fido", "list"]).stdoutText.contains(bobs))

            // CTAPHID abuse, as a hostile client sends it: each answered with
            // CTAPHID_ERROR on its channel, and the browser is served after.
            let short = try passkeys.exchange([0x01, 0x02, 0x03, 0x04, 0x86, 0x00])
            #expect(short.prefix(8) == [0x01, 0x02, 0x03, 0x04, 0xBF, 0x00, 0x01, 0x03], "a short report: \(short)")
            let orphan = try passkeys.exchange([0x01, 0x02, 0x03, 0x04, 0x00] + [UInt8](repeating: 0x55, count: 59))
            #expect(orphan.prefix(8) == [0x01, 0x02, 0x03, 0x04, 0xBF, 0x00, 0x01, 0x04], "a continuation without its start: \(orphan)")
            let unallocated = try passkeys.exchange([0x01, 0x02, 0x03, 0x04, 0x90, 0x00, 0x01, 0x04] + [UInt8](repeating: 0, count: 56))
            #expect(unallocated.prefix(8) == [0x01, 0x02, 0x03, 0x04, 0xBF, 0x00, 0x01, 0x0B], "CBOR on a channel never allocated: \(unallocated)")
            let info = passkeys.scenario(["info"], touching: nil)
            #expect(info["ok"] as? Bool == true, "the next client was not served: \(info)")
        }
    }

    @Test("CTAPHID spoken by hand: KEEPALIVE (UPNEEDED) while a registration waits for a touch, another channel busy meanwhile, CANCEL answers KEEPALIVE_CANCEL and keeps no credential, CBOR garbage is INVALID_CBOR, a message over 7609 bytes INVALID_LEN; then a registration with a touch succeeds, one whose user name holds control characters is refused, and one with a bidirectional override is listed with it escaped")
    func keepaliveCancelAndGarbage() async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(.embedded)
            defer { rig.close() }
            let passkeys = try PasskeyRig(rig)
            defer { passkeys.stop() }
            let client = try HIDClient(port: passkeys.port)
            let first = try client.allocate()
            let second = try client.allocate()
            #expect(first != second)

            try client.send(first, command: 0x90, HIDClient.makeCredential)
            var keepalives: [[UInt8]] = []
            while keepalives.count < 2 {
                let report = try client.receive()
                if report.prefix(5) == HIDClient.bytes(first) + [0xBB] { keepalives.append(report) } else {
                    Issue.record("not a KEEPALIVE while the touch is awaited: \(report.prefix(8))")
                    break
                }
            }
            #expect(keepalives.allSatisfy { $0[5] == 0 && $0[6] == 1 && $0[7] == 0x02 }, "UPNEEDED: \(keepalives.map { $0.prefix(8) })")
            try client.send(second, command: 0x81, [1, 2, 3])
            #expect(try client.answer(second).prefix(8) == HIDClient.bytes(second) + [0xBF, 0, 1, 0x06], "another channel during a transaction: busy")
            try client.send(first, command: 0x91, [])
            #expect(try client.answer(first).prefix(8) == HIDClient.bytes(first) + [0x90, 0, 1, 0x2D], "CANCEL: KEEPALIVE_CANCEL")

            try client.send(first, command: 0x90, [0x01, 0xA1, 0xFF])
            #expect(try client.answer(first).prefix(8) == HIDClient.bytes(first) + [0x90, 0, 1, 0x12], "CBOR garbage: INVALID_CBOR")
            try client.sendRaw(HIDClient.bytes(first) + [0x90, 0x20, 0x00] + [UInt8](repeating: 0, count: 57))
            #expect(try client.answer(first).prefix(8) == HIDClient.bytes(first) + [0xBF, 0, 1, 0x03], "8192 bytes announced: INVALID_LEN")

            let registered = passkeys.scenario(["register", "--user", "alice"], touching: SecurityKeyRig.owner)
            #expect(registered["ok"] as? Bool == true, "after the cancel the reader and the authenticator serve: \(registered)")
            // Operations run one at a time: the cancelled one had ended.
            let listed = rig.touchstone(["fido", "list"]).stdoutText
            #expect(listed.contains("touchstone.test") && !listed.contains("example.org"), "a cancelled registration left a credential: \(listed)")
            // A page's user name may hold characters that make text show as
            // other text (control characters are refused: INVALID_PARAMETER):
            // `fido list` shows them escaped, on the credential's one line.
            let refused = passkeys.scenario(["register", "--user", "eve\n\u{1B}[2J"], touching: SecurityKeyRig.owner)
            #expect(refused["ok"] as? Bool == false && refused["ctapError"] as? String == "INVALID_PARAMETER", "\(refused)")
            let bidi = passkeys.scenario(["register", "--user", "eve\u{202E}toor"], touching: SecurityKeyRig.owner)
            #expect(bidi["ok"] as? Bool == true, "\(bidi)")
            let lines = rig.touchstone(["fido", "list"]).stdoutText.split(separator: "\n")
            #expect(lines.count == 2 && lines.contains { $0.contains("\teve\\u{202E}toor\t") }, "\(lines)")
        }
    }

    @Test("sim start --fido: the simulator's authenticator on a loopback port (sim status --json: fidoPort), a registration and a sign-in with a touch from sim touch; with --daemon too it is touchstoned's client (the daemon's log has the fido-make); sim stop stops it", arguments: [false, true])
    func simulatorAuthenticator(_ withDaemon: Bool) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            // With the daemon, the vault set up is the daemon's (--sim goes through it).
            if withDaemon { #expect(sandbox.run(["sim", "start", "--daemon"]).code == 0) }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: SecurityKeyRig.owner).code == 0)
            let started = sandbox.run(["sim", "start", "--fido"] + (withDaemon ? ["--daemon"] : []))
            #expect(started.code == 0 && started.stderr.contains("FIDO authenticator started"), "\(started.stderr)")
            let status = sandbox.run(["--json", "sim", "status"])
            let object = try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any]
            let port = try #require(object?["fidoPort"] as? Int, "\(status.stdoutText)")

            var environment = sandbox.environment
            environment["TOUCHSTONE_CLI"] = CLIProcess.binary
            func client(_ arguments: [String]) throws -> [String: Any] {
                let run = try CLIProcess.start([PasskeyRig.client, "--port", "\(port)", "--state", sandbox.scratch + "/website.json",
                                                "--touch", SecurityKeyRig.owner] + arguments,
                                               environment: environment, scratch: sandbox.scratch, program: PasskeyRig.venvPython).wait()
                let line = run.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
                return (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? ["harness": "\(run.code) \(run.stderr)"]
            }
            let registered = try client(["register", "--user", "alice", "--resident"])
            #expect(registered["ok"] as? Bool == true && registered["userVerified"] as? Bool == true, "\(registered)")
            let signedIn = try client(["authenticate", "--discoverable"])
            #expect(signedIn["ok"] as? Bool == true && signedIn["signCountIncreased"] as? Bool == true, "\(signedIn)")
            let daemonLog = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(daemonLog.contains("fido-make: ok") == withDaemon, "\(daemonLog)")

            let stopped = sandbox.run(["sim", "stop"])
            #expect(stopped.stderr.contains("FIDO authenticator stopped"), "\(stopped.stderr)")
            let after = try JSONSerialization.jsonObject(with: Data(sandbox.run(["--json", "sim", "status"]).stdout)) as? [String: Any]
            #expect(after?["fidoPort"] is NSNull, "\(String(describing: after))")
        }
    }

    @Test("fido serve --uhid: without /dev/uhid (this kernel has no CONFIG_UHID) exit 1 naming the missing module; where the node exists, the virtual device is made and served until SIGTERM; no transport at all is a usage error")
    func uhidTransport() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            let none = sandbox.run(["--sim", "fido", "serve"])
            #expect(none.code == 64 && none.stderr.contains("needs a transport"), "\(none.stderr)")
            if FileManager.default.fileExists(atPath: "/dev/uhid") {
                let server = try CLIProcess.start(["--sim", "fido", "serve", "--uhid"], environment: sandbox.environment, scratch: sandbox.scratch)
                #expect(server.waitForStderr("serving a virtual USB HID FIDO device"), "\(server.stderrSoFar)")
                server.signal(SIGTERM)
                #expect(server.wait(timeout: 30).code == 0)
            } else {
                let refused = sandbox.run(["--sim", "fido", "serve", "--uhid"])
                #expect(refused.code == 1 && refused.stderr.contains("no /dev/uhid") && refused.stderr.contains("modprobe uhid"), "\(refused.stderr)")
            }
        }
    }

    @Test("reset: asked through pinentry (no terminal), a wrong passcode deletes nothing; the right one deletes every passkey and keeps the ssh security key; both engines", arguments: SecurityKeyRig.Engine.allCases)
    func reset(_ engine: SecurityKeyRig.Engine) async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(engine)
            defer { rig.close() }
            let answers = rig.scratch + "/pinentry-answers", log = rig.scratch + "/pinentry-log"
            // The serve process (the daemon engine's runs as another user) reads and writes them.
            chmod(rig.scratch, 0o755)
            for file in [answers, log] {
                #expect(FileManager.default.createFile(atPath: file, contents: file == answers ? Data("wrong-passcode\n".utf8) : Data()))
                chmod(file, 0o666)
            }
            rig.extraEnvironment["TOUCHSTONE_PINENTRY"] = URL(fileURLWithPath: SecretServiceRig.client).deletingLastPathComponent()
                .appendingPathComponent("scripted-pinentry.py").path
            rig.extraEnvironment["SCRIPTED_PINENTRY_ANSWERS"] = answers
            rig.extraEnvironment["SCRIPTED_PINENTRY_LOG"] = log
            _ = try rig.makeKey("id_keep", ["application=ssh:keep"])
            let passkeys = try PasskeyRig(rig)
            defer { passkeys.stop() }
            let registered = passkeys.scenario(["register", "--user", "alice", "--resident"], touching: SecurityKeyRig.owner)
            #expect(registered["ok"] as? Bool == true, "\(registered)")

            let refused = passkeys.scenario(["reset"], touching: nil)
            #expect(refused["ok"] as? Bool == false && refused["ctapError"] as? String == "OPERATION_DENIED", "\(refused)")
            let dialog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(dialog.contains("GETPIN") && dialog.contains("reset"), "\(dialog)")
            #expect(rig.touchstone(["fido", "list"]).stdoutText.contains("touchstone.test"), "a wrong passcode deleted something")

            try "\(CLISandbox.passcode)\n".write(toFile: answers, atomically: false, encoding: .utf8)
            let reset = passkeys.scenario(["reset"], touching: nil)
            #expect(reset["ok"] as? Bool == true, "\(reset)")
            let listed = rig.touchstone(["fido", "list"]).stdoutText
            #expect(!listed.contains("touchstone.test") && listed.contains("ssh:keep"), "\(listed)")
        }
    }

    @Test("without a terminal, each request that waits for the person is also a desktop notification naming what it is for (the registration's relying party)")
    func notification() async throws {
        let bus = try DBusRig()
        defer { bus.close() }
        let notifications = try await NotificationRecorder(address: bus.address)
        let rig = try await offPool { try SecurityKeyRig(.embedded) }
        rig.extraEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let passkeys = try await offPool { try PasskeyRig(rig) }
        let registered = try await offPool { passkeys.scenario(["register", "--user", "alice"], touching: SecurityKeyRig.owner) }
        #expect(registered["ok"] as? Bool == true, "\(registered)")
        #expect(try await eventually { notifications.notifications.contains { $0.body.contains("register with touchstone.test") } },
                "\(notifications.notifications)")
        _ = try? await offPool {
            passkeys.stop()
            rig.close()
        }
    }

    /// python-fido2's own device tests (tests/device of its 2.2.1 source
    /// release, fetched by install-deps) pointed at the authenticator by
    /// Tests/Fixtures/fido/device_suite_plugin.py, which answers their
    /// touch prompts with the owner's finger. Most of the suite needs a
    /// PIN, reset or credential management, which the authenticator does
    /// not offer: those skip, and what runs must pass.
    @Test("python-fido2's device test suite: every test that applies passes (at least the 13 that apply today: CTAPHID, getInfo, the client's registrations and sign-ins, ES256 credentials, PRF over protocol 2), none fails")
    func pythonFido2DeviceSuite() async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(.embedded)
            defer { rig.close() }
            let passkeys = try PasskeyRig(rig)
            defer { passkeys.stop() }
            let suite = PasskeyRig.cache + "/fido2-2.2.1"
            var environment = rig.environment
            environment["PYTHONPATH"] = URL(fileURLWithPath: PasskeyRig.client).deletingLastPathComponent().path
            environment["TOUCHSTONE_CLI"] = CLIProcess.binary
            let run = try CLIProcess.start(["-m", "pytest", "-p", "device_suite_plugin", "-p", "no:cacheprovider", "-q",
                                            "--rootdir", suite, "--touchstone-port", "\(passkeys.port)", "--touchstone-touch", SecurityKeyRig.owner,
                                            "--touchstone-accept-uv", "--touchstone-no-reset", "--touchstone-hide-credman", suite + "/tests/device"],
                                           environment: environment, scratch: rig.scratch, program: PasskeyRig.venvPython).wait(timeout: 900)
            let summary = run.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
            let passed = summary.split(separator: " ").first.flatMap { Int($0) } ?? 0
            #expect(run.code == 0 && summary.contains(" passed") && !summary.contains("failed") && !summary.contains("error"),
                    "\(summary)\n\(run.stdoutText.suffix(4000))\n\(run.stderr.suffix(2000))")
            #expect(passed >= 13, "\(summary)")
        }
    }
}

/// `fido serve --udp 127.0.0.1:0` as the rig's user, and the python
/// client (root's venv, scripts/install-deps) against it.
final class PasskeyRig {
    let rig: SecurityKeyRig
    let server: RunningCLI
    let port: UInt16
    let state: String

    /// Where install-deps keeps the venv and python-fido2's source release.
    static let cache = (ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache") + "/touchstone-tests"
    static let venvPython = cache + "/fido-venv/bin/python"
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fido/webauthn_client.py").path

    init(_ rig: SecurityKeyRig) throws {
        self.rig = rig
        state = rig.scratch + "/website.json"
        let embedded = rig.engine == .embedded
        server = try rig.start(CLIProcess.binary, (embedded ? ["--sim"] : []) + ["fido", "serve", "--udp", "127.0.0.1:0"])
        let deadline = Date().addingTimeInterval(60)
        var port: UInt16?
        while Date() < deadline, server.poll() == nil {
            let out = (try? String(contentsOfFile: server.stdoutPath, encoding: .utf8)) ?? ""
            if let line = out.split(separator: "\n").first, let number = UInt16(line) {
                port = number
                break
            }
            usleep(20_000)
        }
        guard let port else {
            let result = server.wait(timeout: 5)
            throw RigFailure("fido serve printed no port (exit \(result.code)): \(result.stderr)")
        }
        self.port = port
    }

    func stop() {
        server.signal(SIGTERM)
        _ = server.wait(timeout: 30)
    }

    /// One scenario of the client; its verdict (the last line's JSON).
    /// With `touching`, the reader is touched by that finger once the
    /// authenticator asks for a touch.
    /// `then`: the finger of the last touch, when not `finger`.
    func scenario(_ arguments: [String], touching finger: String?, touches: Int = 1, then last: String? = nil) -> [String: Any] {
        var asked = server.stderrSoFar.components(separatedBy: "touch the reader (").count
        let started: RunningCLI
        do {
            started = try CLIProcess.start([Self.client, "--port", "\(port)", "--state", state] + arguments,
                                           environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], scratch: rig.scratch, program: Self.venvPython)
        } catch {
            return ["harness": "\(error)"]
        }
        if let finger {
            for touch in 0..<touches {
                let deadline = Date().addingTimeInterval(60)
                while Date() < deadline, started.poll() == nil,
                      server.stderrSoFar.components(separatedBy: "touch the reader (").count <= asked {
                    usleep(20_000)
                }
                asked += 1
                if started.poll() == nil { rig.touch(touch == touches - 1 ? last ?? finger : finger) }
            }
        }
        let result = started.wait()
        guard result.code == 0, let line = result.stdoutText.split(separator: "\n").last,
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return ["harness": "exit \(result.code): \(result.stdoutText) \(result.stderr)", "server": server.stderrSoFar]
        }
        return object
    }

    /// One datagram to the authenticator and the first datagram back.
    func exchange(_ datagram: [UInt8]) throws -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw RigFailure("socket") }
        defer { Glibc.close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let sent = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard sent == datagram.count else { throw RigFailure("sendto") }
        var reply = [UInt8](repeating: 0, count: 128)
        let count = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw RigFailure("no answer to \(datagram.prefix(8))") }
        return Array(reply[0..<count])
    }
}

/// A CTAPHID client over UDP written out byte by byte, as a hostile
/// program would speak it (not the authenticator's own framing code).
final class HIDClient {
    let fd: Int32

    /// makeCredential for example.org and user alice, ES256.
    static let makeCredential: [UInt8] = {
        var cbor: [UInt8] = [0xA4, 0x01, 0x58, 0x20] + [UInt8](repeating: 0x5A, count: 32)
        cbor += [0x02, 0xA1, 0x62] + Array("id".utf8) + [0x6B] + Array("example.org".utf8)
        cbor += [0x03, 0xA2, 0x62] + Array("id".utf8) + [0x45] + Array("alice".utf8) + [0x64] + Array("name".utf8) + [0x65] + Array("alice".utf8)
        cbor += [0x04, 0x81, 0xA2, 0x63] + Array("alg".utf8) + [0x26, 0x64] + Array("type".utf8) + [0x6A] + Array("public-key".utf8)
        return [0x01] + cbor
    }()

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw RigFailure("socket") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RigFailure("connect") }
    }

    deinit { Glibc.close(fd) }

    static func bytes(_ channel: UInt32) -> [UInt8] {
        [UInt8(channel >> 24), UInt8(channel >> 16 & 0xFF), UInt8(channel >> 8 & 0xFF), UInt8(channel & 0xFF)]
    }

    func sendRaw(_ report: [UInt8]) throws {
        guard Glibc.send(fd, report, report.count, 0) == report.count else { throw RigFailure("send") }
    }

    /// A message in 64-byte reports: an initialization packet, then continuations.
    func send(_ channel: UInt32, command: UInt8, _ payload: [UInt8]) throws {
        func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: 64 - bytes.count) }
        try sendRaw(padded(Self.bytes(channel) + [command, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload.prefix(57)))
        var rest = payload.dropFirst(57)
        var sequence: UInt8 = 0
        while !rest.isEmpty {
            try sendRaw(padded(Self.bytes(channel) + [sequence] + rest.prefix(59)))
            rest = rest.dropFirst(59)
            sequence += 1
        }
    }

    func receive() throws -> [UInt8] {
        var report = [UInt8](repeating: 0, count: 128)
        let count = report.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw RigFailure("no report within 30 s") }
        return Array(report[0..<count])
    }

    /// The next report on `channel` that is not a KEEPALIVE.
    func answer(_ channel: UInt32) throws -> [UInt8] {
        while true {
            let report = try receive()
            if report.prefix(4) == Self.bytes(channel)[...], report[4] != 0xBB { return report }
        }
    }

    /// CTAPHID_INIT on the broadcast channel: the channel allocated.
    func allocate() throws -> UInt32 {
        let nonce: [UInt8] = (0..<8).map { _ in UInt8.random(in: 0...255) }
        try send(0xFFFF_FFFF, command: 0x86, nonce)
        let report = try answer(0xFFFF_FFFF)
        guard report[4] == 0x86, Array(report[7..<15]) == nonce else { throw RigFailure("INIT answered \(report.prefix(24))") }
        return report[15..<19].reduce(0) { $0 << 8 | UInt32($1) }
    }
}

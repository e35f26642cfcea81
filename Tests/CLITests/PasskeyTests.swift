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
    @Test("register and sign in with the owner's touch (UV set, packed self attestation verified, the counter rising), discoverable sign-in, a stranger's touch gives no assertion, the excludeList refuses a second registration, CTAPHID garbage is answered with errors and the next client is served", arguments: SecurityKeyRig.Engine.allCases)
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

            let stranger = passkeys.scenario(["authenticate", "--user", "alice", "--uv", "required"], touching: SecurityKeyRig.stranger)
            #expect(stranger["ok"] as? Bool == false && stranger["ctapError"] as? String == "OPERATION_DENIED", "\(stranger)")

            let again = passkeys.scenario(["register", "--user", "alice", "--exclude"], touching: nil)
            #expect(again["ok"] as? Bool == false && again["ctapError"] as? String == "CREDENTIAL_EXCLUDED", "\(again)")
            #expect(rig.touchstone(["fido", "list", "--json"]).stdoutText.components(separatedBy: "touchstone.test").count == 2,
                    "the refused registration left a credential")

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

    /// python-fido2's own device tests (tests/device of its 2.2.1 source
    /// release, fetched by install-deps) pointed at the authenticator by
    /// Tests/Fixtures/fido/device_suite_plugin.py, which answers their
    /// touch prompts with the owner's finger. Most of the suite needs a
    /// PIN, reset or credential management, which the authenticator does
    /// not offer: those skip, and what runs must pass.
    @Test("python-fido2's device test suite: every test that applies passes (at least the 11 that apply today: CTAPHID, getInfo, the client's registrations and sign-ins, ES256 credentials), none fails")
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
                                            "--touchstone-accept-uv", "--touchstone-no-reset", suite + "/tests/device"],
                                           environment: environment, scratch: rig.scratch, program: PasskeyRig.venvPython).wait(timeout: 900)
            let summary = run.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
            let passed = summary.split(separator: " ").first.flatMap { Int($0) } ?? 0
            #expect(run.code == 0 && summary.contains(" passed") && !summary.contains("failed") && !summary.contains("error"),
                    "\(summary)\n\(run.stdoutText.suffix(4000))\n\(run.stderr.suffix(2000))")
            #expect(passed >= 11, "\(summary)")
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
    func scenario(_ arguments: [String], touching finger: String?) -> [String: Any] {
        let asked = server.stderrSoFar.components(separatedBy: "touch the reader (").count
        let started: RunningCLI
        do {
            started = try CLIProcess.start([Self.client, "--port", "\(port)", "--state", state] + arguments,
                                           environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], scratch: rig.scratch, program: Self.venvPython)
        } catch {
            return ["harness": "\(error)"]
        }
        if let finger {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, started.poll() == nil,
                  server.stderrSoFar.components(separatedBy: "touch the reader (").count <= asked {
                usleep(20_000)
            }
            if started.poll() == nil { rig.touch(finger) }
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

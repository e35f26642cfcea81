import Foundation
import Glibc
import Testing
import TestRigs

/// OpenSSH's security keys (ecdsa-sk) made and used through
/// libtouchstone-sk.so by OpenSSH's own programs, through both engines
/// (docs/ssh.md, "Security keys").
@Suite("Security keys: ssh-keygen, ssh, sshd and ssh-agent with libtouchstone-sk.so")
struct SecurityKeyTests {
    static let engines = SecurityKeyRig.Engine.allCases

    @Test("a resident verify-required key: made by ssh-keygen, signs after the owner's touch with presence and verification in its flags, never after a stranger's; ssh-keygen -K downloads it and the download signs", arguments: engines)
    func residentVerifiedKey(_ engine: SecurityKeyRig.Engine) async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(engine)
            defer { rig.close() }
            let line = try rig.makeKey("id_rk", ["resident", "verify-required", "application=ssh:work", "user=alice"])
            #expect(line.hasPrefix("sk-ecdsa-sha2-nistp256@openssh.com "), "\(line)")
            let listed = try rig.credentials()
            #expect(listed.count == 1)
            #expect(listed.first?["relyingParty"] as? String == "ssh:work" && listed.first?["user"] as? String == "alice")
            #expect(listed.first?["discoverable"] as? Bool == true && listed.first?["verificationRequired"] as? Bool == true)
            #expect(listed.first?["signCount"] as? Int == 0 && listed.first?["state"] as? String == "ok")

            _ = try rig.file("message", "signed with a finger\n")
            let (refused, none) = rig.sign("message", key: "id_rk", touching: SecurityKeyRig.stranger)
            #expect(refused.code != 0 && none == nil, "a stranger's touch signed: \(refused.stderr)")

            let (signed, signature) = rig.sign("message", key: "id_rk", touching: SecurityKeyRig.owner)
            #expect(signed.code == 0, "\(signed.stderr)")
            let first = try rig.verify("message", signature: try #require(signature), publicKey: line)
            #expect(first.good, "\(first.output)")
            #expect(first.flags == 0x05, "user present and verified: \(first.output)")
            let firstCounter = try #require(first.counter)

            // ssh-keygen -K: the resident key comes back, with its verify-required flag, and signs.
            let download = rig.folder + "/download"
            let fetched = rig.shell("mkdir -p \"$1\" && cd \"$1\" && exec ssh-keygen -K < /dev/null", [download])
            #expect(fetched.code == 0, "\(fetched.stdoutText) \(fetched.stderr)")
            let downloadedPublic = try String(contentsOfFile: download + "/id_ecdsa_sk_rk_work_alice.pub", encoding: .utf8)
            #expect(downloadedPublic.hasPrefix(line.components(separatedBy: " ").prefix(2).joined(separator: " ")), "the same public key")
            let (again, secondSignature) = rig.sign("message", key: "download/id_ecdsa_sk_rk_work_alice", touching: SecurityKeyRig.owner)
            #expect(again.code == 0, "\(again.stderr)")
            let second = try rig.verify("message", signature: try #require(secondSignature), publicKey: line)
            #expect(second.good && second.flags == 0x05, "\(second.output)")
            #expect((second.counter ?? 0) > firstCounter, "the counter rises: \(firstCounter) then \(second.counter ?? 0)")
            if engine == .daemon { #expect(rig.daemonLog.contains("fido-assert"), "the daemon's log names the call") }
        }
    }

    @Test("a key made without verify-required signs with presence only (flags 0x01); ed25519-sk and no-touch-required are refused, saying why", arguments: engines)
    func presenceOnlyAndRefusals(_ engine: SecurityKeyRig.Engine) async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(engine)
            defer { rig.close() }
            let line = try rig.makeKey("id_plain")
            _ = try rig.file("message", "touched\n")
            let (signed, signature) = rig.sign("message", key: "id_plain", touching: SecurityKeyRig.owner)
            #expect(signed.code == 0, "\(signed.stderr)")
            let verified = try rig.verify("message", signature: try #require(signature), publicKey: line)
            #expect(verified.good && verified.flags == 0x01, "\(verified.output)")
            #expect(try rig.credentials().first?["discoverable"] as? Bool == false)

            let ed25519 = rig.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519-sk", "-f", rig.folder + "/id_ed", "-N", "", "-w", rig.provider])
            #expect(ed25519.code != 0 && ed25519.stderr.contains("a TPM 2.0 has no Ed25519"), "\(ed25519.stderr)")
            let untouched = rig.run("/usr/bin/ssh-keygen", ["-q", "-t", "ecdsa-sk", "-f", rig.folder + "/id_nt", "-N", "", "-w", rig.provider,
                                                            "-O", "no-touch-required"])
            #expect(untouched.code != 0 && untouched.stderr.contains("no-touch-required is not offered"), "\(untouched.stderr)")
            #expect(try rig.credentials().count == 1, "nothing made by the refused enrolments")
        }
    }

    @Test("sshd with verify-required (sshd_config and authorized_keys): the verified key logs in after the owner's touch, not after a stranger's; a key made without verification is refused; through ssh-agent -P too", arguments: engines)
    func loginRequiresVerification(_ engine: SecurityKeyRig.Engine) async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(engine)
            defer { rig.close() }
            let verified = try rig.makeKey("id_uv", ["verify-required"])
            let plain = try rig.makeKey("id_plain")
            func login(_ server: SSHServerRig, key: String, touching finger: String) -> CLIResult {
                rig.runTouching(finger, "/usr/bin/ssh", ["-i", rig.folder + "/" + key, "-o", "IdentitiesOnly=yes",
                                                         "-o", "SecurityKeyProvider=" + rig.provider]
                                + server.sshArguments("echo logged-in-as-$(id -un)"))
            }

            // verify-required for every key, in sshd_config.
            let global = try rig.sshServer(authorizedKeys: [verified, plain], extraConfig: "PubkeyAuthOptions verify-required")
            defer { global.close() }
            let inside = login(global, key: "id_uv", touching: SecurityKeyRig.owner)
            #expect(inside.code == 0 && inside.stdoutText == "logged-in-as-\(global.user)\n", "\(inside.stdoutText) \(inside.stderr)\n\(global.log)")
            let stranger = login(global, key: "id_uv", touching: SecurityKeyRig.stranger)
            #expect(stranger.code == 255 && !stranger.stdoutText.contains("logged-in"), "\(stranger.stdoutText) \(stranger.stderr)")
            let unverified = login(global, key: "id_plain", touching: SecurityKeyRig.owner)
            #expect(unverified.code == 255 && !unverified.stdoutText.contains("logged-in"), "\(unverified.stdoutText) \(unverified.stderr)")
            #expect(global.log.contains("user verification requirement not met"), "sshd says why: \(global.log)")
            #expect(global.log.components(separatedBy: "Accepted publickey").count == 2, "one login only: \(global.log)")

            // verify-required as the key's option in authorized_keys.
            let perKey = try rig.sshServer(authorizedKeys: ["verify-required " + verified, "verify-required " + plain])
            defer { perKey.close() }
            #expect(login(perKey, key: "id_uv", touching: SecurityKeyRig.owner).code == 0, "\(perKey.log)")
            #expect(login(perKey, key: "id_plain", touching: SecurityKeyRig.owner).code == 255, "\(perKey.log)")

            // Through ssh-agent, which loads only providers -P allows.
            let socket = rig.folder + "/agent.sock"
            let agent = try rig.start("/usr/bin/ssh-agent", ["-D", "-a", socket, "-P", rig.provider])
            defer {
                agent.signal(SIGTERM)
                _ = agent.wait(timeout: 30)
            }
            rig.extraEnvironment["SSH_AUTH_SOCK"] = socket
            // Ready once it answers: `ssh-add -l` says 1 (no identities), not 2 (no agent);
            // the socket file appears at bind(), before listen().
            var answering = false
            for _ in 0..<300 where !answering {
                answering = rig.run("/usr/bin/ssh-add", ["-l"]).code == 1
                if !answering { usleep(50_000) }
            }
            #expect(answering, "ssh-agent did not answer: \(agent.stderrSoFar)")
            let added = rig.run("/usr/bin/ssh-add", ["-S", rig.provider, rig.folder + "/id_uv"])
            #expect(added.code == 0, "\(added.stderr)")
            let throughAgent = rig.runTouching(SecurityKeyRig.owner, "/usr/bin/ssh", ["-o", "IdentitiesOnly=no"]
                                               + global.sshArguments("echo agent-login"), watching: agent)
            #expect(throughAgent.code == 0 && throughAgent.stdoutText == "agent-login\n", "\(throughAgent.stderr) \(agent.stderrSoFar)")
        }
    }

    @Test("fido delete: the passcode removes a credential and its key stops signing (a wrong one removes nothing); an enrolment change kills a biometry-current-set key", arguments: engines)
    func deleteAndInvalidation(_ engine: SecurityKeyRig.Engine) async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(engine)
            defer { rig.close() }
            _ = try rig.makeKey("id_gone")
            rig.extraEnvironment["TOUCHSTONE_SK_ACCESS"] = "biometry-current-set"
            _ = try rig.makeKey("id_current", ["verify-required"])
            rig.extraEnvironment["TOUCHSTONE_SK_ACCESS"] = nil
            _ = try rig.file("message", "m\n")
            #expect(rig.sign("message", key: "id_gone", touching: SecurityKeyRig.owner).1 != nil)
            #expect(rig.sign("message", key: "id_current", touching: SecurityKeyRig.owner).1 != nil)

            let credentials = try rig.credentials()
            let gone = try #require(credentials.first { $0["access"] as? String == "user-presence" }?["id"] as? String)
            let wrong = rig.touchstone(["fido", "delete", String(gone.prefix(6)), "--passcode-fd", "0"], stdin: CLISandbox.line("wrong"))
            #expect(wrong.code == 2, "wrong passcode: \(wrong.code) \(wrong.stderr)")
            #expect(try rig.credentials().count == 2)
            let deleted = rig.touchstone(["fido", "delete", String(gone.prefix(6)), "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode))
            #expect(deleted.code == 0, "\(deleted.stderr)")
            #expect(try rig.credentials().count == 1)
            #expect(rig.touchstone(["fido", "delete", gone, "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode)).code == 8)
            let unsigned = rig.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", rig.folder + "/id_gone", "-n", "file", rig.folder + "/message"])
            #expect(unsigned.code != 0 && unsigned.stderr.contains("names no credential"), "\(unsigned.stderr)")

            try rig.enrollAnother("left-thumb", as: "alice-left-thumb")
            #expect(try rig.credentials().first?["state"] as? String == "invalidated")
            let dead = rig.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", rig.folder + "/id_current", "-n", "file", rig.folder + "/message"])
            #expect(dead.code != 0 && dead.stderr.contains("was invalidated: the enrolled fingers changed"), "\(dead.stderr)")
        }
    }

    @Test("the counter rises across restarts, and a TPM that dies at TPM2_Sign (after the counter's commit) skips a value, never repeats one", arguments: engines)
    func counterNeverRepeats(_ engine: SecurityKeyRig.Engine) async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(engine)
            defer { rig.close() }
            let line = try rig.makeKey("id_count")
            _ = try rig.file("message", "count\n")
            func counter() throws -> UInt32? {
                let (signed, signature) = rig.sign("message", key: "id_count", touching: SecurityKeyRig.owner)
                guard signed.code == 0, let signature else { return nil }
                let verified = try rig.verify("message", signature: signature, publicKey: line)
                return verified.good ? verified.counter : nil
            }
            let one = try #require(try counter())
            let two = try #require(try counter())
            #expect(two == one + 1)
            try rig.restart()
            let three = try #require(try counter())
            #expect(three == two + 1, "after a restart: \(two) then \(three)")
            #expect(try rig.credentials().first?["signCount"] as? Int == Int(three))

            let tap = try rig.tap(TPMTap.sign)
            let (crashed, none) = rig.sign("message", key: "id_count", touching: SecurityKeyRig.owner)
            tap.stop()
            #expect(tap.killed, "swtpm was not killed; commands seen: \(tap.seen.map { String($0, radix: 16) })")
            #expect(crashed.code != 0 && none == nil, "\(crashed.stderr)")
            try rig.restartAfterCrash()
            let after = try #require(try counter())
            #expect(after == three + 2, "the value committed before the crash is spent: \(three) then \(after)")
        }
    }

    @Test("spoken by hand to touchstoned: an assertion waits for its own touch whatever grant the connection holds (a stranger's touch signs nothing, no interaction signs nothing, the owner's signs with both flags); another user's credential is not found; a deletion without the right passcode deletes nothing")
    func daemonAssertionsByHand() async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(.daemon)
            defer { rig.close() }
            let daemon = try #require(rig.daemon)
            _ = try rig.makeKey("id_alice")
            let alices = try #require(try rig.credentials().first?["id"] as? String)

            // Root is the attacker's user: its own vault, finger and credential, made over the raw protocol.
            try daemon.setUpRoot(as: "root-finger")
            let client = try RawClient(daemon.socket)
            func bytes(_ values: [UInt8]) -> String { "[" + values.map(String.init).joined(separator: ",") + "]" }
            client.send(#"{"head":{"operation":"fido-create","program":"hostile","interactive":false},"request":{"replace":false,"request":{"relyingParty":"ssh:root","userID":[],"userName":"root","userDisplayName":"","discoverable":false,"verificationRequired":true,"credProtect":1,"access":{"flags":["biometry-any"],"combination":"any"}}}}"#)
            let created = try client.receive()
            let info = try #require((created.json["success"] as? [String: Any])?["_0"] as? [String: Any], "\(created.json)")
            let id = try #require((info["id"] as? [NSNumber])?.map(\.uint8Value))

            // A grant for five minutes, in hand.
            client.send(#"{"head":{"operation":"authenticate","program":"hostile","interactive":false},"request":{"access":{"flags":["biometry-any"],"combination":"any"},"reasonText":"grant","interactionNotAllowed":false,"touchTimeoutMilliseconds":60000,"reuseSeconds":300}}"#)
            #expect(daemon.touch("root-finger").code == 0)
            let granted = try client.receive()
            let grantID = try #require((((granted.json["success"] as? [String: Any])?["_0"] as? [String: Any])?["id"] as? NSNumber)?.uint64Value)

            func assert(_ credential: [UInt8], relyingParty: String = "ssh:root", interactionNotAllowed: Bool = false,
                        touching finger: String?) throws -> [String: Any] {
                // The grant rides along as a field the request does not have: it stands for nothing.
                client.send(#"{"head":{"operation":"fido-assert","program":"hostile","interactive":false},"request":{"id":\#(bytes(credential)),"relyingParty":"\#(relyingParty)","clientDataHash":\#(bytes(Array(repeating: 7, count: 32))),"userVerification":true,"reasonText":"by hand","interactionNotAllowed":\#(interactionNotAllowed),"touchTimeoutMilliseconds":60000,"grant":{"id":\#(grantID),"passcode":false,"biometricMatch":true}}}"#)
                if let finger { #expect(daemon.touch(finger).code == 0) }
                return try client.receive().json
            }
            let stranger = try assert(id, touching: SecurityKeyRig.stranger)
            #expect(stranger["success"] == nil, "a stranger's touch: \(stranger)")
            let unasked = try assert(id, interactionNotAllowed: true, touching: nil)
            #expect(unasked["success"] == nil, "no interaction: \(unasked)")
            let signed = try assert(id, touching: "root-finger")
            let assertion = try #require((signed["success"] as? [String: Any])?["_0"] as? [String: Any], "\(signed)")
            let data = try #require((assertion["authenticatorData"] as? [NSNumber])?.map(\.uint8Value))
            #expect(data.count == 37 && data[32] == 0x05 && Array(data[33...]) == [0, 0, 0, 1], "UP and UV, counter 1: \(data)")

            // Alice's credential, from root's connection: not in root's vault.
            let aliceID = try #require(Data(base64Encoded: alices.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "="))
            let foreign = try assert(Array(aliceID), relyingParty: "ssh:", touching: nil)
            #expect(((foreign["failure"] as? [String: Any])?["_0"] as? [String: Any])?["itemNotFound"] != nil, "\(foreign)")

            // fido-delete with a wrong passcode: nothing deleted; with root's: gone.
            client.send(#"{"head":{"operation":"fido-delete","program":"hostile","interactive":false},"request":{"id":\#(bytes(id)),"passcode":0}}"#,
                        secrets: [Array("wrong-passcode".utf8)])
            #expect(try client.receive().json["success"] == nil)
            #expect(rig.touchstone(["fido", "list"]).stdoutText.contains(alices), "alice's credential is untouched")
            client.send(#"{"head":{"operation":"fido-delete","program":"hostile","interactive":false},"request":{"id":\#(bytes(id)),"passcode":0}}"#,
                        secrets: [Array(DaemonRig.passcode.utf8)])
            let deleted = try client.receive().json
            #expect(deleted["success"] != nil, "\(deleted)")
            #expect(daemon.daemonLog.contains("fido-assert"), "the log names the calls")
        }
    }

    @Test("without a terminal, a passcode key's signature asks through pinentry and a desktop notification, both naming ssh-keygen by its executable and command name, and the application: a wrong passcode signs nothing, the right one signs with the verified flag")
    func pinentryAndNotification() async throws {
        let bus = try DBusRig()
        defer { bus.close() }
        let notifications = try await NotificationRecorder(address: bus.address)
        let rig = try await offPool { try SecurityKeyRig(.embedded) }
        let answers = rig.scratch + "/pinentry-answers", log = rig.scratch + "/pinentry-log"
        try "wrong-passcode\n".write(toFile: answers, atomically: true, encoding: .utf8)
        rig.extraEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        rig.extraEnvironment["TOUCHSTONE_PINENTRY"] = URL(fileURLWithPath: SecretServiceRig.client).deletingLastPathComponent()
            .appendingPathComponent("scripted-pinentry.py").path
        rig.extraEnvironment["SCRIPTED_PINENTRY_ANSWERS"] = answers
        rig.extraEnvironment["SCRIPTED_PINENTRY_LOG"] = log
        rig.extraEnvironment["TOUCHSTONE_SK_ACCESS"] = "passcode"
        let line = try await offPool { try rig.makeKey("id_door", ["verify-required", "application=ssh:door"]) }
        _ = try rig.file("message", "opened with the passcode\n")
        let sign = ["-Y", "sign", "-f", rig.folder + "/id_door", "-n", "file", rig.folder + "/message"]

        let wrong = try await offPool { rig.run("/usr/bin/ssh-keygen", sign) }
        #expect(wrong.code != 0 && !FileManager.default.fileExists(atPath: rig.folder + "/message.sig"), "\(wrong.stderr)")
        let dialog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(dialog.contains("GETPIN") && dialog.contains("/usr/bin/ssh-keygen (ssh-keygen, pid ") && dialog.contains("ssh:door"), "\(dialog)")

        try "\(CLISandbox.passcode)\n".write(toFile: answers, atomically: true, encoding: .utf8)
        let right = try await offPool { rig.run("/usr/bin/ssh-keygen", sign) }
        #expect(right.code == 0, "\(right.stderr)")
        let verified = try await offPool { try rig.verify("message", signature: rig.folder + "/message.sig", publicKey: line) }
        #expect(verified.good && verified.flags == 0x05, "the passcode verifies the user: \(verified.output)")
        #expect(try await eventually { notifications.notifications.contains { $0.body.contains("/usr/bin/ssh-keygen (ssh-keygen, pid ") && $0.body.contains("ssh:door") } },
                "\(notifications.notifications)")
        _ = try? await offPool { rig.close() }
    }

    @Test("at a terminal: ssh-keygen's PIN prompt answered with Enter, then the provider's own prompt on the same terminal (Enter for the passcode, typed with echo off) signs with the verified flag")
    func atATerminal() async throws {
        try await blockingTest {
            let rig = try SecurityKeyRig(.embedded)
            defer { rig.close() }
            let line = try rig.makeKey("id_tty", ["verify-required"])
            _ = try rig.file("message", "typed at a terminal\n")
            let terminal = try PseudoTerminal()
            try terminal.spawn("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", rig.folder + "/id_tty", "-n", "file", rig.folder + "/message"],
                               stdout: rig.scratch + "/tty.out", environment: rig.environment, scratch: rig.scratch)
            #expect(terminal.blockingWaitForShown("Enter PIN for ECDSA-SK key"), "\(String(decoding: terminal.echoed, as: UTF8.self))")
            terminal.type("\n")
            #expect(terminal.blockingWaitForStderr("Enter: use passcode"), "\(terminal.stderr)")
            terminal.type("\n")
            #expect(terminal.blockingWaitForStderr("Passcode: "), "\(terminal.stderr)")
            terminal.type(CLISandbox.passcode + "\n")
            #expect(terminal.blockingWait() == 0, "\(terminal.stderr)")
            #expect(!String(decoding: terminal.echoed, as: UTF8.self).contains(CLISandbox.passcode), "the passcode was echoed")
            let verified = try rig.verify("message", signature: rig.folder + "/message.sig", publicKey: line)
            #expect(verified.good && verified.flags == 0x05, "\(verified.output)")
        }
    }
}

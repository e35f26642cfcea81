import Foundation
import Glibc
import Testing
import TestRigs

/// `touchstone ssh-key` and `touchstone ssh-agent` with OpenSSH's and git's
/// own programs, the keys in swtpm, touches on the virtual reader. Each test
/// starts its own simulator and agent.
@Suite("ssh keys in the TPM and the agent, with ssh-add, ssh-keygen and git")
struct SSHAgentCLITests {
    /// ssh-add -L's lines (it ends a key without a comment with a space).
    static func lines(_ result: CLIResult) -> [String] {
        result.stdoutText.split(separator: "\n").map { String($0.reversed().drop { $0 == " " }.reversed()) }
    }

    @Test("ssh-add -L and -l list the TPM keys the agent serves (ssh-key create's lines, ssh-key list's fingerprints); a deleted key is no longer offered")
    func addListsTheTPMKeys() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig(enroll: false)
            defer { rig.close() }
            let work = try rig.createKey("work", access: "none", comment: "alice@work")
            let ci = try rig.createKey("ci", access: "none")
            #expect(work.hasPrefix("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABB") && work.hasSuffix(" alice@work"), "\(work)")
            #expect(work != ci)
            try rig.startAgent()
            let listed = rig.run("/usr/bin/ssh-add", ["-L"])
            #expect(listed.code == 0 && Self.lines(listed) == [work, ci], "\(listed.stdoutText) \(listed.stderr)")

            let json = rig.sandbox.run(["--sim", "--json", "ssh-key", "list"])
            let keys = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [[String: Any]], "\(json.stderr)")
            #expect(keys.map { $0["name"] as? String } == ["work", "ci"])
            #expect(keys.allSatisfy { $0["state"] as? String == "ok" && $0["access"] as? String == "none" && $0["created"] is String })
            #expect(Set(keys.flatMap { $0.keys }) == ["name", "fingerprint", "access", "comment", "created", "state", "publicKey"])
            let fingerprints = keys.compactMap { $0["fingerprint"] as? String }
            #expect(fingerprints.count == 2 && fingerprints.allSatisfy { $0.hasPrefix("SHA256:") })
            let prints = rig.run("/usr/bin/ssh-add", ["-l"])
            #expect(prints.code == 0 && fingerprints.allSatisfy { prints.stdoutText.contains($0) } && prints.stdoutText.contains("alice@work (ECDSA)"),
                    "\(prints.stdoutText)")

            #expect(rig.sandbox.run(["--sim", "ssh-key", "delete", "ci"]).code == 0)
            let after = rig.run("/usr/bin/ssh-add", ["-L"])
            #expect(after.code == 0 && Self.lines(after) == [work], "\(after.stdoutText)")
        }
    }

    @Test("ssh-keygen -Y sign with a user-presence key: the enrolled finger's touch signs and -Y verify accepts it; a stranger's touch gets the agent's refusal and no signature")
    func signAfterATouch() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig()
            defer { rig.close() }
            let line = try rig.createKey("git", access: "user-presence", comment: "alice@touchstone")
            try rig.startAgent()
            let pub = try rig.file("git.pub", line + "\n")
            let message = try rig.file("message", "tree 4b825dc6\nauthor alice\n")
            let allowed = try rig.file("allowed_signers", "alice@touchstone " + line + "\n")

            let signed = rig.runTouching(SSHAgentRig.owner, "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "file", message])
            #expect(signed.code == 0, "\(signed.stderr)")
            #expect(rig.agent?.stderrSoFar.contains("/usr/bin/ssh-keygen (ssh-keygen, pid ") == true, "the prompt names the requesting process by its executable")
            let verify = "exec ssh-keygen -Y verify -f \"$1\" -I \"$2\" -n file -s \"$3\" < \"$4\""
            let good = rig.run("/bin/sh", ["-c", verify, "sh", allowed, "alice@touchstone", message + ".sig", message])
            #expect(good.code == 0 && good.stdoutText.contains("Good \"file\" signature for alice@touchstone"), "\(good.stdoutText) \(good.stderr)")
            let otherIdentity = rig.run("/bin/sh", ["-c", verify, "sh", allowed, "bob@touchstone", message + ".sig", message])
            #expect(otherIdentity.code != 0)
            try FileManager.default.removeItem(atPath: message + ".sig")

            let refused = rig.runTouching(SSHAgentRig.stranger, "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "file", message])
            #expect(refused.code != 0 && refused.stderr.contains("agent refused operation"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: message + ".sig"))
            #expect(rig.agent?.stderrSoFar.contains("refused /usr/bin/ssh-keygen (ssh-keygen, pid ") == true)
        }
    }

    @Test("git commit -S with gpg.format=ssh and user.signingkey the key's line: git verify-commit accepts it with the allowed signers file, and refuses it with another key's")
    func gitCommitSigning() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig()
            defer { rig.close() }
            let line = try rig.createKey("git", access: "biometry-any", comment: "alice@example.org")
            let other = try rig.createKey("other", access: "none")
            try rig.startAgent()
            let repository = rig.sandbox.scratch + "/repo"
            let allowed = try rig.file("allowed", "alice@example.org " + line + "\n")
            let wrongAllowed = try rig.file("wrong-allowed", "alice@example.org " + other + "\n")
            let git = ["-C", repository, "-c", "user.name=Alice", "-c", "user.email=alice@example.org", "-c", "gpg.format=ssh",
                       "-c", "user.signingkey=key::" + line, "-c", "gpg.ssh.allowedSignersFile=" + allowed]
            #expect(rig.run("/usr/bin/git", ["init", "-q", repository]).code == 0)
            _ = try rig.file("repo/README", "signed by a touch\n")
            #expect(rig.run("/usr/bin/git", git + ["add", "README"]).code == 0)
            let commit = rig.runTouching(SSHAgentRig.owner, "/usr/bin/git", git + ["commit", "-q", "-S", "-m", "signed"])
            #expect(commit.code == 0, "\(commit.stderr)")
            let verified = rig.run("/usr/bin/git", git + ["verify-commit", "HEAD"])
            #expect(verified.code == 0 && verified.stderr.contains("Good \"git\" signature for alice@example.org"), "\(verified.stderr)")
            var wrong = git
            wrong[wrong.count - 1] = "gpg.ssh.allowedSignersFile=" + wrongAllowed
            let refused = rig.run("/usr/bin/git", wrong + ["verify-commit", "HEAD"])
            #expect(refused.code != 0, "\(refused.stderr)")
        }
    }

    @Test("enrolling another finger invalidates a biometry-current-set key (listed invalidated, no longer offered, ssh-keygen cannot sign) while a user-presence key made before goes on signing with the new finger")
    func currentSetKeyInvalidated() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig()
            defer { rig.close() }
            let current = try rig.createKey("current", access: "biometry-current-set")
            let presence = try rig.createKey("presence", access: "user-presence")
            try rig.startAgent()
            let currentPub = try rig.file("current.pub", current + "\n"), presencePub = try rig.file("presence.pub", presence + "\n")
            let message = try rig.file("message", "hello\n")
            let before = rig.runTouching(SSHAgentRig.owner, "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", currentPub, "-n", "file", message])
            #expect(before.code == 0, "\(before.stderr)")
            try FileManager.default.removeItem(atPath: message + ".sig")

            let enrolled = rig.sandbox.enroll("left-index-finger", as: "alice-left-index")
            #expect(enrolled.code == 0, "\(enrolled.stderr)")
            let list = rig.sandbox.run(["--sim", "ssh-key", "list"]).stdoutText
            #expect(list.contains("current\t") && list.split(separator: "\n").first { $0.hasPrefix("current\t") }?.contains("\tinvalidated\t") == true, "\(list)")
            #expect(list.split(separator: "\n").first { $0.hasPrefix("presence\t") }?.contains("\tok\t") == true, "\(list)")
            let offered = rig.run("/usr/bin/ssh-add", ["-L"])
            #expect(Self.lines(offered) == [presence], "\(offered.stdoutText)")
            let after = rig.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", currentPub, "-n", "file", message])
            #expect(after.code != 0 && !FileManager.default.fileExists(atPath: message + ".sig"), "\(after.stderr)")
            let survivor = rig.runTouching("alice-left-index", "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", presencePub, "-n", "file", message])
            #expect(survivor.code == 0, "\(survivor.stderr)")
        }
    }

    @Test("garbage, an oversized length, a zero length and an unknown request leave the agent serving the TPM keys; SIGTERM: exit 0, the socket removed, stdout only the shell line")
    func badFramesAndSIGTERM() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig(enroll: false)
            defer { rig.close() }
            let line = try rig.createKey("k", access: "none")
            try rig.startAgent()
            #expect(exchange(rig.socket, [0x7f, 0xff, 0xff, 0xff] + [UInt8](repeating: 0x41, count: 64)).map { $0.reply == [] && $0.closed } == true, "an oversized length closes the connection")
            #expect(exchange(rig.socket, [0, 0, 0, 0]).map { $0.reply == [] && $0.closed } == true, "a zero length closes it")
            #expect(exchange(rig.socket, (0..<300).map { _ in UInt8.random(in: 0...255) }) != nil)
            #expect(exchange(rig.socket, [0, 0, 0, 1, 99])?.reply == [0, 0, 0, 1, 5], "an unknown request: FAILURE")
            #expect(exchange(rig.socket, [0, 0, 0, 5, 13, 0, 0, 0, 0])?.reply == [0, 0, 0, 1, 5], "a cut sign request: FAILURE")
            let listed = rig.run("/usr/bin/ssh-add", ["-L"])
            #expect(listed.code == 0 && Self.lines(listed) == [line], "\(listed.stdoutText)")

            let agent = try #require(rig.agent)
            agent.signal(SIGTERM)
            let ended = agent.wait(timeout: 60)
            #expect(ended.code == 0, "\(ended.stderr)")
            #expect(ended.stdoutText == "SSH_AUTH_SOCK=\(rig.socket); export SSH_AUTH_SOCK;\n")
            #expect(!FileManager.default.fileExists(atPath: rig.socket))
        }
    }

    @Test("ssh-key exit codes: 9 for a name taken, 8 for no such key, 7 for a protected key without a passcode, 64 for a bad access spec; create prints one public line, never more")
    func exitCodes() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.run(["--sim", "ssh-key", "create", "k"]).code == 7, "user-presence needs a passcode")
            #expect(sandbox.run(["--sim", "ssh-key", "create", "k", "--access", "sometimes"]).code == 64)
            let made = sandbox.run(["--sim", "ssh-key", "create", "k", "--access", "none"])
            #expect(made.code == 0 && made.stdoutText.split(separator: "\n").count == 1 && made.stdoutText.hasPrefix("ecdsa-sha2-nistp256 "))
            let again = sandbox.run(["--sim", "ssh-key", "create", "k", "--access", "none"])
            #expect(again.code == 9 && again.stderr.contains("an ssh key named 'k' exists"), "\(again.stderr)")
            let missing = sandbox.run(["--sim", "ssh-key", "delete", "nope"])
            #expect(missing.code == 8 && missing.stderr.contains("no ssh key named 'nope'"), "\(missing.stderr)")
            #expect(sandbox.run(["--sim", "ssh-key", "delete", "k"]).code == 0)
            #expect(sandbox.run(["--sim", "ssh-key", "delete", "k"]).code == 8)
            #expect(sandbox.run(["--sim", "ssh-key", "list"]).stdoutText.isEmpty)
        }
    }

    @Test("a passcode key signs with the passcode (here --passcode-fd, one line per signature) and not with a wrong one; after a passcode change it signs with the new one and no longer with the old")
    func passcodeKeyAcrossAChange() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig(enroll: false)
            defer { rig.close() }
            let line = try rig.createKey("pc", access: "passcode")
            let newPasscode = "n3w-passcode"
            let lines = ["wrong-passcode", CLISandbox.passcode, newPasscode, CLISandbox.passcode].map { $0 + "\n" }.joined()
            let agent = try rig.sandbox.start(["--sim", "--passcode-fd", "3", "ssh-agent", "--socket", rig.socket], fd3: Array(lines.utf8))
            defer {
                agent.signal(SIGTERM)
                _ = agent.wait(timeout: 60)
            }
            #expect(agent.waitForStderr("listening on"), "\(agent.stderrSoFar)")
            let pub = try rig.file("pc.pub", line + "\n"), message = try rig.file("message", "m\n")
            func sign() -> Bool {
                try? FileManager.default.removeItem(atPath: message + ".sig")
                let result = rig.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "file", message])
                return result.code == 0 && FileManager.default.fileExists(atPath: message + ".sig")
            }
            #expect(!sign(), "a wrong passcode signs nothing")
            #expect(sign(), "the passcode signs: \(agent.stderrSoFar)")
            let changed = rig.sandbox.run(["--sim", "passcode", "change", "--passcode-fd", "0"],
                                          stdin: Array((CLISandbox.passcode + "\n" + newPasscode + "\n").utf8))
            #expect(changed.code == 0, "\(changed.stderr)")
            #expect(sign(), "the new passcode signs: \(agent.stderrSoFar)")
            #expect(!sign(), "the old passcode no longer does")
        }
    }

    @Test("ssh-key sign: the owner's touch signs stdin and ssh-keygen -Y verify accepts the file (not for another message or namespace); after an enrolment change a current-set key is exit 10, a missing one exit 8")
    func signCommand() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig()
            defer { rig.close() }
            let line = try rig.createKey("current", access: "biometry-current-set", comment: "alice@sign")
            let message = Array("release v1.0\n".utf8)
            let signed = rig.sandbox.withTouch(SSHAgentRig.owner, ["--sim", "ssh-key", "sign", "current", "--namespace", "release"], stdin: message)
            #expect(signed.code == 0 && signed.stdoutText.hasPrefix("-----BEGIN SSH SIGNATURE-----\n")
                    && signed.stdoutText.hasSuffix("-----END SSH SIGNATURE-----\n"), "\(signed.stderr)")
            let signature = try rig.file("message.sig", signed.stdoutText)
            let allowed = try rig.file("allowed", "alice@sign " + line + "\n")
            _ = try rig.file("message", String(decoding: message, as: UTF8.self))
            _ = try rig.file("other", "release v1.1\n")
            func verify(_ file: String, namespace: String) -> Int32 {
                rig.run("/bin/sh", ["-c", "exec ssh-keygen -Y verify -f \"$1\" -I alice@sign -n \"$2\" -s \"$3\" < \"$4\"", "sh",
                                    allowed, namespace, signature, rig.sandbox.scratch + "/" + file]).code
            }
            #expect(verify("message", namespace: "release") == 0)
            #expect(verify("other", namespace: "release") != 0, "another message")
            #expect(verify("message", namespace: "file") != 0, "another namespace")
            let stranger = rig.sandbox.withTouch(SSHAgentRig.stranger, ["--sim", "ssh-key", "sign", "current"], stdin: message)
            #expect(stranger.code == 2 && stranger.stdout.isEmpty, "\(stranger.stderr)")

            #expect(rig.sandbox.enroll("left-index-finger", as: "alice-left").code == 0)
            let invalidated = rig.sandbox.run(["--sim", "ssh-key", "sign", "current"], stdin: message)
            #expect(invalidated.code == 10 && invalidated.stdout.isEmpty && invalidated.stderr.contains("invalidated"), "\(invalidated.stderr)")
            #expect(rig.sandbox.run(["--sim", "ssh-key", "sign", "nope"], stdin: message).code == 8)
        }
    }

    @Test("two programs asking at once: the agent takes them one at a time, one touch each, and both get their signature")
    func twoRequestsAtOnce() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig()
            defer { rig.close() }
            let line = try rig.createKey("k", access: "biometry-any")
            try rig.startAgent()
            let pub = try rig.file("k.pub", line + "\n")
            let first = try rig.file("first", "1\n"), second = try rig.file("second", "2\n")
            let before = rig.touchRequests
            let signing = try [first, second].map {
                try CLIProcess.start(["-Y", "sign", "-f", pub, "-n", "file", $0], environment: rig.sandbox.environment,
                                     scratch: rig.sandbox.scratch, program: "/usr/bin/ssh-keygen")
            }
            for asked in [before, before + 1] {
                #expect(rig.waitForTouchRequest(after: asked), "request \(asked - before + 1) asks for a touch")
                #expect(rig.touchRequests == asked + 1, "one prompt at a time")
                #expect(rig.sandbox.run(["sim", "touch", SSHAgentRig.owner, "--wait", "60"]).code == 0)
            }
            let results = signing.map { $0.wait() }
            #expect(results.allSatisfy { $0.code == 0 }, "\(results.map(\.stderr))")
            #expect([first, second].allSatisfy { FileManager.default.fileExists(atPath: $0 + ".sig") })
        }
    }
}

// @unchecked Sendable: one test's rig, its blocking steps run one at a time off the pool.
extension SSHAgentRig: @unchecked Sendable {}

@Suite("touchstone ssh-agent without a terminal")
struct SSHAgentPinentryTests {
    @Test("without a terminal, a passcode key's signature asks pinentry, whose dialog names the requesting process: a wrong passcode signs nothing, the right one signs (ssh-keygen -Y verify accepts it); a desktop notification says who asks")
    func pinentryAndNotification() async throws {
        let bus = try DBusRig()
        defer { bus.close() }
        let notifications = try await NotificationRecorder(address: bus.address)
        let rig = try await offPool { try SSHAgentRig(enroll: false) }
        let answers = rig.sandbox.scratch + "/pinentry-answers", log = rig.sandbox.scratch + "/pinentry-log"
        try "wrong-passcode\n".write(toFile: answers, atomically: true, encoding: .utf8)
        rig.sandbox.extraEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        rig.sandbox.extraEnvironment["TOUCHSTONE_PINENTRY"] = URL(fileURLWithPath: SecretServiceRig.client).deletingLastPathComponent()
            .appendingPathComponent("scripted-pinentry.py").path
        rig.sandbox.extraEnvironment["SCRIPTED_PINENTRY_ANSWERS"] = answers
        rig.sandbox.extraEnvironment["SCRIPTED_PINENTRY_LOG"] = log
        let line = try await offPool { try rig.createKey("door", access: "passcode", comment: "ada@touchstone") }
        try await offPool { try rig.startAgent() }
        let pub = try rig.file("door.pub", line + "\n")
        let message = try rig.file("message", "tree 4b825dc6\n")
        let allowed = try rig.file("allowed_signers", "ada@touchstone " + line + "\n")
        let sign = ["-Y", "sign", "-f", pub, "-n", "file", message]

        let wrong = try await offPool { rig.run("/usr/bin/ssh-keygen", sign) }
        #expect(wrong.code != 0 && !FileManager.default.fileExists(atPath: message + ".sig"), "\(wrong.stderr)")
        let dialog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(dialog.contains("GETPIN") && dialog.contains("ssh-keygen") && dialog.contains("door"), "\(dialog)")

        try "\(CLISandbox.passcode)\n".write(toFile: answers, atomically: true, encoding: .utf8)
        let right = try await offPool { rig.run("/usr/bin/ssh-keygen", sign) }
        #expect(right.code == 0, "\(right.stderr) \(rig.agent?.stderrSoFar ?? "")")
        let verify = "exec ssh-keygen -Y verify -f \"$1\" -I \"$2\" -n file -s \"$3\" < \"$4\""
        let good = try await offPool { rig.run("/bin/sh", ["-c", verify, "sh", allowed, "ada@touchstone", message + ".sig", message]) }
        #expect(good.code == 0 && good.stdoutText.contains("Good \"file\" signature for ada@touchstone"), "\(good.stdoutText) \(good.stderr)")
        #expect(try await eventually { notifications.notifications.contains { $0.body.contains("ssh-keygen") && $0.body.contains("door") } },
                "\(notifications.notifications)")
        _ = try? await offPool { rig.close() }
    }
}

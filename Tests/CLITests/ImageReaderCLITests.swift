import Foundation
import Glibc
import TestRigs
import Testing
import TouchstoneSimulator

/// The simulator's image reader (`sim start --reader-kind image`): every
/// touch a synthetic impression through libfprint's image pipeline
/// (minutiae with NBIS, matching with bozorth3), through the CLI as a
/// person would use it. Impressions are counted per finger from 1 in a
/// fresh sandbox, so each test sees the same images every run.
@Suite("The simulator's image reader, through the CLI")
struct ImageReaderCLITests {
    /// A sandbox whose simulator has the image reader; `daemon`: with its touchstoned.
    static func sandbox(daemon: Bool = false) throws -> CLISandbox {
        let sandbox = try CLISandbox(startSimulator: false)
        sandbox.extraEnvironment["TOUCHSTONE_TIMEOUT"] = CLISandbox.imageTouchTimeout
        sandbox.imageReader = true
        let started = sandbox.run(["sim", "start", "--reader-kind", "image"] + (daemon ? ["--daemon"] : []))
        guard started.code == 0 else { throw RigFailure("sim start --reader-kind image: \(started.stderr)") }
        return sandbox
    }

    @Test("enrolled with five impressions of alice's finger: verify and get open with new impressions of it; bob's and carol's impressions open nothing (exit 2); sim status says the image reader")
    func enrolVerifyGet() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            #expect(sandbox.run(["--json", "sim", "status"]).stdoutText.contains(#""readerKind":"image""#))
            #expect(sandbox.run(["--sim", "status"]).stdoutText.contains("virtual_image"))
            #expect(sandbox.setPasscode().code == 0)
            let enrolled = sandbox.enrollImages("right-index-finger", as: "alice")
            #expect(enrolled.code == 0, "\(enrolled.stderr)")
            #expect(sandbox.run(["--sim", "add", "bank", "me", "--access", "biometry-current-set"], stdin: Array("s3cret".utf8)).code == 0)

            #expect(sandbox.withTouch("alice", ["--sim", "verify"]).code == 0)
            let got = sandbox.withTouch("alice", ["--sim", "get", "bank", "me"])
            #expect(got.code == 0 && got.stdoutText == "s3cret", "\(got.code): \(got.stderr)")
            for stranger in ["bob", "carol"] {
                let refused = sandbox.withTouch(stranger, ["--sim", "get", "bank", "me"])
                #expect(refused.code == 2 && refused.stdout.isEmpty, "\(stranger): \(refused.code) \(refused.stderr)")
            }
            #expect(sandbox.withTouch("alice", ["--sim", "get", "bank", "me"]).stdoutText == "s3cret", "the owner still opens")
        }
    }

    @Test("five strangers' impressions lock biometry (exit 6), the passcode clears it, and the owner's impression then opens; a second enrolled finger invalidates the current-set item (exit 10) and not the any-finger one")
    func lockoutAndInvalidation() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enrollImages("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "web", "current", "--access", "biometry-current-set"], stdin: Array("current".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "add", "web", "any", "--access", "biometry-any"], stdin: Array("any".utf8)).code == 0)
            for stranger in ["s1", "s2", "s3", "s4"] {
                #expect(sandbox.withTouch(stranger, ["--sim", "verify"]).code == 2)
            }
            #expect(sandbox.withTouch("s5", ["--sim", "verify"]).code == 6)
            #expect(sandbox.run(["--sim", "verify"]).code == 6)
            #expect(sandbox.run(["--sim", "verify", "--allow-passcode", "--passcode-fd", "0"],
                                stdin: CLISandbox.line(CLISandbox.passcode)).code == 0)
            #expect(sandbox.withTouch("alice", ["--sim", "get", "web", "current"]).stdoutText == "current")

            #expect(sandbox.enrollImages("right-thumb", as: "alice-thumb").code == 0)
            #expect(sandbox.run(["--sim", "get", "web", "current"]).code == 10)
            #expect(sandbox.withTouch("alice-thumb", ["--sim", "get", "web", "any"]).stdoutText == "any")
        }
    }

    @Test("an unreadable image is never a match: a blank one (no minutiae) makes the reader ask again (the retry hint, no libfprint warning on the terminal), and the owner's impression then opens; one of noise is refused (exit 2)")
    func unreadableImages() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enrollImages("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "bank", "me", "--access", "biometry-any"], stdin: Array("s3cret".utf8)).code == 0)
            let blank = sandbox.scratch + "/blank.png"
            let noise = sandbox.scratch + "/noise.png"
            try Data(GreyImage(width: 320, height: 440, pixels: [UInt8](repeating: 230, count: 320 * 440)).png()).write(to: URL(fileURLWithPath: blank))
            // The same noise every run (a linear congruential sequence).
            var state: UInt32 = 12345
            let pixels = (0..<(320 * 440)).map { _ -> UInt8 in
                state = state &* 1_103_515_245 &+ 12345
                return UInt8(truncatingIfNeeded: state >> 16)
            }
            try Data(GreyImage(width: 320, height: 440, pixels: pixels).png()).write(to: URL(fileURLWithPath: noise))

            let waiting = try sandbox.start(["--sim", "get", "bank", "me"])
            #expect(waiting.waitForStderr("touch the reader"))
            #expect(sandbox.run(["sim", "touch", "--image", blank, "--wait", "60"]).code == 0)
            #expect(waiting.waitForStderr("try again"), "\(waiting.stderrSoFar)")
            #expect(sandbox.run(["sim", "touch", "alice", "--wait", "60"]).code == 0)
            let opened = waiting.wait()
            #expect(opened.code == 0 && opened.stdoutText == "s3cret", "\(opened.code): \(opened.stderr)")
            #expect(!opened.stderr.contains("WARNING"), "\(opened.stderr)")

            let refusing = try sandbox.start(["--sim", "get", "bank", "me"])
            #expect(refusing.waitForStderr("touch the reader"))
            #expect(sandbox.run(["sim", "touch", "--image", noise, "--wait", "60"]).code == 0)
            let refused = refusing.wait()
            #expect(refused.code == 2 && refused.stdout.isEmpty, "\(refused.code): \(refused.stderr)")
        }
    }

    @Test("matching --touches 2 (with the passcode; a wrong one changes nothing): a get opens after two impressions of the enrolled finger, not after the owner's then a stranger's (exit 2, the failure counted); status shows it, and --touches 1 brings one touch back")
    func twoTouches() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enrollImages("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "bank", "me", "--access", "biometry-current-set"], stdin: Array("s3cret".utf8)).code == 0)
            #expect(sandbox.run(["--sim", "matching"]).stdoutText == "1\n")
            #expect(sandbox.withTouch("alice", ["--sim", "get", "bank", "me"]).stdoutText == "s3cret", "one touch opens by default")

            let wrong = sandbox.run(["--sim", "matching", "--touches", "2", "--passcode-fd", "0"], stdin: CLISandbox.line("not-it"))
            #expect(wrong.code == 2, "\(wrong.stderr)")
            #expect(sandbox.run(["--sim", "matching"]).stdoutText == "1\n", "a wrong passcode changed nothing")
            let set = sandbox.run(["--sim", "matching", "--touches", "2", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode))
            #expect(set.code == 0, "\(set.stderr)")
            #expect(sandbox.run(["--sim", "--json", "matching"]).stdoutText == #"{"touches":2}"# + "\n")
            let status = sandbox.run(["--sim", "status"]).stdoutText
            #expect(status.contains("matching:  2 touches of one finger"), "\(status)")
            #expect(sandbox.run(["--sim", "--json", "status"]).stdoutText.contains(#""matchingTouches":2"#))

            let opened = sandbox.withTouches(["alice", "alice"], ["--sim", "get", "bank", "me"])
            #expect(opened.code == 0 && opened.stdoutText == "s3cret", "\(opened.code): \(opened.stderr)")
            #expect(opened.stderr.contains("Touch 1 of 2 matched\n") && opened.stderr.contains("(touch 2 of 2: the same finger again)"),
                    "\(opened.stderr)")
            let refused = sandbox.withTouches(["alice", "bob"], ["--sim", "get", "bank", "me"])
            #expect(refused.code == 2 && refused.stdout.isEmpty, "\(refused.code): \(refused.stderr)")
            #expect(refused.stderr.contains("Touch 1 of 2 matched"), "the first touch matched: \(refused.stderr)")
            #expect(sandbox.run(["--sim", "--json", "status"]).stdoutText.contains(#""failedAttempts":1"#), "the second touch's failure counts")

            #expect(sandbox.run(["--sim", "matching", "--touches", "1", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode)).code == 0)
            let once = sandbox.withTouch("alice", ["--sim", "get", "bank", "me"])
            #expect(once.stdoutText == "s3cret" && !once.stderr.contains("matched"), "\(once.stderr)")
        }
    }

    /// A pair `TouchstoneBench matching --fingers 100` found: impression 6
    /// of finger bench-match-4 matches bench-match-41 enrolled with its
    /// impressions 1-5 (score 43), its impression 7 does not (36).
    static let lookalike = (enrolled: "bench-match-41", stranger: "bench-match-4")

    @Test("a lookalike stranger whose impression libfprint matches opens the item with one touch, and with matching --touches 2 is refused at the second touch, where the owner's two touches open")
    func lookalikeStopsAtTheSecondTouch() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enrollImages("right-index-finger", as: Self.lookalike.enrolled).code == 0)
            #expect(sandbox.run(["--sim", "add", "bank", "me", "--access", "biometry-current-set"], stdin: Array("s3cret".utf8)).code == 0)
            var images: [String] = []
            for impression in [6, 7] {
                let file = sandbox.scratch + "/stranger-\(impression).png"
                #expect(sandbox.run(["sim", "print", Self.lookalike.stranger, "--impression", "\(impression)", "--output", file]).code == 0)
                images.append(file)
            }

            let fooled = sandbox.withTouches(sending: [["--image", images[0]]], ["--sim", "get", "bank", "me"])
            #expect(fooled.code == 0 && fooled.stdoutText == "s3cret", "one touch: libfprint's false match opens it (\(fooled.code): \(fooled.stderr))")

            #expect(sandbox.run(["--sim", "matching", "--touches", "2", "--passcode-fd", "0"], stdin: CLISandbox.line(CLISandbox.passcode)).code == 0)
            let refused = sandbox.withTouches(sending: [["--image", images[0]], ["--image", images[1]]], ["--sim", "get", "bank", "me"])
            #expect(refused.code == 2 && refused.stdout.isEmpty, "\(refused.code): \(refused.stderr)")
            #expect(refused.stderr.contains("Touch 1 of 2 matched"), "the first touch fooled the matcher again: \(refused.stderr)")
            let opened = sandbox.withTouches([Self.lookalike.enrolled, Self.lookalike.enrolled], ["--sim", "get", "bank", "me"])
            #expect(opened.code == 0 && opened.stdoutText == "s3cret", "\(opened.code): \(opened.stderr)")
        }
    }

    @Test("through the simulator's touchstoned (sim start --reader-kind image --daemon): enrolment, a get opened by the owner's impression, a stranger's refused")
    func throughTheDaemon() async throws {
        try await blockingTest {
            let sandbox = try Self.sandbox(daemon: true)
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enrollImages("right-index-finger", as: "alice").code == 0)
            #expect(sandbox.run(["--sim", "add", "bank", "me", "--access", "biometry-current-set"], stdin: Array("s3cret".utf8)).code == 0)
            #expect(sandbox.withTouch("alice", ["--sim", "get", "bank", "me"]).stdoutText == "s3cret")
            #expect(sandbox.withTouch("bob", ["--sim", "get", "bank", "me"]).code == 2)
            let log = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(log.contains("enroll: ok") && log.contains("get: ok"), "the daemon served it: \(log)")
        }
    }
}

extension CLISandbox {
    /// How long the image reader's tests wait for a touch (`--timeout`):
    /// a finger's first impression grows its master print (`growFinger`
    /// does it ahead; far longer on a machine busy with the whole suite), and what
    /// these tests check is the match, never the timeout.
    static let imageTouchTimeout = "600"

    /// Runs a command that waits for touches: the first of `ids` once it
    /// asks for a touch, each next one once it asks again (after a match);
    /// returns its result when it ends.
    func withTouches(_ ids: [String], _ arguments: [String]) -> CLIResult {
        withTouches(sending: ids.map { [$0] }, arguments)
    }

    /// The same with what `sim touch` is given for each touch (a finger's
    /// id, or `--image FILE`).
    func withTouches(sending touches: [[String]], _ arguments: [String]) -> CLIResult {
        for touch in touches where touch.first?.hasPrefix("-") == false { growFinger(touch[0]) }
        guard let waiting = try? start(arguments) else { return CLIResult(code: -1, stdout: [], stderr: "cannot start") }
        for (index, touch) in touches.enumerated() {
            let asked = index == 0 ? "touch the reader" : "(touch \(index + 1) of \(touches.count): the same finger again)"
            guard waiting.waitForStderr(asked) else { return waiting.wait() }
            let sent = run(["sim", "touch"] + touch + ["--wait", "60"])
            guard sent.code == 0 else { return CLIResult(code: -1, stdout: [], stderr: "sim touch: \(sent.stderr)") }
        }
        return waiting.wait()
    }

    /// Enrols `finger` with impressions of simulated finger `id` on the
    /// image reader, one at a time: each sent once the enrolment showed the
    /// previous one's progress (the image pipeline takes the next image
    /// only after it dealt with the last).
    func enrollImages(_ finger: String, as id: String) -> CLIResult {
        growFinger(id)
        guard let enrolling = try? start(["--sim", "--timeout", Self.imageTouchTimeout, "enroll", finger, "--passcode-fd", "0"],
                                         stdin: Self.line(Self.passcode)) else {
            return CLIResult(code: -1, stdout: [], stderr: "cannot start enroll")
        }
        /// Lines of progress so far: stages ("Touch N of M") and retry hints.
        func progress() -> Int {
            enrolling.stderrSoFar.split(separator: "\n").filter { $0.hasPrefix("Touch ") || $0.hasPrefix("  ") }.count
        }
        for _ in 0..<20 where enrolling.poll() == nil {
            let before = progress()
            guard run(["sim", "touch", id, "--wait", "30"]).code == 0 else { break }
            // Its progress (a stage, or a retry hint), or the end.
            _ = blockingEventually { enrolling.poll() != nil || progress() > before }
        }
        return enrolling.wait()
    }
}

/// The other programs that open the simulator's reader, on the image reader.
@Suite("The simulator's image reader, through the Secret Service provider")
struct ImageReaderSecretServiceTests {
    @Test("the Secret Service provider on the image reader: secret-tool's lookup of a gated item waits for a touch, and an impression of the enrolled finger opens it; a stranger's impression opens nothing")
    func secretServiceProvider() async throws {
        try await SecretServiceRig.with() { rig in
            rig.sandbox.extraEnvironment["TOUCHSTONE_TIMEOUT"] = CLISandbox.imageTouchTimeout
            rig.sandbox.imageReader = true
            #expect(await rig.cli(["sim", "start", "--reader-kind", "image"]).code == 0)
            #expect(await rig.setPasscode().code == 0)
            let enrolled = try await offPool { rig.sandbox.enrollImages("right-index-finger", as: "alice") }
            #expect(enrolled.code == 0, "\(enrolled.stderr)")
            try await rig.startProvider(["--access", "biometry-any"])
            #expect(await rig.secretTool(["store", "--label=Bank", "service", "bank", "account", "ada"], stdin: "pin-1234").code == 0)

            let lookup = try rig.start("/usr/bin/secret-tool", ["lookup", "service", "bank", "account", "ada"])
            #expect(await rig.touchWhenAsked("alice", occurrence: 1), "\(rig.log)")
            let opened = await rig.wait(lookup)
            #expect(opened.code == 0 && opened.stdoutText == "pin-1234", "\(opened.stderr) \(rig.log)")

            try await offPool { rig.sandbox.growFinger("mallory") }
            let stranger = try rig.start("/usr/bin/secret-tool", ["lookup", "service", "bank", "account", "ada"])
            #expect(await rig.touchWhenAsked("mallory", occurrence: 2), "\(rig.log)")
            let refused = await rig.wait(stranger)
            #expect(refused.code != 0 && refused.stdout.isEmpty, "\(refused.stdoutText) \(rig.log)")
        }
    }
}

/// The ssh-agent on the image reader.
@Suite("The simulator's image reader, through the ssh-agent")
struct ImageReaderSSHAgentTests {
    @Test("the ssh-agent on the image reader: ssh-keygen -Y sign with a user-presence key is signed after an impression of the enrolled finger, and refused after a stranger's")
    func sshAgent() async throws {
        try await blockingTest {
            let rig = try SSHAgentRig(imageReader: true)
            defer { rig.close() }
            let line = try rig.createKey("git", access: "user-presence", comment: "alice@touchstone")
            try rig.startAgent()
            let pub = try rig.file("git.pub", line + "\n")
            let message = try rig.file("message", "tree 4b825dc6\nauthor alice\n")
            let signed = rig.runTouching(SSHAgentRig.owner, "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "file", message])
            #expect(signed.code == 0 && FileManager.default.fileExists(atPath: message + ".sig"), "\(signed.stderr)")
            try FileManager.default.removeItem(atPath: message + ".sig")
            let refused = rig.runTouching(SSHAgentRig.stranger, "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "file", message])
            #expect(refused.code != 0 && !FileManager.default.fileExists(atPath: message + ".sig"), "\(refused.stderr)")
        }
    }
}

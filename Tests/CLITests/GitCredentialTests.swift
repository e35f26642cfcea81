import Foundation
import Testing
import TestRigs

/// git-credential-touchstone under Debian's git (docs/git.md): `git
/// credential fill`, `approve` and `reject` through `credential.helper
/// "touchstone --access X"`, each test with its own simulator.
@Suite("git-credential-touchstone: with git on the simulator")
struct GitCredentialTests {
    static let host = ["protocol": "https", "host": "git.example.com"]

    static func with(_ fields: [String: String], _ more: [String: String]) -> [String: String] {
        fields.merging(more) { _, new in new }
    }

    @Test("--access none: approve stores an item git:https://HOST / USER that list shows; fill gives it back; approve again replaces it (one item); another host falls through to the next helper; reject erases it and fill falls through")
    func ungatedRoundTrip() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let git = try GitRig(sandbox, helpers: ["touchstone --access none", GitRig.fallback])
            let alice = Self.with(Self.host, ["username": "alice", "password": "t0ken-1"])

            #expect(git.approve(alice).code == 0)
            #expect(git.items().map { [$0["service"], $0["account"], $0["access"], $0["label"]] }
                    == [["git:https://git.example.com", "alice", "none", "git credential for alice"]])

            let (filled, fields) = git.fill(Self.host)
            #expect(filled.code == 0, "\(filled.stderr)")
            #expect(fields["username"] == "alice" && fields["password"] == "t0ken-1", "\(fields)")

            // git stores after every use: the same item, its secret replaced.
            #expect(git.approve(Self.with(alice, ["password": "t0ken-2"])).code == 0)
            #expect(git.items().count == 1)
            #expect(git.fill(Self.with(Self.host, ["username": "alice"])).1["password"] == "t0ken-2")

            // Another host, or a port, is another item: none here, so git asks the next helper.
            let other = git.fill(["protocol": "https", "host": "git.example.com:8443"])
            #expect(other.1["username"] == "fallback" && other.1["password"] == "from-fallback", "\(other)")

            #expect(git.reject(alice).code == 0)
            #expect(git.items().isEmpty)
            let gone = git.fill(Self.host)
            #expect(gone.1["username"] == "fallback" && gone.1["password"] == "from-fallback", "\(gone)")
        }
    }

    @Test("get without a username gives the host's item stored last; with a username, that one; reject without a username erases every item of the host and no other; credential.useHttpPath keeps one item per path")
    func severalItems() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let git = try GitRig(sandbox, helpers: ["touchstone --access none"])
            let elsewhere = ["protocol": "https", "host": "other.example.com", "username": "carol", "password": "c"]
            #expect(git.approve(Self.with(Self.host, ["username": "alice", "password": "a"])).code == 0)
            #expect(git.approve(Self.with(Self.host, ["username": "bob", "password": "b"])).code == 0)
            #expect(git.approve(elsewhere).code == 0)

            #expect(git.fill(Self.host).1 == Self.with(Self.host, ["username": "bob", "password": "b"]))
            #expect(git.fill(Self.with(Self.host, ["username": "alice"])).1["password"] == "a")
            // alice used and stored again: now hers is the last.
            #expect(git.approve(Self.with(Self.host, ["username": "alice", "password": "a"])).code == 0)
            #expect(git.fill(Self.host).1["username"] == "alice")

            #expect(git.reject(Self.host).code == 0)
            #expect(git.items().map { $0["service"] } == ["git:https://other.example.com"])

            let paths = try GitRig(sandbox, helpers: ["touchstone --access none"], extraConfig: "\tuseHttpPath = true\n")
            let one = ["protocol": "https", "host": "git.example.com", "path": "team/one.git"]
            let two = ["protocol": "https", "host": "git.example.com", "path": "team/two.git"]
            #expect(paths.approve(Self.with(one, ["username": "dev", "password": "p1"])).code == 0)
            #expect(paths.approve(Self.with(two, ["username": "dev", "password": "p2"])).code == 0)
            #expect(paths.run(["credential", "fill"], stdin: Array("url=https://git.example.com/team/two.git\n\n".utf8))
                .stdoutText.contains("password=p2\n"))
            #expect(paths.fill(one).1["password"] == "p1")
            #expect(Set(paths.items().compactMap { $0["service"] })
                    == ["git:https://other.example.com", "git:https://git.example.com/team/one.git", "git:https://git.example.com/team/two.git"])
        }
    }

    @Test("gated (user-presence, biometry-any): approve needs no touch; fill waits for one, a matching touch gives the password, a stranger's gives git nothing (the helper says why on stderr and git asks the next helper); approve after a use replaces the item without a touch", arguments: ["user-presence", "biometry-any"])
    func gated(_ access: String) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let git = try GitRig(sandbox, helpers: ["touchstone --access \(access)", GitRig.fallback])
            let alice = Self.with(Self.host, ["username": "alice", "password": "gated-token"])

            let stored = git.approve(alice)
            #expect(stored.code == 0, "\(stored.stderr)")
            #expect(!stored.stderr.contains("touch the reader"))
            #expect(git.items().map { [$0["account"], $0["access"]] } == [["alice", access]])

            let (matched, fields) = git.fill(Self.host, touch: "alice")
            #expect(matched.code == 0, "\(matched.stderr)")
            #expect(matched.stderr.contains("git wants the password of alice for https://git.example.com"))
            #expect(fields["username"] == "alice" && fields["password"] == "gated-token", "\(fields)")

            let (stranger, strangerFields) = git.fill(Self.host, touch: "mallory")
            #expect(stranger.stderr.contains("touchstone: error: authentication failed: the finger did not match"), "\(stranger.stderr)")
            #expect(strangerFields["password"] == "from-fallback", "\(strangerFields)")
            #expect(!stranger.stdoutText.contains("gated-token"))

            // What git does after a successful use: store again. No touch; the item stays gated.
            let again = git.approve(Self.with(alice, ["password": "rotated-token"]))
            #expect(again.code == 0, "\(again.stderr)")
            #expect(!again.stderr.contains("touch the reader"))
            let after = try #require(git.items().first)
            #expect(git.items().count == 1)
            #expect(after["access"] == access)
            let (rotated, rotatedFields) = git.fill(Self.host, touch: "alice")
            #expect(rotated.code == 0, "\(rotated.stderr)")
            #expect(rotatedFields["password"] == "rotated-token")
        }
    }

    @Test("biometry-current-set after an enrolment change: get is exit 10 with no touch asked and git falls through; the store after that use replaces the item, which a touch of the new set opens")
    func invalidatedThenStoredAgain() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let git = try GitRig(sandbox, helpers: ["touchstone --access biometry-current-set", GitRig.fallback])
            let alice = Self.with(Self.host, ["username": "alice", "password": "current-set"])
            #expect(git.approve(alice).code == 0)
            #expect(git.fill(Self.host, touch: "alice").1["password"] == "current-set")

            #expect(sandbox.enroll("right-thumb", as: "bob").code == 0)
            let invalidated = git.helper(["get"], request: GitRig.request(Self.host))
            #expect(invalidated.code == 10, "\(invalidated.stderr)")
            #expect(!invalidated.stderr.contains("touch the reader"))
            #expect(invalidated.stdout.isEmpty)
            #expect(git.fill(Self.host).1["password"] == "from-fallback")
            #expect(git.items().first?["state"] == "invalidated")

            // The password that worked (here the fallback's) is stored again: a fresh item for the new set.
            #expect(git.approve(Self.with(alice, ["password": "stored-again"])).code == 0)
            #expect(git.items().map { [$0["access"], $0["state"]] } == [["biometry-current-set", "ok"]])
            let (opened, fields) = git.fill(Self.host, touch: "bob")
            #expect(opened.code == 0, "\(opened.stderr)")
            #expect(fields["password"] == "stored-again")
        }
    }

    @Test("a passcode-only item: without a terminal the helper fails clearly (exit 14) and git falls through; with --passcode-fd 3 in credential.helper (git's helpers inherit descriptor 3) the passcode opens it")
    func passcodeWithoutTerminal() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            let git = try GitRig(sandbox, helpers: ["touchstone --access passcode", GitRig.fallback])
            #expect(git.approve(Self.with(Self.host, ["username": "alice", "password": "pc-token"])).code == 0)

            let direct = git.helper(["get"], request: GitRig.request(Self.host))
            #expect(direct.code == 14)
            #expect(direct.stderr.contains("there is no terminal to ask it on"), "\(direct.stderr)")
            #expect(direct.stdout.isEmpty)
            let fellThrough = git.fill(Self.host)
            #expect(fellThrough.1["password"] == "from-fallback")

            let withDescriptor = try GitRig(sandbox, helpers: ["touchstone --access passcode --passcode-fd 3", GitRig.fallback])
            let opened = withDescriptor.run(["credential", "fill"], stdin: GitRig.request(Self.host), fd3: CLISandbox.line(CLISandbox.passcode))
            #expect(opened.code == 0, "\(opened.stderr)")
            #expect(GitRig.fields(opened.stdoutText)["password"] == "pc-token")
        }
    }

    @Test("at a terminal: while a touch is awaited, Enter on the terminal (/dev/tty) asks for the passcode, typed there with echo off, and git gets the password; git's stdin and stdout carry only the protocol")
    func passcodeAtTheTerminal() async throws {
        // On a thread of its own, the waits blocking: the Enter must come
        // within the touch prompt's 30 s (TerminalTests says why).
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let git = try GitRig(sandbox, helpers: ["touchstone --access user-presence", GitRig.fallback])
            #expect(git.approve(Self.with(Self.host, ["username": "alice", "password": "typed-for"])).code == 0)

            let request = sandbox.scratch + "/request"
            try Data(GitRig.request(Self.host)).write(to: URL(fileURLWithPath: request))
            let stdoutPath = sandbox.scratch + "/fill.out"
            let terminal = try PseudoTerminal()
            // git's stdin is the request file; the terminal is only the controlling one.
            try terminal.spawn("/bin/sh", ["-c", "exec \(GitRig.git) credential fill < \"$0\"", request], stdout: stdoutPath,
                               environment: git.environment, scratch: sandbox.scratch)
            #expect(terminal.blockingWaitForStderr("Enter: use passcode"), "\(terminal.stderr)")
            terminal.type("\n")
            #expect(terminal.blockingWaitForStderr("Passcode: "), "\(terminal.stderr)")
            terminal.type(CLISandbox.passcode + "\n")
            #expect(terminal.blockingWait() == 0, "\(terminal.stderr)")
            let fields = GitRig.fields((try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "")
            #expect(fields["username"] == "alice" && fields["password"] == "typed-for", "\(fields)")
            let echoed = String(decoding: terminal.echoed, as: UTF8.self)
            #expect(echoed.contains("\r\n"), "nothing echoed at all")
            #expect(!echoed.contains(CLISandbox.passcode), "the passcode was echoed: \(echoed)")
        }
    }

    @Test("through the simulator's touchstoned (sim start --daemon): approve, a gated fill with a matching touch, reject; the daemon's log shows the calls and the embedded vault has no such item")
    func daemonEngine() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let started = sandbox.run(["sim", "start", "--daemon"])
            #expect(started.code == 0, "\(started.stderr)")
            #expect(sandbox.setPasscode().code == 0)
            #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
            let git = try GitRig(sandbox, helpers: ["touchstone --access biometry-any", GitRig.fallback])
            let alice = Self.with(Self.host, ["username": "alice", "password": "daemon-token"])

            #expect(git.approve(alice).code == 0)
            let (matched, fields) = git.fill(Self.host, touch: "alice")
            #expect(matched.code == 0, "\(matched.stderr)")
            #expect(fields["password"] == "daemon-token", "\(fields)")
            let log = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(log.contains("add: ok") && log.contains("get: ok"), "\(log)")
            #expect(sandbox.run(["--sim", "--embedded", "list"]).stdoutText.isEmpty)
            #expect(git.items().count == 1)

            #expect(git.reject(alice).code == 0)
            #expect(git.items().isEmpty)
        }
    }
}

import Foundation
import Glibc
import TestRigs
import Testing

/// `touchstone import --from-secret-service` from the real programs: Debian's
/// gnome-keyring-daemon on the test's private bus (its login keyring
/// unlocked with a password on stdin, as PAM does, and a second keyring),
/// or Debian's KeePassXC (two databases, headless), items made by
/// secret-tool and python secretstorage, imported, then served by
/// `touchstone secret-service` on the same bus and read back.
@Suite("Moving in from another Secret Service")
struct SecretServiceImportTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/secret-service-import.py").path

    static func fixture(_ rig: SecretServiceRig, _ arguments: [String]) async -> CLIResult {
        await rig.run("/usr/bin/python3", [script] + arguments)
    }

    /// Imports from the source on the bus, checked: a dry run first (it
    /// would add all `count` items, and adds nothing), the import (all
    /// added, the alias `default` naming `defaultAlias`), then a second
    /// import that adds nothing (all skipped); the source's dump still
    /// `source`. The import's result.
    @discardableResult
    static func importTwice(_ rig: SecretServiceRig, count: Int, defaultAlias: String, source: CLIResult) async throws -> CLIResult {
        let dry = await rig.cli(["--sim", "import", "--from-secret-service", "--dry-run"])
        #expect(dry.code == 0 && dry.stdoutText.contains("found \(count), would add \(count), skipped 0, failed 0"), "\(dry.stdoutText) \(dry.stderr)")
        #expect(await rig.cli(["--sim", "list"]).stdoutText.isEmpty, "a dry run adds nothing")
        let imported = await rig.cli(["--sim", "import", "--from-secret-service"])
        #expect(imported.code == 0 && imported.stdoutText.contains("found \(count), added \(count), skipped 0, failed 0"),
                "\(imported.stdoutText) \(imported.stderr)")
        #expect(imported.stdoutText.contains("the alias default now names \(defaultAlias)"), "\(imported.stdoutText)")
        let again = await rig.cli(["--sim", "--json", "import", "--from-secret-service"])
        let report = try JSONSerialization.jsonObject(with: Data(again.stdout)) as? [String: Any]
        #expect(again.code == 0 && report?["added"] as? Int == 0 && (report?["skipped"] as? [Any])?.count == count, "\(again.stdoutText)")
        #expect(await fixture(rig, ["dump"]).stdoutText == source.stdoutText, "the source is unchanged")
        return imported
    }

    /// A dump's item lines (its `# LABEL locked=B` lines left out).
    static func items(_ dump: CLIResult) -> [String] {
        dump.stdoutText.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") }
    }

    @Test("gnome-keyring's login and second keyring (binary, empty, 64 KiB and non-ASCII secrets; secret-tool's Chromium key) imported whole, labels, attributes and collections kept; a second import adds nothing; the source unchanged; served by touchstone after gnome-keyring stops, read back byte for byte by secretstorage, secret-tool and the CLI; through both engines",
          arguments: [false, true])
    func fromGnomeKeyring(daemon: Bool) async throws {
        try await SecretServiceRig.with(daemon: daemon) { rig in
            #expect(await rig.setPasscode().code == 0)
            let keyring = try await offPool { try GnomeKeyring(rig: rig, extraKeyrings: ["Work"]) }
            defer { keyring.kill() }
            #expect(await rig.secretTool(["store", "--label=Chrome Safe Storage", "application", "chrome"], stdin: "chrome-key-✓").code == 0)
            let populated = await Self.fixture(rig, ["populate", "Work"])
            #expect(populated.code == 0, "\(populated.stderr)")
            let before = await Self.fixture(rig, ["dump"])
            #expect(before.code == 0 && Self.items(before).count == 6, "\(before.stdoutText) \(before.stderr)")
            #expect(before.stdoutText.contains("# Work locked=True"), "a locked source collection: \(before.stdoutText)")

            try await Self.importTwice(rig, count: 6, defaultAlias: "Login", source: before)

            // gnome-keyring out, touchstone in, on the same bus.
            try await offPool { keyring.stop() }
            try await rig.startProvider()
            let after = await Self.fixture(rig, ["dump"])
            #expect(Self.items(after) == Self.items(before), "before:\n\(before.stdoutText)\nafter:\n\(after.stdoutText)\n\(after.stderr)")
            let chrome = await rig.secretTool(["lookup", "application", "chrome"])
            #expect(chrome.stdoutText == "chrome-key-✓", "Chromium's key: \(chrome.stderr)")
            #expect(await rig.cli(["--sim", "get", "vpn", "ada"]).stdoutText == "vpn-secret")
            // secret-tool stores where the default alias points, as it did with gnome-keyring.
            #expect(await rig.secretTool(["store", "--label=New", "kind", "new"], stdin: "new-secret").code == 0)
            let dumped = await Self.fixture(rig, ["dump"])
            let withNew = dumped.stdoutText + dumped.stderr
            #expect(withNew.contains("Login|New|kind=new"), "\(withNew)")
        }
    }

    @Test("KeePassXC's two databases (binary, empty, 64 KiB and non-ASCII secrets; its Title, UserName, URL, Notes, Uuid and Path attributes) imported whole, labels, attributes and collections kept; a second import adds nothing; KeePassXC's items unchanged; served by touchstone after KeePassXC stops, read back byte for byte by secretstorage, the CLI and secret-tool")
    func fromKeePassXC() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            let keepassxc = try await offPool { try KeePassXC(rig: rig, databases: ["Work", "Passwords"]) }
            defer { keepassxc.stop() }
            let populated = await Self.fixture(rig, ["populate-typed", "Work"])
            #expect(populated.code == 0, "\(populated.stderr)")
            let before = await Self.fixture(rig, ["dump"])
            let lines = Self.items(before)
            #expect(before.code == 0 && lines.count == 5, "\(before.stdoutText) \(before.stderr)")
            // What KeePassXC shows as an item's attributes: its entry's fields but the password (Title is the
            // label), the client's own, its read-only Uuid and Path, and the content type of a secret that is
            // not text (kept as an attachment).
            func shown(_ prefix: String, _ rest: String) -> Bool {
                lines.contains { $0.hasPrefix(prefix) && $0.contains(rest) }
            }
            #expect(shown("Passwords|Binary|FDO_SECRETS_CONTENT_TYPE=application/octet-stream,Notes=,Path=/Binary,Title=Binary,URL=,UserName=,Uuid=",
                          ",kind=binary|application/octet-stream|15|"), "\(lines)")
            #expect(shown("Passwords|Empty|Notes=,Path=/Empty,Title=Empty,URL=,UserName=,Uuid=", ",kind=empty|text/plain|0|"), "\(lines)")
            #expect(shown("Work|VPN|Notes=,Path=/VPN,Title=VPN,URL=https://vpn.example,UserName=ada,Uuid=", ",account=ada,service=vpn|text/plain|10|"),
                    "\(lines)")
            #expect(!lines.contains { $0.contains("|Password=") || $0.contains(",Password=") }, "the password is not an attribute: \(lines)")

            let imported = try await Self.importTwice(rig, count: 5, defaultAlias: "Passwords", source: before)
            #expect(imported.stderr.contains("importing from /usr/bin/keepassxc (keepassxc, pid "), "\(imported.stderr)")

            // KeePassXC out, touchstone in, on the same bus.
            let stopped = try await offPool { keepassxc.stop() }
            #expect(stopped?.code == 0, "KeePassXC ends cleanly on SIGTERM: \(stopped?.stderr ?? "")")
            try await rig.startProvider()
            let after = await Self.fixture(rig, ["dump"])
            #expect(Self.items(after) == lines, "before:\n\(before.stdoutText)\nafter:\n\(after.stdoutText)\n\(after.stderr)")
            #expect(await rig.cli(["--sim", "get", "vpn", "ada"]).stdoutText == "vpn-secret")
            // secret-tool stores where the default alias points, as it did with KeePassXC.
            #expect(await rig.secretTool(["store", "--label=New", "kind", "new"], stdin: "new-secret").code == 0)
            let dumped = await Self.fixture(rig, ["dump"])
            #expect(dumped.stdoutText.contains("Passwords|New|kind=new"), "\(dumped.stdoutText) \(dumped.stderr)")
            #expect(!dumped.stdoutText.contains("Work|New|"), "\(dumped.stdoutText)")
        }
    }

    @Test("what Touchstone cannot keep is reported and the rest imported: a secret over 1 MiB fails with its size (exit 1, nothing cut), the others are added")
    func tooLarge() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            let keyring = try await offPool { try GnomeKeyring(rig: rig) }
            defer { keyring.kill() }
            #expect(await Self.fixture(rig, ["store-big", "\((1 << 20) + 1)"]).code == 0)
            #expect(await rig.secretTool(["store", "--label=Small", "kind", "small"], stdin: "small").code == 0)
            let imported = await rig.cli(["--sim", "import", "--from-secret-service"])
            #expect(imported.code == 1, "\(imported.stdoutText) \(imported.stderr)")
            #expect(imported.stdoutText.contains("failed: Login / Huge: its secret is 1048577 bytes"), "\(imported.stdoutText)")
            #expect(imported.stdoutText.contains("found 2, added 1, skipped 0, failed 1"), "\(imported.stdoutText)")
            #expect(imported.stderr.contains("1 item could not be imported"), "\(imported.stderr)")
            #expect(await rig.cli(["--sim", "list"]).stdoutText.contains("Small"))
            try await offPool { keyring.stop() }
        }
    }

    /// Another Touchstone state folder's provider on the rig's bus, as a
    /// source, with alice's finger enrolled; `body` gets its sandbox and
    /// process. Every blocking step off the cooperative pool, which other
    /// tests' tasks need.
    static func withTouchstoneSource(_ rig: SecretServiceRig,
                                     _ body: (CLISandbox, RunningCLI) async throws -> Void) async throws {
        let (source, provider) = try await offPool { () throws -> (CLISandbox, RunningCLI) in
            let source = try CLISandbox()
            source.extraEnvironment = rig.sandbox.extraEnvironment
            #expect(source.setPasscode().code == 0)
            #expect(source.enroll("right-index-finger", as: "alice").code == 0)
            let provider = try source.start(["--sim", "secret-service"])
            #expect(provider.waitForStderr("serving org.freedesktop.secrets"), "\(provider.stderrSoFar)")
            return (source, provider)
        }
        defer {
            // Already stopped below unless the body threw: then without waiting.
            if provider.poll() == nil { provider.signal(SIGKILL) }
            source.close()
        }
        try await body(source, provider)
        _ = try await offPool { () -> CLIResult in
            provider.signal(SIGTERM)
            return provider.wait(timeout: 30)
        }
    }

    /// Runs the import into the rig's vault, touching the source's reader
    /// with `finger` when its provider waits for a touch the
    /// `occurrence`th time.
    static func importTouching(_ rig: SecretServiceRig, source: CLISandbox, provider: RunningCLI,
                               _ finger: String, occurrence: Int) async throws -> CLIResult {
        let running = try rig.start(CLIProcess.binary, ["--sim", "import", "--from-secret-service"])
        let touched = try await offPool { SecretServiceRig.touchWhenAsked(provider, on: source, finger, occurrence: occurrence) }
        #expect(touched, "\(provider.stderrSoFar)")
        return await rig.wait(running)
    }

    @Test("a source's locked collection is unlocked through the source's own prompt (here another Touchstone's: a touch), imported, and locked again as it was found; a stranger's touch leaves it locked and its items fail, the rest imported")
    func lockedSourceCollection() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            try await Self.withTouchstoneSource(rig) { source, provider in
            let collections = SecretServiceCollectionTests.script
            #expect(await rig.run("/usr/bin/python3", [collections, "create", "Work", "work"]).code == 0)
            #expect(await rig.run("/usr/bin/python3", [collections, "store", "alias:work", "VPN", "service=vpn"], stdin: Array("vpn-secret".utf8)).code == 0)
            #expect(await rig.run("/usr/bin/python3", [collections, "store", "alias:default", "Mail", "service=mail"], stdin: Array("mail-secret".utf8)).code == 0)
            #expect(await Self.fixture(rig, ["lock", "Work"]).code == 0)

            func importTouching(_ finger: String, occurrence: Int) async throws -> CLIResult {
                try await Self.importTouching(rig, source: source, provider: provider, finger, occurrence: occurrence)
            }

            let refused = try await importTouching("mallory", occurrence: 1)
            #expect(refused.code == 1 && refused.stdoutText.contains("its collection stayed locked"), "\(refused.stdoutText) \(refused.stderr)")
            #expect(refused.stdoutText.contains("found 2, added 1, skipped 0, failed 1"), "\(refused.stdoutText)")
            let partly = await rig.cli(["--sim", "list"]).stdoutText
            #expect(partly.contains("Mail") && !partly.contains("VPN"), "\(partly)")
            let opened = try await importTouching("alice", occurrence: 2)
            #expect(opened.code == 0 && opened.stdoutText.contains("found 2, added 1, skipped 1, failed 0"), "\(opened.stdoutText) \(opened.stderr)")
            #expect(await Self.fixture(rig, ["is-locked", "Work"]).stdoutText == "locked=True\n", "locked again, as it was found")
            let list = await rig.cli(["--sim", "list"]).stdoutText
            #expect(list.contains("VPN") && list.contains("Mail"), "\(list)")
            }
        }
    }

    @Test("items here whose access asks for a touch are compared with the source's after one touch of the person importing, asked once for them all: the same secret is skipped, a changed one added; a stranger's touch compares nothing and is not asked again (skipped, and why); through both engines", arguments: [false, true])
    func gatedItemsCompared(_ daemon: Bool) async throws {
        try await SecretServiceRig.with(daemon: daemon) { rig in
            #expect(await rig.setPasscode().code == 0)
            #expect(try await offPool { rig.sandbox.enroll("right-index-finger", as: "owner") }.code == 0)
            try await Self.withTouchstoneSource(rig) { _, _ in
                #expect(await rig.secretTool(["store", "--label=Mail", "service", "mail"], stdin: "first").code == 0)
                #expect(await rig.secretTool(["store", "--label=VPN", "service", "vpn"], stdin: "vpn-secret").code == 0)
                let first = await rig.cli(["--sim", "import", "--from-secret-service", "--access", "biometry-any"])
                #expect(first.code == 0 && first.stdoutText.contains("found 2, added 2, skipped 0, failed 0"), "\(first.stdoutText) \(first.stderr)")

                /// The import again, the rig's reader touched with `finger` when it asks.
                func again(touching finger: String) async throws -> CLIResult {
                    let running = try rig.start(CLIProcess.binary, ["--sim", "import", "--from-secret-service", "--access", "biometry-any"])
                    let touched = try await offPool { () -> Bool in
                        running.waitForStderr("touch the reader") && rig.sandbox.run(["sim", "touch", finger, "--wait", "60"]).code == 0
                    }
                    #expect(touched, "\(running.stderrSoFar)")
                    return await rig.wait(running)
                }
                func asked(_ result: CLIResult) -> Int { result.stderr.components(separatedBy: "touch the reader").count - 1 }
                let same = try await again(touching: "owner")
                #expect(same.code == 0 && same.stdoutText.contains("found 2, added 0, skipped 2, failed 0")
                        && same.stdoutText.contains("there already (the same label, attributes and secret)"), "\(same.stdoutText) \(same.stderr)")
                #expect(asked(same) == 1, "one touch for both: \(same.stderr)")

                // The source's Mail secret changes (secret-tool replaces it).
                #expect(await rig.secretTool(["store", "--label=Mail", "service", "mail"], stdin: "second").code == 0)
                let stranger = try await again(touching: "mallory")
                #expect(stranger.code == 0 && stranger.stdoutText.contains("found 2, added 0, skipped 2, failed 0")
                        && stranger.stdoutText.components(separatedBy: "its secret could not be compared").count == 3,
                        "\(stranger.stdoutText) \(stranger.stderr)")
                #expect(asked(stranger) == 1, "refused once, not asked again: \(stranger.stderr)")
                let changed = try await again(touching: "owner")
                #expect(changed.code == 0 && changed.stdoutText.contains("found 2, added 1, skipped 1, failed 0"), "\(changed.stdoutText) \(changed.stderr)")
                let listed = await rig.cli(["--sim", "list", "--service", "mail"]).stdoutText
                #expect(listed.split(separator: "\n").count == 2, "the old secret and the new: \(listed)")
            }
        }
    }

    @Test("an item here that no longer opens (biometry-current-set, after an enrolment change) holds nothing to keep: another import brings the source's secret in beside it, asking no touch")
    func invalidatedItemNotKept() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            #expect(try await offPool { rig.sandbox.enroll("right-index-finger", as: "owner") }.code == 0)
            try await Self.withTouchstoneSource(rig) { _, _ in
                #expect(await rig.secretTool(["store", "--label=Mail", "service", "mail"], stdin: "mail-secret").code == 0)
                let importing = ["--sim", "import", "--from-secret-service", "--access", "biometry-current-set"]
                let first = await rig.cli(importing)
                #expect(first.code == 0 && first.stdoutText.contains("found 1, added 1, skipped 0, failed 0"), "\(first.stdoutText) \(first.stderr)")
                let thumb = try await offPool { rig.sandbox.enroll("left-thumb", as: "owner-thumb") }
                #expect(thumb.code == 0, "\(thumb.stderr)")
                let again = await rig.cli(importing)
                #expect(again.code == 0 && again.stdoutText.contains("found 1, added 1, skipped 0, failed 0") && !again.stderr.contains("touch the reader"),
                        "\(again.stdoutText) \(again.stderr)")
                let states = await rig.cli(["--sim", "list", "--service", "mail"]).stdoutText.split(separator: "\n").map { $0.split(separator: "\t")[3] }
                #expect(states.sorted() == ["invalidated", "ok"], "\(states)")
            }
        }
    }

    @Test("a source's item locked by itself (another Touchstone's item that needs a touch, its collection open) is unlocked through the source's own prompt and imported byte for byte; a stranger's touch leaves it locked and it fails (exit 1), the open item imported")
    func lockedSourceItem() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            try await Self.withTouchstoneSource(rig) { source, provider in
                // The source's items: one open, one that asks for a touch (made by its CLI).
                #expect(await rig.secretTool(["store", "--label=Mail", "service", "mail"], stdin: "mail-secret").code == 0)
                let added = try await offPool {
                    source.run(["--sim", "add", "bank", "me", "--label", "Bank", "--access", "biometry-any"], stdin: Array("bank-secret".utf8))
                }
                #expect(added.code == 0, "\(added.stderr)")

                let refused = try await Self.importTouching(rig, source: source, provider: provider, "mallory", occurrence: 0)
                #expect(refused.code == 1 && refused.stdoutText.contains("it stayed locked"), "\(refused.stdoutText) \(refused.stderr)")
                #expect(refused.stdoutText.contains("found 2, added 1, skipped 0, failed 1"), "\(refused.stdoutText)")
                #expect(refused.stderr.contains("unlocking an item of"), "\(refused.stderr)")
                #expect(await rig.cli(["--sim", "get", "bank", "me"]).code == 8, "not imported")

                let opened = try await Self.importTouching(rig, source: source, provider: provider, "alice", occurrence: 1)
                #expect(opened.code == 0 && opened.stdoutText.contains("found 2, added 1, skipped 1, failed 0"), "\(opened.stdoutText) \(opened.stderr)")
                let bank = await rig.cli(["--sim", "get", "bank", "me"])
                #expect(bank.code == 0 && bank.stdoutText == "bank-secret", "\(bank.stderr)")
                #expect(await rig.cli(["--sim", "list"]).stdoutText.contains("Mail"))
                // The source still asks for its touch: the import's unlock was its own connection's.
                #expect(await Self.fixture(rig, ["is-locked-item", "Bank"]).stdoutText == "locked=True\n")
            }
        }
    }
}

/// Debian's gnome-keyring-daemon on a test's private bus: its own data and
/// runtime folders, the login keyring made and unlocked with a password on
/// stdin (as PAM gives it at login), plus keyrings without a password
/// (`extraKeyrings`, by label) written in its own file format before it
/// starts. Stopped by PID.
final class GnomeKeyring: @unchecked Sendable {
    // @unchecked Sendable: one test's; `process` is only stopped once, from its flow.
    let folder: String
    private var process: RunningCLI?

    init(rig: SecretServiceRig, extraKeyrings: [String] = []) throws {
        folder = rig.sandbox.scratch + "/gnome-keyring"
        let keyrings = folder + "/data/keyrings"
        try FileManager.default.createDirectory(atPath: keyrings, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: folder + "/home", withIntermediateDirectories: true)
        let now = Int(Date().timeIntervalSince1970)
        for label in extraKeyrings {
            try "[keyring]\ndisplay-name=\(label)\nctime=\(now)\nmtime=\(now)\nlock-on-idle=false\nlock-after=false\n"
                .write(toFile: keyrings + "/\(label.lowercased()).keyring", atomically: true, encoding: .utf8)
        }
        let environment = ["XDG_DATA_HOME": folder + "/data", "XDG_RUNTIME_DIR": folder + "/run", "HOME": folder + "/home"]
        let started = try rig.start("/usr/bin/gnome-keyring-daemon", ["--unlock", "--foreground", "--components=secrets"],
                                    stdin: Array("keyring-password".utf8), environment: environment)
        process = started
        let owned = blockingEventually {
            rig.runBlocking("/usr/bin/python3", ["-c", "import secretstorage; secretstorage.get_default_collection(secretstorage.dbus_init())"]).code == 0
        }
        guard owned else {
            stop()
            throw RigFailure("gnome-keyring-daemon did not serve: \(started.stderrSoFar)")
        }
    }

    /// SIGTERM, and waits for it to end (blocking: off the cooperative pool).
    func stop() {
        guard let process else { return }
        self.process = nil
        process.signal(SIGTERM)
        _ = process.wait(timeout: 30)
    }

    /// SIGKILL without waiting, when a test ends early (a `defer` may not block).
    func kill() {
        guard let process else { return }
        self.process = nil
        process.signal(SIGKILL)
    }
}

import Foundation
import Testing

/// Several collections, aliases, and locking a collection as a whole,
/// spoken as a client speaks D-Bus itself (Fixtures/secret-service-collections.py).
@Suite("The Secret Service provider's collections")
struct SecretServiceCollectionTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/secret-service-collections.py").path
    static let collections = "/org/freedesktop/secrets/collection/"

    /// One step of the fixture: its `key=value` lines (and the run, for messages).
    static func step(_ rig: SecretServiceRig, _ arguments: [String], stdin: String = "") async -> (lines: [String], run: CLIResult) {
        let run = await rig.run("/usr/bin/python3", [script] + arguments, stdin: Array(stdin.utf8))
        return (run.stdoutText.split(separator: "\n").map(String.init), run)
    }

    /// The value of the first `key=` line.
    static func value(_ key: String, _ lines: [String]) -> String? {
        lines.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    @Test("CreateCollection with a label and an alias, items in it, a writable label, SetAlias and ReadAlias for any alias; kept across a restart; the reserved attribute never shown and refused; Delete of a collection takes its items and only them, and the default collection is not deleted")
    func severalCollections() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            try await rig.startProvider()
            #expect(await rig.cli(["--sim", "add", "cli", "me", "--access", "none"], stdin: Array("from-cli".utf8)).code == 0)

            let made = await Self.step(rig, ["create", "Work Keys", "work"])
            let work = try #require(Self.value("path", made.lines), "\(made.run.stderr) \(rig.log)")
            #expect(work == Self.collections + "work_keys")
            #expect(Self.value("prompt", made.lines) == "/")
            #expect(Self.value("path", await Self.step(rig, ["create", "Another", "work"]).lines) == work, "an alias in use gives its collection")
            let stored = await Self.step(rig, ["store", "alias:work", "VPN", "service=vpn", "account=ada"], stdin: "vpn-secret")
            let vpn = try #require(Self.value("path", stored.lines), "\(stored.run.stderr)")
            #expect(vpn.hasPrefix(work + "/"))
            let inDefault = try #require(Self.value("path", await Self.step(rig, ["store", "alias:default", "Mail", "service=mail", "account=ada"],
                                                                            stdin: "mail-secret").lines))
            #expect(inDefault.hasPrefix(Self.collections + "default/"))

            // Each collection lists its own; the Service's search finds both.
            #expect(await Self.step(rig, ["items", work]).lines == ["item=\(vpn)"])
            #expect(!(await Self.step(rig, ["items", "alias:default"]).lines.contains("item=\(vpn)")))
            let found = await Self.step(rig, ["search", "account=ada"]).lines
            #expect(found.contains("unlocked=\(vpn)") && found.contains("unlocked=\(inDefault)"), "\(found)")
            #expect(await Self.step(rig, ["read", vpn]).lines == ["secret=vpn-secret"])
            #expect(await Self.step(rig, ["attributes", vpn]).lines == ["attribute=account=ada", "attribute=service=vpn"])
            #expect(await Self.step(rig, ["read", Self.collections + "default/" + vpn.split(separator: "/").last!]).lines
                    == ["error=org.freedesktop.Secret.Error.NoSuchObject"], "an item is only at its own collection's path")
            #expect(await Self.step(rig, ["store-reserved", work]).lines == ["error=org.freedesktop.DBus.Error.InvalidArgs"])
            #expect(await rig.cli(["--sim", "get", "vpn", "ada"]).stdoutText == "vpn-secret", "the CLI reads every collection's items")

            #expect(await Self.step(rig, ["label", work, "Work"]).lines == ["done"])
            #expect(await Self.step(rig, ["set-alias", "default", work]).lines == ["done"])
            #expect(await Self.step(rig, ["set-alias", "team", work]).lines == ["done"])
            #expect(await Self.step(rig, ["alias", "team"]).lines == ["path=\(work)"])
            #expect(await Self.step(rig, ["alias", "nobody"]).lines == ["path=/"])
            #expect(await Self.step(rig, ["set-alias", "x", Self.collections + "nothing"]).lines == ["error=org.freedesktop.Secret.Error.NoSuchObject"])
            // secret-tool stores in what the default alias names.
            #expect(await rig.secretTool(["store", "--label=Wiki", "service", "wiki", "account", "ada"], stdin: "wiki-secret").code == 0)

            // A restart keeps the collections, their labels and aliases.
            _ = await rig.stopProvider()
            try await rig.startProvider()
            let listed = await Self.step(rig, ["collections"]).lines
            #expect(listed.contains("collection=\(work) label=Work locked=False items=2"), "\(listed)")
            #expect(listed.contains { $0.hasPrefix("collection=\(Self.collections)default label=Touchstone locked=False") }, "\(listed)")
            #expect(await Self.step(rig, ["alias", "default"]).lines == ["path=\(work)"])
            #expect(await Self.step(rig, ["alias", "team"]).lines == ["path=\(work)"])
            #expect(await Self.step(rig, ["read", vpn]).lines == ["secret=vpn-secret"])

            // Delete: the collection and its items go; the rest stays.
            #expect(await Self.step(rig, ["delete", "alias:session"]).lines == ["prompt=/"])
            #expect(await Self.step(rig, ["delete", Self.collections + "default"]).lines == ["error=org.freedesktop.DBus.Error.NotSupported"])
            #expect(await Self.step(rig, ["delete", work]).lines == ["prompt=/"])
            // Its objects are gone from the bus: GDBus answers for the provider.
            #expect(await Self.step(rig, ["read", vpn]).lines == ["error=org.freedesktop.DBus.Error.UnknownMethod"])
            #expect(await rig.cli(["--sim", "get", "vpn", "ada"]).code == 8)
            #expect(await rig.cli(["--sim", "get", "wiki", "ada"]).code == 8)
            #expect(await Self.step(rig, ["alias", "team"]).lines == ["path=/"])
            #expect(await Self.step(rig, ["read", inDefault]).lines == ["secret=mail-secret"])
            #expect(await rig.cli(["--sim", "get", "cli", "me"]).stdoutText == "from-cli")
        }
    }

    @Test("a damaged collections file is moved aside and said in the log; every item keeps its collection, which is listed again under its id")
    func damagedBook() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            try await rig.startProvider()
            let work = try #require(Self.value("path", await Self.step(rig, ["create", "Work", ""]).lines))
            let vpn = try #require(Self.value("path", await Self.step(rig, ["store", work, "VPN", "service=vpn"], stdin: "vpn-secret").lines))
            _ = await rig.stopProvider()
            let book = rig.sandbox.home + "/secret-service/collections.json"
            try Data("{not json".utf8).write(to: URL(fileURLWithPath: book))
            try await rig.startProvider()
            #expect(rig.log.contains("could not be read"), "\(rig.log)")
            #expect(FileManager.default.fileExists(atPath: book + ".damaged"))
            let listed = await Self.step(rig, ["collections"]).lines
            #expect(listed.contains("collection=\(work) label=work locked=False items=1"), "\(listed)")
            #expect(await Self.step(rig, ["read", vpn]).lines == ["secret=vpn-secret"])
            let attributes = try FileManager.default.attributesOfItem(atPath: book)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "written anew, 0600")
        }
    }

    @Test("Lock of a collection locks its items for every client (even those that need nothing) and no other collection's; Unlock asks for a touch: a stranger's leaves it locked, the owner's unlocks it, and a gated item in it still needs its own unlock")
    func lockingACollection() async throws {
        try await SecretServiceRig.with { rig in
            #expect(await rig.setPasscode().code == 0)
            #expect(await rig.enroll("right-index-finger", as: "alice").code == 0)
            #expect(await rig.cli(["--sim", "add", "gated", "ada", "--access", "biometry-any"], stdin: Array("gated-secret".utf8)).code == 0)
            try await rig.startProvider()
            let work = try #require(Self.value("path", await Self.step(rig, ["create", "Work", "work"]).lines))
            let vpn = try #require(Self.value("path", await Self.step(rig, ["store", work, "VPN", "service=vpn"], stdin: "vpn-secret").lines))
            let mail = try #require(Self.value("path", await Self.step(rig, ["store", "alias:default", "Mail", "service=mail"],
                                                                         stdin: "mail-secret").lines))
            let gatedSearch = await Self.step(rig, ["search", "service=gated"]).lines
            let gated = try #require(Self.value("locked", gatedSearch), "\(gatedSearch)")

            #expect(await Self.step(rig, ["lock", work]).lines == ["locked=\(work)"])
            #expect(await Self.step(rig, ["collections"]).lines.contains("collection=\(work) label=Work locked=True items=1"))
            #expect(await Self.step(rig, ["read", vpn]).lines == ["error=org.freedesktop.Secret.Error.IsLocked"])
            #expect(await Self.step(rig, ["search", "service=vpn"]).lines == ["locked=\(vpn)"])
            #expect(await Self.step(rig, ["read", mail]).lines == ["secret=mail-secret"], "another collection is not locked")

            let stranger = try rig.start("/usr/bin/python3", [Self.script, "unlock", work])
            #expect(await rig.touchWhenAsked("mallory", occurrence: 1), "\(rig.log)")
            let refused = await rig.wait(stranger)
            #expect(Self.value("dismissed", refused.stdoutText.split(separator: "\n").map(String.init)) == "True", "\(refused.stdoutText) \(refused.stderr)")
            #expect(await Self.step(rig, ["read", vpn]).lines == ["error=org.freedesktop.Secret.Error.IsLocked"])

            let owner = try rig.start("/usr/bin/python3", [Self.script, "unlock", work])
            #expect(await rig.touchWhenAsked("alice", occurrence: 2), "\(rig.log)")
            let opened = await rig.wait(owner)
            #expect(opened.stdoutText.contains("dismissed=False") && opened.stdoutText.contains("unlocked=\(work)"), "\(opened.stdoutText) \(opened.stderr)")
            #expect(await Self.step(rig, ["collections"]).lines.contains("collection=\(work) label=Work locked=False items=1"))
            #expect(await Self.step(rig, ["read", vpn]).lines == ["secret=vpn-secret"])

            // Locking and unlocking the default collection leaves a gated item locked.
            #expect(await Self.step(rig, ["lock", Self.collections + "default"]).lines == ["locked=\(Self.collections)default"])
            let again = try rig.start("/usr/bin/python3", [Self.script, "unlock", Self.collections + "default"])
            #expect(await rig.touchWhenAsked("alice", occurrence: 3), "\(rig.log)")
            #expect(await rig.wait(again).stdoutText.contains("dismissed=False"))
            #expect(await Self.step(rig, ["read", mail]).lines == ["secret=mail-secret"])
            #expect(await Self.step(rig, ["read", gated]).lines == ["error=org.freedesktop.Secret.Error.IsLocked"])
        }
    }
}

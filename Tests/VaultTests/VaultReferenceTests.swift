import Foundation
import Testing
import TestScopes
import TestRigs
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

/// Items by reference and by attribute set (the Secret Service's view).
@Suite("Vault items by reference and attributes, on swtpm", .offPool)
struct VaultReferenceTests {
    static func item(_ set: [String: String], label: String? = nil, access: AccessControl = .none) -> ItemAttributes {
        ItemAttributes(service: set["service"] ?? "secret-service", account: set["account"] ?? "item-\(UInt64.random(in: 0...UInt64.max))",
                       label: label, access: access, searchAttributes: set)
    }

    @Test("a search finds the items whose set holds every pair asked, and no other; an empty query finds all")
    func search() throws {
        let rig = try VaultRig()
        let vault = rig.vault
        let (git, _) = try vault.add(secret("tok"), attributes: Self.item(["protocol": "https", "server": "example.com", "user": "bob"]), rule: .keepOthers)
        let (chrome, _) = try vault.add(secret("key"), attributes: Self.item(["application": "chrome"]), rule: .keepOthers)
        try vault.add(secret("cli"), attributes: ItemAttributes(service: "S", account: "A", access: .none))
        #expect(try vault.search(["server": "example.com"]).map(\.reference) == [git])
        #expect(try vault.search(["server": "example.com", "user": "bob"]).map(\.reference) == [git])
        #expect(try vault.search(["server": "example.com", "user": "eve"]).isEmpty)
        #expect(try vault.search(["application": "chrome"]).map(\.reference) == [chrome])
        #expect(try vault.search(["application": "chrom"]).isEmpty)
        // A CLI item's set is its service and account.
        let cli = try vault.search(["service": "S", "account": "A"])
        #expect(cli.count == 1 && cli.first?.item.attributes?.account == "A")
        #expect(try vault.search([:]).count == 3)
        #expect(string(try vault.secret(git, proof: .none).0) == "tok")
        #expect(try vault.item(chrome).item.attributes?.searchAttributes == ["application": "chrome"])
    }

    @Test("equal sets: without replace both are kept (a read by name takes the newest); with replace the new one takes their place")
    func equalSets() throws {
        let rig = try VaultRig()
        let vault = rig.vault
        let set = ["service": "mail", "account": "ada", "xdg:schema": "org.example.Mail"]
        let (first, _) = try vault.add(secret("one"), attributes: Self.item(set), rule: .keepOthers)
        let (second, replacedNone) = try vault.add(secret("two"), attributes: Self.item(set), rule: .keepOthers)
        #expect(replacedNone.isEmpty && first != second)
        #expect(try vault.search(set).map(\.reference) == [first, second])
        #expect(string(try vault.secret(service: "mail", account: "ada", proof: .none)) == "two")
        // The CLI's add still refuses a name that is there.
        #expect(throws: VaultError.duplicateItem) {
            try vault.add(secret("x"), attributes: ItemAttributes(service: "mail", account: "ada", access: .none))
        }
        let (third, replaced) = try vault.add(secret("three"), attributes: Self.item(set), rule: .replaceEqual)
        #expect(replaced == [first, second])
        #expect(try vault.search(set).map(\.reference) == [third])
        #expect(throws: VaultError.itemNotFound) { try vault.secret(first, proof: .none) }
        // A set that names a service and account replaces a CLI item of that name.
        try vault.add(secret("cli"), attributes: ItemAttributes(service: "S", account: "A", access: .none))
        let (named, replacedCLI) = try vault.add(secret("ss"), attributes: Self.item(["service": "S", "account": "A", "x": "1"]), rule: .replaceEqual)
        #expect(replacedCLI.count == 1)
        #expect(string(try vault.secret(service: "S", account: "A", proof: .none)) == "ss")
        #expect(try vault.search(["service": "S"]).map(\.reference) == [named])
    }

    @Test("an item of a set may hold an empty secret; an item named by the CLI may not")
    func emptySecret() throws {
        let rig = try VaultRig()
        let (reference, _) = try rig.vault.add(SecureBytes(count: 0), attributes: Self.item(["a": "b"]), rule: .keepOthers)
        #expect(try rig.vault.secret(reference, proof: .none).0.count == 0)
        #expect(throws: VaultError.self) {
            try rig.vault.add(SecureBytes(count: 0), attributes: ItemAttributes(service: "s", account: "a", access: .none))
        }
    }

    @Test("limits: 64 attributes, 4096-byte names and values; over them nothing is stored")
    func limits() throws {
        let rig = try VaultRig()
        let many = Dictionary(uniqueKeysWithValues: (0..<65).map { ("k\($0)", "v") })
        #expect(throws: VaultError.self) { try rig.vault.add(secret("x"), attributes: Self.item(many), rule: .keepOthers) }
        #expect(throws: VaultError.self) {
            try rig.vault.add(secret("x"), attributes: Self.item(["k": String(repeating: "v", count: 4097)]), rule: .keepOthers)
        }
        let (ok, _) = try rig.vault.add(secret("x"), attributes: Self.item(Dictionary(uniqueKeysWithValues: (0..<64).map { ("k\($0)", "v\($0)") })),
                                        rule: .keepOthers)
        #expect(try rig.vault.search(["k63": "v63"]).map(\.reference) == [ok])
        #expect(try rig.vault.itemCount() == 1)
    }

    @Test("attribute names and values are nowhere in the database in plain text; the search finds the item")
    func encryptedOnDisk() throws {
        let rig = try VaultRig()
        let marker = "zq-attribute-marker-7781"
        let (reference, _) = try rig.vault.add(secret("s"), attributes: Self.item(["\(marker)-name": "\(marker)-value"], label: "\(marker)-label"),
                                               rule: .keepOthers)
        #expect(try rig.vault.search(["\(marker)-name": "\(marker)-value"]).map(\.reference) == [reference])
        let db = try rig.database()
        try db.query("PRAGMA wal_checkpoint(TRUNCATE)")
        for file in ["vault.sqlite", "vault.sqlite-wal"] {
            let bytes = (try? Data(contentsOf: rig.home.appendingPathComponent(file))) ?? Data()
            #expect(bytes.range(of: Data(marker.utf8)) == nil, "\(file) holds the marker")
        }
    }

    @Test("an attribute row moved to another item makes it match nothing it does not hold")
    func movedIndexRow() throws {
        let rig = try VaultRig()
        let (a, _) = try rig.vault.add(secret("a"), attributes: Self.item(["app": "a"]), rule: .keepOthers)
        let (b, _) = try rig.vault.add(secret("b"), attributes: Self.item(["app": "b"]), rule: .keepOthers)
        let db = try rig.database()
        // Every index row of a's now says b.
        try db.query("UPDATE attributes SET item_id = ? WHERE item_id = ?", [.integer(b.id), .integer(a.id)])
        #expect(try rig.vault.search(["app": "a"]).isEmpty)
        #expect(try rig.vault.search(["app": "b"]).map(\.reference) == [b])
    }

    @Test("update by reference: label and set in place; a new service or a new secret of a gated item needs its proof")
    func update() throws {
        let rig = try VaultRig()
        let vault = rig.vault
        let (open, _) = try vault.add(secret("o"), attributes: Self.item(["service": "s1", "account": "a1"]), rule: .keepOthers)
        try vault.update(open, label: "renamed", searchAttributes: ["service": "s2", "account": "a1", "extra": "1"])
        #expect(try vault.search(["extra": "1"]).map(\.reference) == [open])
        #expect(try vault.search(["service": "s1"]).isEmpty)
        #expect(string(try vault.secret(service: "s2", account: "a1", proof: .none)) == "o")
        #expect(try vault.item(open).item.attributes?.label == "renamed")

        let (gated, _) = try vault.add(secret("g"), attributes: Self.item(["service": "g", "account": "1"], access: .devicePasscode),
                                       rule: .keepOthers)
        try vault.update(gated, label: "label only")
        #expect(throws: VaultError.authenticationRequired) { try vault.update(gated, secret: secret("new"), proof: .none) }
        #expect(throws: VaultError.authenticationRequired) {
            try vault.update(gated, searchAttributes: ["service": "other", "account": "1"], proof: .none)
        }
        #expect(string(try vault.secret(gated, proof: passcode).0) == "g")
        try vault.update(gated, secret: secret("new"), searchAttributes: ["service": "other", "account": "1"], proof: passcode)
        #expect(string(try vault.secret(service: "other", account: "1", proof: passcode)) == "new")
        #expect(throws: VaultError.authenticationRequired) { try vault.secret(gated, proof: .none) }
        try vault.delete(gated)
        #expect(throws: VaultError.itemNotFound) { try vault.delete(gated) }
    }

    @Test("a reference is never reused: the next item after deleting the newest gets a new one")
    func referencesNotReused() throws {
        let rig = try VaultRig()
        let (first, _) = try rig.vault.add(secret("1"), attributes: Self.item(["n": "1"]), rule: .keepOthers)
        try rig.vault.delete(first)
        let (next, _) = try rig.vault.add(secret("2"), attributes: Self.item(["n": "2"]), rule: .keepOthers)
        #expect(next.id > first.id)
    }

    @Test("an add writes one item row and one index row per pair, whatever the vault holds")
    func addCost() throws {
        let rig = try VaultRig()
        for n in 0..<50 { _ = try rig.vault.add(secret("\(n)"), attributes: Self.item(["n": "\(n)", "app": "x"]), rule: .keepOthers) }
        let db = try rig.database()
        func counts() throws -> (Int64, Int64) {
            (try db.rows("SELECT count(*) FROM items", []) { $0.integer(0) }[0], try db.rows("SELECT count(*) FROM attributes", []) { $0.integer(0) }[0])
        }
        let before = try counts()
        _ = try rig.vault.add(secret("new"), attributes: Self.item(["n": "new", "app": "x"]), rule: .keepOthers)
        let after = try counts()
        #expect(after.0 == before.0 + 1 && after.1 == before.1 + 2)
        #expect(before == (50, 100))
    }
}

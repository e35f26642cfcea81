import Foundation
import TouchstonePOSIX
import TouchstoneSimulator
import Testing
import TestScopes
import TestRigs
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

@Suite("Tampering, damage and other TPMs", .offPool)
struct VaultTamperTests {
    /// The record ciphers this CPU runs.
    static let ciphers = RecordCipher.allCases.filter(\.isAvailable)

    /// Rows of one cipher, items of one access control. Access `none` is
    /// read in place (Vault.secret); the passcode through a class key.
    struct Layout: Sendable, CustomTestStringConvertible {
        let cipher: RecordCipher
        let access: AccessControl
        var testDescription: String { "\(cipher), access \(access)" }
    }

    /// Every tamper case is tried on each layout.
    static let layouts = ciphers.flatMap { cipher in [AccessControl.none, .devicePasscode].map { Layout(cipher: cipher, access: $0) } }

    /// Three items in `layout`; `damage` alters the stored rows of
    /// "victim"; the others must still open.
    func tamper(_ layout: Layout, _ damage: (SQLiteDatabase, Int64) throws -> Void) throws -> (VaultRig, Vault) {
        let rig = try VaultRig(recordCipher: layout.cipher)
        for account in ["before", "victim", "after"] {
            try rig.vault.add(secret(account), attributes: ItemAttributes(service: "s", account: account, access: layout.access))
        }
        let db = try rig.database()
        let id = try #require(try db.rows("SELECT id FROM items", []) { $0.integer(0) }.sorted().dropFirst().first)
        try damage(db, id)
        return (rig, try rig.reopen())
    }

    /// The victim item reports corrupted (never opens, never another error).
    func expectCorrupted(_ vault: Vault, account: String = "victim", sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try vault.secret(service: "s", account: account, proof: passcode)
            Issue.record("a damaged item opened", sourceLocation: sourceLocation)
        } catch {
            guard case .corrupted = error else { Issue.record("expected corrupted, got \(error)", sourceLocation: sourceLocation); return }
        }
    }

    func expectOthersOpen(_ vault: Vault, _ rig: VaultRig) throws {
        defer { withExtendedLifetime(rig) {} }
        for account in ["before", "after"] {
            #expect(string(try vault.secret(service: "s", account: account, proof: passcode)) == account)
        }
    }

    static func flip(_ db: SQLiteDatabase, table: String, column: String, where clause: String, _ id: Int64) throws {
        var bytes = try db.rows("SELECT \(column) FROM \(table) WHERE \(clause)", [.integer(id)]) { $0.blob(0) }.first!
        bytes[bytes.count / 2] ^= 0x01
        try db.query("UPDATE \(table) SET \(column) = ? WHERE \(clause)", [.blob(bytes), .integer(id)])
    }

    @Test("a flipped byte of a stored secret: that item is corrupted, the others open", arguments: layouts)
    func flippedSecret(_ layout: Layout) throws {
        let (rig, vault) = try tamper(layout) { try Self.flip($0, table: "items", column: "secret", where: "id = ?", $1) }
        expectCorrupted(vault)
        try expectOthersOpen(vault, rig)
    }

    @Test("a flipped byte of a wrapped key: that item is corrupted, the others open", arguments: layouts)
    func flippedWrap(_ layout: Layout) throws {
        let (rig, vault) = try tamper(layout) { try Self.flip($0, table: "items", column: "keys", where: "id = ?", $1) }
        expectCorrupted(vault)
        try expectOthersOpen(vault, rig)
    }

    @Test("a flipped byte of the wrapped key of an access-none item: corrupted, the others open", arguments: ciphers)
    func flippedDeviceWrap(_ cipher: RecordCipher) throws {
        let rig = try VaultRig(recordCipher: cipher)
        for account in ["before", "victim", "after"] {
            try rig.vault.add(secret(account), attributes: ItemAttributes(service: "n", account: account, access: .none))
        }
        let db = try rig.database()
        let id = try #require(try db.rows("SELECT id FROM items", []) { $0.integer(0) }.sorted().dropFirst().first)
        try Self.flip(db, table: "items", column: "keys", where: "id = ?", id)
        let vault = try rig.reopen()
        do {
            _ = try vault.secret(service: "n", account: "victim", proof: .none)
            Issue.record("a damaged wrapped key opened")
        } catch {
            guard case .corrupted = error else { Issue.record("expected corrupted, got \(error)"); return }
        }
        for account in ["before", "after"] {
            #expect(string(try vault.secret(service: "n", account: account, proof: .none)) == account)
        }
    }

    @Test("a flipped byte of a lookup hash: that item is corrupted (get and list), the others open", arguments: layouts)
    func flippedLookup(_ layout: Layout) throws {
        let (rig, vault) = try tamper(layout) { try Self.flip($0, table: "items", column: "lookup", where: "id = ?", $1) }
        expectCorrupted(vault)
        #expect(try vault.list().filter { $0.state == .corrupted }.count == 1)
        try expectOthersOpen(vault, rig)
    }

    @Test("a flipped byte of the attributes: corrupted (get and list), the others listed and open", arguments: layouts)
    func flippedMetadata(_ layout: Layout) throws {
        let (rig, vault) = try tamper(layout) { try Self.flip($0, table: "items", column: "metadata", where: "id = ?", $1) }
        expectCorrupted(vault)
        let listed = try vault.list()
        #expect(listed.filter { $0.state == .corrupted }.count == 1)
        #expect(Set(listed.compactMap(\.attributes?.account)) == ["before", "after"])
        try expectOthersOpen(vault, rig)
    }

    @Test("one item's secret replaced by another's: it reports corrupted (the associated data binds each to its item)", arguments: layouts)
    func swappedSecrets(_ layout: Layout) throws {
        let (rig, vault) = try tamper(layout) { db, id in
            let before = try db.rows("SELECT secret FROM items WHERE id = ?", [.integer(id - 1)]) { $0.blob(0) }.first!
            try db.query("UPDATE items SET secret = ? WHERE id = ?", [.blob(before), .integer(id)])
        }
        expectCorrupted(vault)
        try expectOthersOpen(vault, rig)
    }

    /// Values written over a row's cipher: unknown ones, and each cipher
    /// over rows of the other where this CPU runs both.
    static let cipherDamages: [Int64] = [0, 7] + (ciphers.count == 2 ? ciphers.map(\.rawValue) : [])

    @Test("a row's cipher changed to the other one, or to an unknown one: corrupted (get and list), the others open",
          arguments: cipherDamages)
    func alteredCipher(_ stored: Int64) throws {
        let written = RecordCipher(rawValue: stored).map { c in Self.ciphers.first { $0 != c }! } ?? .preferred
        for access in [AccessControl.none, .devicePasscode] {
            let (rig, vault) = try tamper(Layout(cipher: written, access: access)) { db, id in
                try db.query("UPDATE items SET cipher = ? WHERE id = ?", [.integer(stored), .integer(id)])
            }
            expectCorrupted(vault)
            #expect(try vault.list().filter { $0.state == .corrupted }.count == 1)
            try expectOthersOpen(vault, rig)
        }
    }

    @Test("keys records swapped between an access-none item and a passcode item: both corrupted (get and list), the others open",
          arguments: ciphers)
    func keysOfTheOtherAccess(_ cipher: RecordCipher) throws {
        let rig = try VaultRig(recordCipher: cipher)
        let items: [(String, AccessControl)] = [("before", .devicePasscode), ("none", .none), ("protected", .devicePasscode), ("after", .none)]
        for (account, access) in items {
            try rig.vault.add(secret(account), attributes: ItemAttributes(service: "s", account: account, access: access))
        }
        let db = try rig.database()
        let keys = { (account: String) in
            try db.rows("SELECT keys FROM items WHERE lookup = ?", [.blob(rig.vault.lookupHash(service: "s", account: account))]) { $0.blob(0) }[0]
        }
        let (noneKeys, protectedKeys) = (try keys("none"), try keys("protected"))
        for (account, record) in [("none", protectedKeys), ("protected", noneKeys)] {
            try db.query("UPDATE items SET keys = ? WHERE lookup = ?", [.blob(record), .blob(rig.vault.lookupHash(service: "s", account: account))])
        }
        let vault = try rig.reopen()
        for account in ["none", "protected"] { expectCorrupted(vault, account: account) }
        let states = Dictionary(uniqueKeysWithValues: try vault.list().map { ($0.attributes?.account ?? "?", $0.state) })
        #expect(states == ["before": .ok, "none": .corrupted, "protected": .corrupted, "after": .ok])
        for account in ["before", "after"] {
            #expect(string(try vault.secret(service: "s", account: account, proof: passcode)) == account)
        }
    }

    @Test("the database moved to another TPM: a clear error")
    func otherTPM() throws {
        let rig = try VaultRig()
        try rig.vault.add(secret("x"), attributes: ItemAttributes(service: "s", account: "a", access: .none))
        let other = try SwtpmRig()
        #expect(throws: VaultError.otherTPM) { try Vault(home: rig.home, tpm: try other.tpm()) }
    }

    @Test("a future schema version is refused and the file left untouched")
    func futureSchema() throws {
        let rig = try VaultRig()
        try rig.database().execute("PRAGMA user_version = 99")
        #expect(throws: VaultError.futureSchema(99)) { try rig.reopen() }
        var version = 0
        try rig.database().query("PRAGMA user_version") { version = Int($0.integer(0)) }
        #expect(version == 99)
    }

    @Test("a database of random bytes: a clear 'corrupted' error, the file kept")
    func randomDatabase() throws {
        let tpmRig = try SwtpmRig()
        let home = URL(fileURLWithPath: tpmRig.directory).appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let junk = SecureBytes.random(count: 8192).withUnsafeBytes { Data($0) }
        let path = home.appendingPathComponent(Vault.databaseName)
        try junk.write(to: path)
        do {
            _ = try Vault(home: home, tpm: try tpmRig.tpm())
            Issue.record("opened a database of random bytes")
        } catch let e as VaultError {
            guard case .corrupted = e else { Issue.record("expected corrupted, got \(e)"); return }
        }
        #expect(try Data(contentsOf: path) == junk)
    }

    @Test("an empty vault file is refused as damaged, not taken for a new vault, and left empty")
    func emptyDatabase() throws {
        let rig = try VaultRig()
        try rig.vault.add(secret("x"), attributes: ItemAttributes(service: "s", account: "a", access: .none))
        let path = rig.home.appendingPathComponent(Vault.databaseName).path
        #expect(truncate(path, 0) == 0)
        do {
            _ = try rig.reopen()
            Issue.record("an empty file opened as a vault")
        } catch let e as VaultError {
            guard case .corrupted(let why) = e else { Issue.record("expected corrupted, got \(e)"); return }
            #expect(why.contains("is empty (0 bytes)"))
        }
        #expect(SQLiteDatabase.fileSize(path) == 0)
    }

    @Test("an update whose item another process deleted after it was read: itemNotFound, nothing written, even when the same name was added again")
    func updateOfADeletedItem() throws {
        let rig = try VaultRig()
        let mine = rig.vault, other = try rig.reopen()
        try mine.add(secret("old"), attributes: ItemAttributes(service: "s", account: "a", access: .none))
        try mine.add(secret("bystander"), attributes: ItemAttributes(service: "s", account: "b", access: .none))
        let (read, attributes) = try mine.load(service: "s", account: "a")
        try other.delete(service: "s", account: "a")
        try other.add(secret("re-added"), attributes: ItemAttributes(service: "s", account: "a", access: .none))
        let metadata = try mine.sealMetadata(attributes, Vault.cipher(of: read))
        #expect(throws: VaultError.itemNotFound) { try mine.rewrite(read, metadata: metadata, secret: read.secret) }
        #expect(string(try mine.secret(service: "s", account: "a", proof: .none)) == "re-added")
        #expect(string(try mine.secret(service: "s", account: "b", proof: .none)) == "bystander")
        // The row as read, still there: the rewrite lands.
        let (current, _) = try mine.load(service: "s", account: "a")
        try mine.rewrite(current, metadata: current.metadata, secret: current.secret)
        #expect(string(try mine.secret(service: "s", account: "a", proof: .none)) == "re-added")
    }

    @Test("a creation's temporary files are removed when its process died, kept while it lives")
    func abandonedCreations() throws {
        let folder = try makeTemporaryDirectory("ts-new")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let dead = try ChildSpawn.start("/bin/true", [], actions: &actions)
        #expect(ChildSpawn.waitForExit(dead) == 0)  // reaped: no process has that PID now
        let path = folder + "/vault.sqlite"
        let abandoned = ["\(path).new-\(dead)-7", "\(path).new-\(dead)-7-wal"]
        let live = "\(path).new-\(getpid())-9"
        for file in abandoned + [live, folder + "/other.new-\(dead)-1"] {
            #expect(FileManager.default.createFile(atPath: file, contents: Data([1])))
        }
        Vault.removeAbandonedCreations(of: path)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        #expect(left == ["vault.sqlite.new-\(getpid())-9", "other.new-\(dead)-1"])
    }

    @Test("processes creating the vault at once: one is made, all open it, no file is left aside")
    func concurrentCreation() throws {
        let tpmRig = try SwtpmRig()
        let home = URL(fileURLWithPath: tpmRig.directory).appendingPathComponent("home")
        let opened = NSLock()
        nonisolated(unsafe) var vaults: [Vault] = []
        nonisolated(unsafe) var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let vault = try Vault(home: home, tpm: try tpmRig.tpm())
                opened.withLock { vaults.append(vault) }
            } catch {
                opened.withLock { failures.append("\(error)") }
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        try #require(vaults.count == 4)
        try vaults[0].add(secret("shared"), attributes: ItemAttributes(service: "s", account: "a", access: .none))
        for vault in vaults { #expect(string(try vault.secret(service: "s", account: "a", proof: .none)) == "shared") }
        let names = try FileManager.default.contentsOfDirectory(atPath: home.path)
        #expect(!names.contains { $0.contains(".new-") }, "\(names)")
    }

    @Test("another program's SQLite database at the vault's path is refused and left unchanged")
    func foreignDatabase() throws {
        let tpmRig = try SwtpmRig()
        let home = URL(fileURLWithPath: tpmRig.directory).appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = home.appendingPathComponent(Vault.databaseName).path
        let other = try SQLiteDatabase(path: path)
        try other.execute("CREATE TABLE bookmarks(url TEXT); INSERT INTO bookmarks VALUES('https://example.org')")
        do {
            _ = try Vault(home: home, tpm: try tpmRig.tpm())
            Issue.record("took over another program's database")
        } catch let e as VaultError {
            guard case .corrupted(let why) = e else { Issue.record("expected corrupted, got \(e)"); return }
            #expect(why.contains("another program"))
        }
        #expect(try other.rows("SELECT url FROM bookmarks", []) { $0.text(0) } == ["https://example.org"])
        #expect(try other.rows("SELECT count(*) FROM sqlite_master", []) { $0.integer(0) } == [1])
    }

    @Test("the state folder is 0700 and the database 0600; a folder others can read is refused")
    func fileModes() throws {
        let rig = try VaultRig()
        var info = stat()
        stat(rig.home.path, &info)
        #expect(info.st_mode & 0o777 == 0o700)
        stat(rig.home.appendingPathComponent(Vault.databaseName).path, &info)
        #expect(info.st_mode & 0o777 == 0o600)
        chmod(rig.home.path, 0o755)
        #expect(throws: VaultError.self) { try rig.reopen() }
    }

    @Test("two vault instances adding and reading at once lose nothing")
    func concurrentInstances() async throws {
        let rig = try VaultRig()
        let second = try rig.reopen()
        await withTaskGroup(of: Void.self) { group in
            for (n, vault) in [rig.vault, second].enumerated() {
                group.addTask {
                    for i in 0..<40 {
                        try? vault.add(secret("\(n)-\(i)"), attributes: ItemAttributes(service: "c\(n)", account: "\(i)", access: .none))
                        _ = try? vault.list()
                    }
                }
            }
        }
        #expect(try rig.vault.itemCount() == 80)
        for n in 0..<2 {
            for i in 0..<40 {
                #expect(string(try second.secret(service: "c\(n)", account: "\(i)", proof: .none)) == "\(n)-\(i)")
            }
        }
    }
}

@Suite("Record decoders (also fuzzed: scripts/fuzz)", .offPool)
struct RecordDecoderTests {
    @Test("wrap class key id lists: valid forms parse, anything else is refused", arguments: [
        ("0", [Int64(0)]), ("3", [3]), ("3+5", [3, 5]), ("12+7+9", [12, 7, 9]),
    ])
    func validIDs(_ text: String, _ ids: [Int64]) {
        #expect(Vault.parseClassKeyIDs(text) == ids)
    }

    @Test("junk id lists are refused", arguments: ["", "+", "3+", "+3", "x", "3+x", "-1", "3 +5", "１", "99999999999999999999", "1+2+3+4"])
    func junkIDs(_ text: String) {
        #expect(Vault.parseClassKeyIDs(text) == nil)
    }

    @Test("attributes that are not the vault's JSON are corrupted, not a crash")
    func junkAttributes() {
        for junk in ["", "{}", "[]", "null", "{\"service\":1}", String(repeating: "[", count: 10_000)] {
            #expect(throws: VaultError.self) { try Array(junk.utf8).withUnsafeBytes { try Vault.decodeAttributes($0) } }
        }
    }

    @Test("an item whose wrapped-key record was altered: corrupted (get and list), the others open")
    func alteredWrapIDs() throws {
        let rig = try VaultRig()
        for account in ["a", "b"] {
            try rig.vault.add(secret(account), attributes: ItemAttributes(service: "s", account: account, access: .devicePasscode))
        }
        // The class key count of the first way in set to 0, never written.
        try rig.database().query("UPDATE items SET keys = x'010000' || substr(keys, 4) WHERE id = (SELECT min(id) FROM items)")
        let vault = try rig.reopen()
        do {
            _ = try vault.secret(service: "s", account: "a", proof: passcode)
            Issue.record("opened an item with altered wraps")
        } catch {
            guard case .corrupted = error else { Issue.record("expected corrupted, got \(error)"); return }
        }
        #expect(string(try vault.secret(service: "s", account: "b", proof: passcode)) == "b")
        #expect(try vault.list().map(\.state) == [.corrupted, .ok])
    }
}

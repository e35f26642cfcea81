import Foundation
import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneVault

/// The wrapped-key record (WrapCodec) and the migration from schema 1,
/// where wrapped keys were rows of a `wraps` table.
@Suite("Schema and wrapped-key records", .offPool)
struct SchemaTests {
    static let sample: [Vault.Wrap] = [
        Vault.Wrap(alternative: 0, classKeyIDs: [3], wrapped: Array(repeating: 0xAB, count: 80)),
        Vault.Wrap(alternative: 1, classKeyIDs: [4, 7], wrapped: Array(0..<128)),
    ]

    @Test("wrapped-key records round-trip; every truncation, extension and malformed count is refused")
    func wrapRecords() {
        let encoded = WrapCodec.encode(Self.sample)
        let decoded = WrapCodec.decode(encoded)
        #expect(decoded?.map(\.alternative) == [0, 1])
        #expect(decoded?.map(\.classKeyIDs) == [[3], [4, 7]])
        #expect(decoded?.map(\.wrapped) == Self.sample.map(\.wrapped))
        for length in 0..<encoded.count { #expect(WrapCodec.decode(Array(encoded.prefix(length))) == nil, "prefix \(length)") }
        #expect(WrapCodec.decode(encoded + [0]) == nil)
        var damaged = encoded; damaged[0] = 0            // no way in
        #expect(WrapCodec.decode(damaged) == nil)
        damaged = encoded; damaged[0] = 4                // more ways than flags
        #expect(WrapCodec.decode(damaged) == nil)
        damaged = encoded; damaged[1] = 1                // alternatives out of order
        #expect(WrapCodec.decode(damaged) == nil)
        damaged = encoded; damaged[2] = 0                // no class key
        #expect(WrapCodec.decode(damaged) == nil)
        damaged = encoded; damaged[10] = 0x80            // id beyond Int64
        #expect(WrapCodec.decode(damaged) == nil)
    }

    @Test("a device-only keys record is read in place exactly where decode reads it; any other record is not")
    func deviceWrapInPlace() {
        let wrapped = Array(UInt8(0)..<UInt8(88))
        let device = WrapCodec.encode([Vault.Wrap(alternative: 0, classKeyIDs: [ClassKey.deviceID], wrapped: wrapped)])
        let range = WrapCodec.deviceWrap(in: device)
        #expect(range.map { Array(device[$0]) } == wrapped)
        #expect(WrapCodec.deviceWrap(in: WrapCodec.encode(Self.sample)) == nil)                 // class keys
        #expect(WrapCodec.deviceWrap(in: WrapCodec.encode([Vault.Wrap(alternative: 0, classKeyIDs: [3], wrapped: wrapped)])) == nil)
        #expect(WrapCodec.deviceWrap(in: Array(device.dropLast())) == nil)                    // cut
        #expect(WrapCodec.deviceWrap(in: device + [0]) == nil)                                // extended
    }

    /// What schemas 4 and 5 added (the class keys' counter generations and
    /// biometry-any's passcode blob, the fingers' records; the attribute
    /// index), taken out so
    /// that an older layout of the items can be made from a vault of
    /// today, and put back once the migrations re-added the columns. The
    /// TPM's part of schema 4 (the counters, the keys sealed to them) is
    /// today's either way: these tests are about the items' rows. The
    /// upgrade from the first release's TPM scheme is tested on vaults
    /// that release wrote (MigrationTests).
    struct Schema4Parts {
        let classKeys: [(Int64, SQLValue, SQLValue)]
        let fingers: [(Int64, [UInt8])]

        static func takeOut(_ db: SQLiteDatabase) throws -> Schema4Parts {
            let keys = try db.rows("SELECT id, generation, passcode_sealed FROM class_keys", []) { row -> (Int64, SQLValue, SQLValue) in
                (row.integer(0), row.isNull(1) ? .null : .integer(row.integer(1)), row.isNull(2) ? .null : .blob(row.blob(2)))
            }
            let fingers = try db.rows("SELECT generation, sealed FROM fingers", []) { ($0.integer(0), $0.blob(1)) }
            // Schema 6's and 7's tables too (Schema+SSHKeys.swift, Schema+FIDO.swift), which these vaults have no rows in.
            try db.execute("DROP TABLE ssh_keys; DROP TABLE fido_credentials")
            try db.execute("ALTER TABLE class_keys DROP COLUMN generation; ALTER TABLE class_keys DROP COLUMN passcode_sealed; DROP TABLE fingers")
            // Schema 5's: the attribute index (filled again when the vault is next opened).
            try db.execute("DROP TABLE attributes; DROP INDEX items_by_lookup; DELETE FROM meta WHERE key = '\(Vault.attributesIndexedKey)'")
            return Schema4Parts(classKeys: keys, fingers: fingers)
        }

        func putBack(_ db: SQLiteDatabase) throws {
            for (id, generation, passcodeSealed) in classKeys {
                try db.query("UPDATE class_keys SET generation = ?, passcode_sealed = ? WHERE id = ?", [generation, passcodeSealed, .integer(id)])
            }
            for (generation, sealed) in fingers {
                try db.query("INSERT INTO fingers(generation, sealed) VALUES(?, ?)", [.integer(generation), .blob(sealed)])
            }
        }
    }

    /// Turns a vault of XChaCha20-Poly1305 rows back into the schema 1
    /// layout: a `wraps` table with one row per way in, no `keys` or
    /// `cipher` column, user_version 1.
    static func downgradeToSchema1(_ db: SQLiteDatabase) throws {
        try db.execute(Schema.firstRelease.components(separatedBy: "CREATE TABLE wraps").last.map { "CREATE TABLE wraps" + $0 }!)
        let items = try db.rows("SELECT id, keys FROM items", []) { ($0.integer(0), $0.blob(1)) }
        for (id, keys) in items {
            for wrap in try #require(WrapCodec.decode(keys)) {
                try db.query("INSERT INTO wraps(item_id, alternative, class_keys, wrapped) VALUES(?, ?, ?, ?)",
                             [.integer(id), .integer(Int64(wrap.alternative)),
                              .text(wrap.classKeyIDs.map(String.init).joined(separator: "+")), .blob(wrap.wrapped)])
            }
        }
        try db.execute("ALTER TABLE items DROP COLUMN keys")
        try db.execute("ALTER TABLE items DROP COLUMN cipher")
        try db.execute("PRAGMA user_version = 1")
    }

    @Test("a schema 1 vault is migrated when opened: every item opens with its access, a damaged one reads as corrupted")
    func migrationFromSchema1() throws {
        let rig = try VaultRig(recordCipher: .xchacha20poly1305)  // as schema 1 wrote
        let accesses: [(String, AccessControl)] = [
            ("none", .none), ("passcode", .devicePasscode), ("presence", .userPresence),
            ("both", .and(.biometryAny, .devicePasscode)), ("damaged", .devicePasscode),
        ]
        for (account, access) in accesses {
            try rig.vault.add(secret(account), attributes: ItemAttributes(service: "m", account: account, access: access))
        }
        let db = try rig.database()
        let schema4 = try Schema4Parts.takeOut(db)
        try Self.downgradeToSchema1(db)
        try db.query("UPDATE wraps SET class_keys = 'x' WHERE item_id = (SELECT max(id) FROM items)")
        #expect(try db.rows("PRAGMA user_version", []) { $0.integer(0) } == [1])

        let vault = try rig.reopen()
        #expect(try db.rows("PRAGMA user_version", []) { $0.integer(0) } == [Int64(Schema.current)])
        try schema4.putBack(db)
        #expect(try db.rows("SELECT count(*) FROM sqlite_master WHERE name = 'wraps'", []) { $0.integer(0) } == [0])
        #expect(string(try vault.secret(service: "m", account: "none", proof: .none)) == "none")
        #expect(string(try vault.secret(service: "m", account: "passcode", proof: passcode)) == "passcode")
        #expect(string(try vault.secret(service: "m", account: "presence", proof: finger)) == "presence")
        #expect(string(try vault.secret(service: "m", account: "both", proof: both)) == "both")
        #expect(throws: VaultError.authenticationRequired) { try vault.secret(service: "m", account: "both", proof: finger) }
        #expect(throws: VaultError.self) { try vault.secret(service: "m", account: "damaged", proof: passcode) }
        let states = Dictionary(uniqueKeysWithValues: try vault.list().map { ($0.attributes?.account ?? "?", $0.state) })
        #expect(states == ["none": .ok, "passcode": .ok, "presence": .ok, "both": .ok, "damaged": .corrupted])
    }
}

/// Rows of both record ciphers (RecordCipher) in one vault, and the
/// migration that names every older row's cipher.
@Suite("Record ciphers", .offPool)
struct RecordCipherTests {
    static let accesses: [(String, AccessControl, VaultProof)] = [
        ("none", .none, .none), ("passcode", .devicePasscode, passcode),
        ("presence", .userPresence, finger), ("both", .and(.biometryAny, .devicePasscode), both),
    ]

    @Test("a vault holds rows of each cipher this CPU runs: each opens, lists, updates (keeping its cipher) and deletes")
    func mixedVault() throws {
        let ciphers = RecordCipher.allCases.filter(\.isAvailable)
        let rig = try VaultRig(recordCipher: ciphers[0])
        for cipher in ciphers {
            let vault = try rig.reopen(recordCipher: cipher)
            for (account, access, _) in Self.accesses {
                try vault.add(secret("\(cipher) \(account)"),
                              attributes: ItemAttributes(service: "\(cipher)", account: account, access: access))
            }
        }
        // Each row is in its cipher: the column says so, and the secret box
        // has that cipher's nonce (12 bytes for AES-256-GCM, 24 for XChaCha).
        let stored = try rig.database().rows("SELECT cipher, length(secret) FROM items", []) { ($0.integer(0), Int($0.integer(1))) }
        for cipher in ciphers {
            let boxes = stored.filter { $0.0 == cipher.rawValue }
            #expect(boxes.count == Self.accesses.count)
            for (_, size) in boxes {
                let plaintext = "\(cipher) ".utf8.count   // + the account's length
                #expect(Self.accesses.contains { size == cipher.nonceSize + plaintext + $0.0.utf8.count + Crypto.tagSize })
            }
        }
        // Any instance reads every row, whichever cipher it writes.
        for reader in ciphers {
            let vault = try rig.reopen(recordCipher: reader)
            for cipher in ciphers {
                for (account, _, proof) in Self.accesses {
                    #expect(string(try vault.secret(service: "\(cipher)", account: account, proof: proof)) == "\(cipher) \(account)")
                }
            }
            #expect(try vault.list().map(\.state) == Array(repeating: .ok, count: ciphers.count * Self.accesses.count))
        }
        // An update by an instance writing the other cipher keeps the row's.
        let other = try rig.reopen(recordCipher: ciphers.last!)
        try other.update(service: "\(ciphers[0])", account: "passcode", secret: secret("changed"), label: "L", proof: passcode)
        #expect(string(try other.secret(service: "\(ciphers[0])", account: "passcode", proof: passcode)) == "changed")
        #expect(try other.attributes(service: "\(ciphers[0])", account: "passcode").label == "L")
        let (row, _) = try other.load(service: "\(ciphers[0])", account: "passcode")
        #expect(row.cipher == ciphers[0].rawValue)
        try other.delete(service: "\(ciphers[0])", account: "none")
        #expect(throws: VaultError.itemNotFound) { try other.secret(service: "\(ciphers[0])", account: "none", proof: .none) }
    }

    @Test("an access-none secret is sealed to the device key itself; one stored the older way (an item key wrapped to the device key) still opens, updates and lists",
          arguments: RecordCipher.allCases.filter(\.isAvailable))
    func accessNoneLayouts(_ cipher: RecordCipher) throws {
        let rig = try VaultRig(recordCipher: cipher)
        for account in ["direct", "wrapped"] {
            try rig.vault.add(secret(account), attributes: ItemAttributes(service: "n", account: account, access: .none))
        }
        let db = try rig.database()
        let device = WrapCodec.encode([Vault.Wrap(alternative: 0, classKeyIDs: [ClassKey.deviceID], wrapped: [])])
        #expect(try db.rows("SELECT keys FROM items", []) { $0.blob(0) } == [device, device])

        // Rewrite "wrapped" as rows before schema 3 held it: a random item
        // key wrapped to the device key, the secret sealed under it.
        let lookup = rig.vault.lookupHash(service: "n", account: "wrapped")
        let itemKey = SecureBytes.random(count: Crypto.keySize)
        let wrap = try rig.vault.deviceKeys.key(cipher).seal(itemKey, ad: Vault.deviceWrapAD(lookup: lookup))
        let box = try #require(AEADKey(itemKey, cipher: cipher)).seal(secret("wrapped"), ad: Vault.secretAD(lookup: lookup, access: .none))
        try db.query("UPDATE items SET keys = ?, secret = ? WHERE lookup = ?",
                     [.blob(WrapCodec.encode([Vault.Wrap(alternative: 0, classKeyIDs: [ClassKey.deviceID], wrapped: wrap)])),
                      .blob(box), .blob(lookup)])

        let vault = try rig.reopen()
        for account in ["direct", "wrapped"] {
            #expect(string(try vault.secret(service: "n", account: account, proof: .none)) == account)
            try vault.update(service: "n", account: account, secret: secret("\(account) 2"))
            #expect(string(try vault.secret(service: "n", account: account, proof: .none)) == "\(account) 2")
        }
        #expect(try vault.list().map(\.state) == [.ok, .ok])
        // The update kept each row's layout.
        #expect(try db.rows("SELECT length(keys) FROM items ORDER BY id", []) { $0.integer(0) } == [Int64(device.count), Int64(device.count + wrap.count)])
    }

    @Test("a schema 2 vault is migrated to 3: its rows are named XChaCha20-Poly1305 and open; new rows use this CPU's cipher")
    func migrationFromSchema2() throws {
        let rig = try VaultRig(recordCipher: .xchacha20poly1305)  // as schema 2 wrote
        for (account, access, _) in Self.accesses {
            try rig.vault.add(secret(account), attributes: ItemAttributes(service: "m", account: account, access: access))
        }
        let db = try rig.database()
        let schema4 = try SchemaTests.Schema4Parts.takeOut(db)
        try db.execute("ALTER TABLE items DROP COLUMN cipher")
        try db.execute("PRAGMA user_version = 2")

        let vault = try rig.reopen(recordCipher: .preferred)
        #expect(try db.rows("PRAGMA user_version", []) { $0.integer(0) } == [Int64(Schema.current)])
        try schema4.putBack(db)
        #expect(Set(try db.rows("SELECT cipher FROM items", []) { $0.integer(0) }) == [RecordCipher.xchacha20poly1305.rawValue])
        for (account, _, proof) in Self.accesses {
            #expect(string(try vault.secret(service: "m", account: account, proof: proof)) == account)
        }
        try vault.add(secret("new"), attributes: ItemAttributes(service: "m", account: "new", access: .none))
        #expect(try db.rows("SELECT cipher FROM items ORDER BY id DESC LIMIT 1", []) { $0.integer(0) } == [RecordCipher.preferred.rawValue])
        #expect(string(try vault.secret(service: "m", account: "new", proof: .none)) == "new")
    }
}

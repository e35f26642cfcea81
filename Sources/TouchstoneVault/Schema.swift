/// The vault's schema and its migrations. `PRAGMA user_version` holds the
/// version; each migration moves it up by one inside a transaction. A
/// database newer than this code is refused, never touched.
enum Schema {
    static let current = 7

    /// Migration `version` takes the schema from `version` to `version` + 1,
    /// inside the transaction that also sets the new version. (A switch,
    /// not an array of functions: an array of typed-throws functions
    /// crashes Swift 6.3.1's SILGen.)
    static func migrate(_ db: SQLiteDatabase, from version: Int) throws(VaultError) {
        switch version {
        case 0: try db.execute(firstRelease)
        case 1: try moveWrapsIntoItems(db)
        case 2: try db.execute(addCipherColumn)
        case 3: try db.execute(countersAndFingers)
        case 4: try db.execute(itemReferences)
        case 5: try db.execute(sshKeys)  // Schema+SSHKeys.swift
        case 6: try db.execute(fidoCredentials)  // Schema+FIDO.swift
        default: preconditionFailure("no migration from version \(version)")
        }
    }

    /// 0 -> 1: the first release.
    static let firstRelease = """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value BLOB NOT NULL
        );
        CREATE TABLE class_keys (
            id       INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: wraps name class keys by id
            kind     TEXT NOT NULL CHECK (kind IN ('passcode', 'biometry-any', 'biometry-current-set')),
            epoch    BLOB,               -- the domain state a biometry-current-set key is sealed to
            public   BLOB NOT NULL,      -- X25519 public key: items are wrapped to it without authentication
            sealed   BLOB NOT NULL,      -- SealedBlob of the X25519 secret key
            previous BLOB,               -- the blob before the last re-seal, until the TPM side is done
            created  REAL NOT NULL
        );
        CREATE TABLE items (
            id       INTEGER PRIMARY KEY,
            lookup   BLOB NOT NULL UNIQUE, -- keyed hash of (service, account)
            metadata BLOB NOT NULL,        -- AEAD(metadata key, attributes)
            secret   BLOB NOT NULL         -- AEAD(item key, secret)
        );
        CREATE TABLE wraps (
            item_id     INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            alternative INTEGER NOT NULL,
            class_keys  TEXT NOT NULL,     -- class key ids joined by '+', 0 = the device key
            wrapped     BLOB NOT NULL,     -- item key in sealed boxes to the class keys (nested for '+')
            PRIMARY KEY (item_id, alternative)
        );
        """

    /// 1 -> 2: each item's wrapped keys move from rows of `wraps` into its
    /// own `keys` column (WrapCodec), so that an add writes one row and a get
    /// reads one. An item whose wraps rows cannot be read keeps an empty
    /// `keys`, which reads as corrupted, as its rows did.
    static func moveWrapsIntoItems(_ db: SQLiteDatabase) throws(VaultError) {
        try db.execute("ALTER TABLE items ADD COLUMN keys BLOB NOT NULL DEFAULT x''")
        var byItem: [Int64: [Vault.Wrap]] = [:]
        var damaged = Set<Int64>()
        try db.query("SELECT item_id, alternative, class_keys, wrapped FROM wraps ORDER BY item_id, alternative") { row throws(VaultError) in
            let id = row.integer(0)
            let alternative = Int(row.integer(1))
            let wrapped = row.blob(3)
            guard let ids = Vault.parseClassKeyIDs(row.text(2)), alternative == byItem[id, default: []].count,
                  wrapped.count <= Int(UInt16.max) else {
                damaged.insert(id)
                return
            }
            byItem[id, default: []].append(Vault.Wrap(alternative: alternative, classKeyIDs: ids, wrapped: wrapped))
        }
        for (id, wraps) in byItem where !damaged.contains(id) && wraps.count <= WrapCodec.maximumWays {
            try db.query("UPDATE items SET keys = ? WHERE id = ?", [.blob(WrapCodec.encode(wraps)), .integer(id)])
        }
        try db.execute("DROP TABLE wraps")
    }

    /// 2 -> 3: each row names the AEAD of its boxes (RecordCipher); every
    /// row so far is XChaCha20-Poly1305 (1).
    static let addCipherColumn = "ALTER TABLE items ADD COLUMN cipher INTEGER NOT NULL DEFAULT 1"

    /// 3 -> 4: scheme 2 (docs/vault.md, "Scheme 2"). Class keys name the
    /// counter value their biometric blob is sealed for, and biometry-any
    /// keeps its passcode branch as a blob of its own; the enrolled prints
    /// move into the vault, one sealed record per enrolment generation.
    /// The TPM's part (the counters, the keys re-sealed to them, the prints
    /// read from the first release's files) is done when the vault is next
    /// opened with its TPM (Vault+Upgrade.swift): a migration changes the
    /// database only.
    static let countersAndFingers = """
        ALTER TABLE class_keys ADD COLUMN generation INTEGER;   -- the counter value a scheme-2 biometric blob is sealed for
        ALTER TABLE class_keys ADD COLUMN passcode_sealed BLOB; -- biometry-any: its passcode branch, a blob of its own
        CREATE TABLE fingers (
            generation INTEGER PRIMARY KEY,  -- the enrolment counter value this set is for
            sealed     BLOB NOT NULL         -- AEAD(fingers key, reader, prints, domain state); the AD binds the generation
        );
        """

    /// 4 -> 5: items the Secret Service reaches by reference and by
    /// attributes (docs/vault.md, "Attributes"). Ids are never reused (an
    /// item's D-Bus path is its id); a name may repeat (a Secret Service
    /// client may store items with equal attributes; a read by name takes
    /// the newest); each item's attribute pairs are keyed hashes in
    /// `attributes`, filled when the vault is next opened (the key is not
    /// here: a migration changes the database only).
    static let itemReferences = """
        CREATE TABLE items_v5 (
            id       INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: the Secret Service's item path
            lookup   BLOB NOT NULL,                     -- keyed hash of (service, account); newest wins a read by name
            metadata BLOB NOT NULL,
            secret   BLOB NOT NULL,
            keys     BLOB NOT NULL DEFAULT x'',
            cipher   INTEGER NOT NULL DEFAULT 1
        );
        INSERT INTO items_v5(id, lookup, metadata, secret, keys, cipher)
            SELECT id, lookup, metadata, secret, keys, cipher FROM items;
        DROP TABLE items;
        ALTER TABLE items_v5 RENAME TO items;
        CREATE INDEX items_by_lookup ON items(lookup, id);
        CREATE TABLE attributes (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            pair    BLOB NOT NULL,                      -- keyed hash of (name, value) under the attribute key
            PRIMARY KEY (pair, item_id)
        ) WITHOUT ROWID;
        CREATE INDEX attributes_by_item ON attributes(item_id);
        """

    static func migrate(_ db: SQLiteDatabase) throws(VaultError) {
        var version = 0
        try db.query("PRAGMA user_version") { version = Int($0.integer(0)) }
        guard version <= current else { throw VaultError.futureSchema(version) }
        // An older (or unfinished) vault needs writing, which a read-only
        // file system refuses.
        if version < current && db.isReadOnly { throw SQLiteDatabase.readOnly(db.path) }
        if version == 0 {
            // A new vault is an empty file. Tables already there mean another
            // program's database: never migrate (change) it.
            let tables = try db.rows("SELECT count(*) FROM sqlite_master", []) { $0.integer(0) }.first ?? 0
            guard tables == 0 else {
                throw VaultError.corrupted("\(db.path) is another program's SQLite database, not a Touchstone vault; move it away")
            }
        }
        while version < current {
            let next = version + 1
            try db.transaction { () throws(VaultError) in
                try migrate(db, from: version)
                try db.execute("PRAGMA user_version = \(next)")
            }
            version = next
        }
    }
}

import Foundation
import TouchstonePOSIX

/// The provider's collections and aliases: what the Secret Service API
/// calls keyrings, kept as labels and names in the state folder
/// (`secret-service/collections.json`, 0600 in a 0700 folder). Which
/// collection an item is in is the item's own (a reserved attribute in
/// its encrypted attribute set, `CollectionBook.attribute`), so that a lost
/// or damaged book loses no item: a collection its items name and the book
/// does not is listed again, under its id.
///
/// Two collections are always there: `default`, the vault's items that no
/// collection of a client's names (every item the CLI and the Keychain API
/// add), and `session`, kept in memory until the provider ends. A
/// collection's lock is the provider's (in memory, for every client, until
/// an Unlock's prompt), never stored: it adds a prompt, it protects nothing
/// beyond each item's own access (docs/secret-service.md).
struct CollectionBook: Sendable {
    /// The reserved attribute that names an item's collection (absent:
    /// `default`). Never shown to clients, and refused from them.
    static let attribute = "touchstone:collection"
    static let vault = "default"
    static let session = "session"
    /// At most this many collections and aliases each (a client cannot
    /// grow the book without bound).
    static let maximumEntries = 256
    /// A label's and an alias's longest (bytes).
    static let maximumLabel = 4096

    struct Record: Codable, Sendable, Equatable {
        var id: String
        var label: String
        var created: Date
        var modified: Date
    }

    private struct Stored: Codable {
        var collections: [Record]
        var aliases: [String: String]
    }

    /// By id, `default` and `session` included.
    private(set) var records: [String: Record]
    /// Alias name to collection id.
    private(set) var aliases: [String: String]
    /// Collections locked as a whole (in memory only).
    var locked: Set<String> = []

    /// The book of an empty state folder: the two collections, each its own alias.
    static func fresh(now: Date) -> CollectionBook {
        CollectionBook(records: [vault: Record(id: vault, label: "Touchstone", created: now, modified: now),
                                 session: Record(id: session, label: "Session", created: now, modified: now)],
                       aliases: [vault: vault, session: session])
    }

    private init(records: [String: Record], aliases: [String: String]) {
        self.records = records
        self.aliases = aliases
    }

    /// The ids in a stable order: `default`, `session`, then the others by id.
    var ids: [String] {
        [Self.vault, Self.session] + records.keys.filter { $0 != Self.vault && $0 != Self.session }.sorted()
    }

    /// A collection's id for a D-Bus path element: letters, digits and `_`
    /// (what an object path allows), not empty, at most 64.
    static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.utf8.allSatisfy { $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// A new collection's id made from its label (`My Keys` -> `my_keys`,
    /// then `my_keys_2`, ...), never one in use.
    func newID(for label: String) -> String {
        var base = String(label.lowercased().unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar)) ? Character(scalar) : "_"
        }.prefix(48))
        if base.allSatisfy({ $0 == "_" }) { base = "collection" }
        var id = base, n = 2
        while records[id] != nil { id = "\(base)_\(n)"; n += 1 }
        return id
    }

    mutating func add(_ record: Record) { records[record.id] = record }

    mutating func remove(_ id: String) {
        records[id] = nil
        aliases = aliases.filter { $0.value != id }
        locked.remove(id)
    }

    mutating func setLabel(_ label: String, of id: String, now: Date) {
        records[id]?.label = label
        records[id]?.modified = now
    }

    /// Points `alias` at `id`, or removes it (`id` nil).
    mutating func setAlias(_ alias: String, to id: String?) { aliases[alias] = id }

    /// Lists a collection the items name and the book lost (its id as its label).
    mutating func adopt(_ id: String, now: Date) {
        guard records[id] == nil, Self.isValidID(id) else { return }
        records[id] = Record(id: id, label: id, created: now, modified: now)
    }

    // MARK: - The file

    /// Reads the book from `folder`: a fresh one when there is none; a
    /// damaged one is moved aside (`collections.json.damaged`) and said in
    /// `problem`, and a fresh one used (the items keep their collections).
    static func load(from folder: String, now: Date) -> (book: CollectionBook, problem: String?) {
        let path = folder + "/collections.json"
        guard let data = FileManager.default.contents(atPath: path) else { return (fresh(now: now), nil) }
        guard let stored = try? JSONDecoder.book.decode(Stored.self, from: data),
              stored.collections.count <= maximumEntries, stored.aliases.count <= maximumEntries,
              stored.collections.allSatisfy({ isValidID($0.id) }), stored.aliases.keys.allSatisfy(isValidID) else {
            let aside = path + ".damaged"
            _ = try? FileManager.default.removeItem(atPath: aside)
            _ = try? FileManager.default.moveItem(atPath: path, toPath: aside)
            return (fresh(now: now), "\(path) could not be read; it was moved to \(aside) and the collections' labels and aliases start afresh (every item keeps its collection)")
        }
        var book = fresh(now: now)
        for record in stored.collections { book.records[record.id] = record }
        book.aliases = stored.aliases.filter { book.records[$0.value] != nil }
        return (book, nil)
    }

    /// Writes the book to `folder` (made 0700 if missing): a new file,
    /// 0600, renamed over the old one, so a crash leaves one or the other.
    func save(to folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let stored = Stored(collections: ids.compactMap { records[$0] }, aliases: aliases)
        let data = try JSONEncoder.book.encode(stored)
        let path = folder + "/collections.json"
        let temporary = path + ".new"
        _ = try? FileManager.default.removeItem(atPath: temporary)
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary])
        }
        _ = try valueOrErrno(retryOnInterrupt: false) { rename(temporary, path) }
    }
}

private extension JSONEncoder {
    static var book: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

private extension JSONDecoder {
    static var book: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }
}

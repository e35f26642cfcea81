import Foundation
import Touchstone
import TouchstoneDBus

/// Collections and aliases (`CollectionBook`): which collection an item
/// is in, their objects on the bus, and the Service's and Collection's
/// calls that make, name, alias, lock and delete them.
extension SecretServiceProvider {
    static let collectionLabelProperty = "org.freedesktop.Secret.Collection.Label"

    // MARK: - Membership

    /// The collection an item is in: the one its reserved attribute names, else `default`.
    static func collection(of item: ReferencedItem) -> String {
        item.item.attributes?.searchAttributes?[CollectionBook.attribute] ?? CollectionBook.vault
    }

    /// Its path, in its own collection.
    static func path(of item: ReferencedItem) -> SecretPaths.Item {
        .vault(item.reference, collection: collection(of: item))
    }

    /// The attribute set a client sees: the reserved attribute left out.
    static func clientAttributes(_ attributes: ItemAttributes) -> [String: String] {
        var set = attributes.effectiveSearchAttributes
        set[CollectionBook.attribute] = nil
        return set
    }

    /// A client's attribute set for an item of `collection`: the reserved
    /// attribute added (refused when the client names it itself).
    static func storedAttributes(_ set: [String: String], in collection: String) -> Result<[String: String], DBusError> {
        guard set[CollectionBook.attribute] == nil else {
            return .failure(DBusError(name: SecretError.invalidArgs, "the attribute \(CollectionBook.attribute) is Touchstone's own"))
        }
        var stored = set
        if collection != CollectionBook.vault { stored[CollectionBook.attribute] = collection }
        return .success(stored)
    }

    /// The vault items of `collection` that match `query`.
    func vaultItems(in collection: String, matching query: [String: String]) async throws(KeychainError) -> [ReferencedItem] {
        if collection == CollectionBook.vault {
            return try await keychain.items(matching: query).filter { Self.collection(of: $0) == CollectionBook.vault }
        }
        var tagged = query
        tagged[CollectionBook.attribute] = collection
        return try await keychain.items(matching: tagged)
    }

    /// The vault item an item path names, when it is in the collection the
    /// path says; NoSuchObject otherwise.
    func resolve(_ reference: ItemReference, in collection: String) async -> Result<ReferencedItem, DBusError> {
        let path = SecretPaths.Item.vault(reference, collection: collection).path
        do throws(KeychainError) {
            let item = try await keychain.item(reference)
            guard Self.collection(of: item) == collection else { return .failure(Self.noSuchObject(path)) }
            return .success(item)
        } catch {
            if case .itemNotFound = error { return .failure(Self.noSuchObject(path)) }
            return .failure(Self.dbusError(error))
        }
    }

    /// The collection a collection or alias path names, when there is one.
    func collectionID(forPath path: String) -> String? {
        state.withLock { state in
            if let id = SecretPaths.collectionID(path), state.book.records[id] != nil { return id }
            if let alias = SecretPaths.aliasName(path) { return state.book.aliases[alias] }
            return nil
        }
    }

    /// Collections the vault's items name and the book does not know (a
    /// lost or damaged book) are listed again, under their ids.
    func adoptCollectionsOfItems() async {
        guard let items = try? await keychain.items(matching: [:]) else { return }
        let named = Set(items.map(Self.collection(of:)))
        let now = Date()
        let adopted = state.withLock { state -> Bool in
            let missing = named.filter { state.book.records[$0] == nil }
            for id in missing { state.book.adopt(id, now: now) }
            return !missing.isEmpty
        }
        if adopted { saveBook() }
    }

    // MARK: - Objects on the bus

    func exportCollection(_ id: String) async throws {
        let ids = try await bus.exportSubtree(ProviderObject(self), at: SecretPaths.collection(id: id), root: Introspection.collection,
                                              children: Introspection.item)
        state.withLock { $0.collectionRegistrations[id] = ids }
    }

    func exportAlias(_ name: String) async throws {
        let ids = try await bus.export(ProviderObject(self), at: SecretPaths.aliases + name, introspection: Introspection.collection)
        state.withLock { $0.aliasRegistrations[name] = ids }
    }

    private func unexportCollection(_ id: String) async {
        if let ids = state.withLock({ $0.collectionRegistrations.removeValue(forKey: id) }) { await bus.unexport(ids) }
    }

    private func unexportAlias(_ name: String) async {
        if let ids = state.withLock({ $0.aliasRegistrations.removeValue(forKey: name) }) { await bus.unexport(ids) }
    }

    /// Writes the book; a failure is logged (the collections stay as they
    /// are in memory, and the items keep theirs).
    func saveBook() {
        let book = state.withLock { $0.book }
        do {
            try book.save(to: bookFolder)
        } catch {
            prompter.log("the collections' labels and aliases could not be saved in \(bookFolder): \(error)")
        }
    }

    // MARK: - Service calls

    /// CreateCollection: the collection `alias` names when it names one;
    /// else a new collection labelled `label` (and `alias` made to name it).
    func createCollection(label: String, alias: String) async -> Answer {
        guard label.utf8.count <= CollectionBook.maximumLabel else {
            return .failure(DBusError(name: SecretError.invalidArgs, "a label has at most \(CollectionBook.maximumLabel) bytes"))
        }
        guard alias.isEmpty || CollectionBook.isValidID(alias) else {
            return .failure(DBusError(name: SecretError.invalidArgs, "an alias is letters, digits and _ (at most 64)"))
        }
        if !alias.isEmpty, let existing = state.withLock({ $0.book.aliases[alias] }) {
            return .success([.objectPath(SecretPaths.collection(id: existing)), .objectPath(SecretPaths.none)])
        }
        let now = Date()
        let made = state.withLock { state -> String? in
            guard state.book.records.count < CollectionBook.maximumEntries,
                  alias.isEmpty || state.book.aliases.count < CollectionBook.maximumEntries else { return nil }
            let id = state.book.newID(for: label)
            state.book.add(CollectionBook.Record(id: id, label: label, created: now, modified: now))
            if !alias.isEmpty { state.book.setAlias(alias, to: id) }
            return id
        }
        guard let id = made else {
            return .failure(DBusError(name: SecretError.failed, "at most \(CollectionBook.maximumEntries) collections and aliases"))
        }
        saveBook()
        do {
            try await exportCollection(id)
            if !alias.isEmpty { try await exportAlias(alias) }
        } catch {
            return .failure(DBusError(name: SecretError.failed, "cannot export the collection: \(error)"))
        }
        let path = SecretPaths.collection(id: id)
        bus.emit(path: SecretPaths.service, interface: Self.serviceInterface, name: "CollectionCreated", [.objectPath(path)])
        return .success([.objectPath(path), .objectPath(SecretPaths.none)])
    }

    /// ReadAlias: the collection `name` names, or "/".
    func readAlias(_ name: String) -> Answer {
        let id = state.withLock { $0.book.aliases[name] }
        return .success([.objectPath(id.map { SecretPaths.collection(id: $0) } ?? SecretPaths.none)])
    }

    /// SetAlias: `name` names the collection at `path`, or nothing ("/").
    func setAlias(_ name: String, to path: String) async -> Answer {
        guard CollectionBook.isValidID(name) else {
            return .failure(DBusError(name: SecretError.invalidArgs, "an alias is letters, digits and _ (at most 64)"))
        }
        var target: String?
        if path != SecretPaths.none {
            guard let id = collectionID(forPath: path) else { return .failure(Self.noSuchObject(path)) }
            target = id
        }
        let (isNew, isGone) = state.withLock { state -> (Bool, Bool) in
            let had = state.book.aliases[name] != nil
            state.book.setAlias(name, to: target)
            return (!had && target != nil, had && target == nil)
        }
        guard state.withLock({ $0.book.aliases.count <= CollectionBook.maximumEntries }) else {
            state.withLock { $0.book.setAlias(name, to: nil) }
            return .failure(DBusError(name: SecretError.failed, "at most \(CollectionBook.maximumEntries) aliases"))
        }
        saveBook()
        if isGone { await unexportAlias(name) }
        if isNew {
            do { try await exportAlias(name) } catch {
                return .failure(DBusError(name: SecretError.failed, "cannot export the alias: \(error)"))
            }
        }
        return .success([])
    }

    // MARK: - Collection calls

    /// Delete of a collection: its items and itself. `default` holds every
    /// item the CLI and the Keychain API add: it is not deleted.
    func deleteCollection(_ id: String) async -> Answer {
        switch id {
        case CollectionBook.vault:
            return .failure(DBusError(name: SecretError.notSupported,
                                      "the default collection holds the vault's own items (touchstone add, the Keychain API): delete its items instead"))
        case CollectionBook.session:
            let ids = state.withLock { state in
                defer { state.memory = [:] }
                return Array(state.memory.keys)
            }
            for memory in ids.sorted() { itemDeleted(.session(memory)) }
            return .success([.objectPath(SecretPaths.none)])
        default:
            do throws(KeychainError) {
                for item in try await vaultItems(in: id, matching: [:]) {
                    try await keychain.delete(item.reference)
                    itemDeleted(Self.path(of: item))
                }
            } catch {
                return .failure(Self.dbusError(error))
            }
            let aliases = state.withLock { state -> [String] in
                let named = state.book.aliases.filter { $0.value == id }.map(\.key)
                state.book.remove(id)
                return named
            }
            saveBook()
            for alias in aliases { await unexportAlias(alias) }
            await unexportCollection(id)
            bus.emit(path: SecretPaths.service, interface: Self.serviceInterface, name: "CollectionDeleted",
                     [.objectPath(SecretPaths.collection(id: id))])
            return .success([.objectPath(SecretPaths.none)])
        }
    }

    /// The collection's Label, set.
    func setCollectionLabel(_ label: String, of id: String) -> Answer {
        guard label.utf8.count <= CollectionBook.maximumLabel else {
            return .failure(DBusError(name: SecretError.invalidArgs, "a label has at most \(CollectionBook.maximumLabel) bytes"))
        }
        state.withLock { $0.book.setLabel(label, of: id, now: Date()) }
        saveBook()
        collectionChanged(id)
        return .success([])
    }

    /// Locks a collection as a whole: every item of it is Locked to every
    /// client until an Unlock of the collection's prompt.
    func lockCollection(_ id: String) {
        let changed = state.withLock { state -> Bool in
            guard id != CollectionBook.session else { return false }
            return state.book.locked.insert(id).inserted
        }
        if changed { collectionChanged(id) }
    }

    func isCollectionLocked(_ id: String) -> Bool { state.withLock { $0.book.locked.contains(id) } }

    /// After a prompt's authentication: the collections are unlocked.
    func unlockCollections(_ ids: [String]) {
        let changed = state.withLock { state in ids.filter { state.book.locked.remove($0) != nil } }
        for id in changed { collectionChanged(id) }
    }

    func collectionChanged(_ id: String) {
        bus.emit(path: SecretPaths.service, interface: Self.serviceInterface, name: "CollectionChanged",
                 [.objectPath(SecretPaths.collection(id: id))])
    }

    // MARK: - Properties

    func collectionProperties(_ id: String) async -> Result<[(String, DBusValue)], DBusError> {
        guard let record = state.withLock({ $0.book.records[id] }) else { return .failure(Self.noSuchObject(SecretPaths.collection(id: id))) }
        func seconds(_ date: Date) -> DBusValue { .uint64(UInt64(max(0, date.timeIntervalSince1970))) }
        let paths: [String]
        var modified = record.modified
        if id == CollectionBook.session {
            paths = memoryItems(matching: [:]).map { SecretPaths.Item.session($0).path }
        } else {
            do throws(KeychainError) {
                let items = try await vaultItems(in: id, matching: [:])
                paths = items.map { Self.path(of: $0).path }
                if let latest = items.compactMap({ $0.item.attributes?.modified }).max(), latest > modified { modified = latest }
            } catch {
                return .failure(Self.dbusError(error))
            }
        }
        return .success([("Items", .array(element: "o", paths.map { .objectPath($0) })), ("Label", .string(record.label)),
                         ("Locked", .bool(isCollectionLocked(id))), ("Created", seconds(record.created)), ("Modified", seconds(modified))])
    }
}

import Foundation
import Touchstone
import TouchstoneDBus
import TouchstoneSecure

/// The calls of the Service, Collection and Item interfaces.
extension SecretServiceProvider {
    typealias Answer = Result<[DBusValue], DBusError>

    func dispatch(_ call: DBusCall) async -> Answer {
        let path = call.objectPath
        if call.interface == Self.propertiesInterface { return await properties(call) }
        switch call.interface {
        case Self.serviceInterface where path == SecretPaths.service:
            return await service(call)
        case Self.collectionInterface:
            guard let collection = collectionID(forPath: path) else { return .failure(Self.noSuchObject(path)) }
            return await collectionCall(call, collection)
        case Self.itemInterface:
            guard let item = SecretPaths.Item(path: path) else { return .failure(Self.noSuchObject(path)) }
            return await itemCall(call, item)
        case Self.promptInterface:
            return await promptCall(call)
        default:
            return .failure(DBusError(name: SecretError.unknownMethod, "\(call.interface).\(call.method) is not on \(path)"))
        }
    }

    // MARK: - Service

    private func service(_ call: DBusCall) async -> Answer {
        let a = call.arguments
        let client = call.sender
        switch call.method {
        case "OpenSession":
            guard a.count == 2, let algorithm = a[0].string else { return .failure(Self.badArguments(call)) }
            return await sessions.open(algorithm: algorithm, input: a[1], for: client).map { [.variant($0.0), .objectPath($0.1)] }
        case "CreateCollection":
            guard a.count == 2, let properties = a[0].variantDictionary, let alias = a[1].string else { return .failure(Self.badArguments(call)) }
            let label = properties[Self.collectionLabelProperty].map { $0.string } ?? ""
            guard let label else { return .failure(DBusError(name: SecretError.invalidArgs, "\(Self.collectionLabelProperty) is an s")) }
            return await createCollection(label: label, alias: alias)
        case "SearchItems":
            guard a.count == 1, let query = a[0].stringDictionary else { return .failure(Self.badArguments(call)) }
            return await search(query, for: client).map { found in
                [.array(element: "o", found.unlocked.map { .objectPath($0) }), .array(element: "o", found.locked.map { .objectPath($0) })]
            }
        case "Unlock":
            guard a.count == 1, let objects = a[0].objectPaths else { return .failure(Self.badArguments(call)) }
            return await unlock(objects, for: client)
        case "Lock":
            guard a.count == 1, let objects = a[0].objectPaths else { return .failure(Self.badArguments(call)) }
            return await lock(objects, for: client)
        case "GetSecrets":
            guard a.count == 2, let objects = a[0].objectPaths, let session = a[1].objectPath else { return .failure(Self.badArguments(call)) }
            guard sessions.isOpen(session, for: client) else {
                return .failure(DBusError(name: SecretError.noSession, "no open session \(session) of this connection's"))
            }
            var entries: [DBusValue.DictionaryEntry] = []
            for path in objects.prefix(Self.maximumObjects) {
                guard let item = SecretPaths.Item(path: path), case .success(let (secret, type)) = await secret(item, for: client),
                      case .success(let encoded) = sessions.encode(secret, contentType: type, session: session, for: client) else { continue }
                entries.append(DBusValue.DictionaryEntry(.objectPath(path), encoded))
            }
            return .success([.dictionary(key: "o", value: "(oayays)", entries)])
        case "ReadAlias":
            guard a.count == 1, let name = a[0].string else { return .failure(Self.badArguments(call)) }
            return readAlias(name)
        case "SetAlias":
            guard a.count == 2, let name = a[0].string, let path = a[1].objectPath else { return .failure(Self.badArguments(call)) }
            return await setAlias(name, to: path)
        default:
            return .failure(DBusError(name: SecretError.unknownMethod, "no method \(call.method)"))
        }
    }

    /// Items matching `query` in every collection, split by whether they
    /// are locked for `client`.
    func search(_ query: [String: String], for client: String) async -> Result<(unlocked: [String], locked: [String]), DBusError> {
        guard query[CollectionBook.attribute] == nil else { return .success(([], [])) }
        do throws(KeychainError) {
            var unlocked: [String] = [], locked: [String] = []
            for item in try await keychain.items(matching: query) {
                let path = Self.path(of: item).path
                if isLocked(item, for: client) { locked.append(path) } else { unlocked.append(path) }
            }
            unlocked += memoryItems(matching: query).map { SecretPaths.Item.session($0).path }
            return .success((unlocked, locked))
        } catch {
            return .failure(Self.dbusError(error))
        }
    }

    func memoryItems(matching query: [String: String]) -> [Int64] {
        state.withLock { state in
            state.memory.filter { _, item in query.allSatisfy { item.attributes[$0.key] == $0.value } }.keys.sorted()
        }
    }

    /// Unlock: what is open already, and a prompt for the rest.
    private func unlock(_ objects: [String], for client: String) async -> Answer {
        var unlocked: [String] = [], pending: [(ItemReference, String)] = [], collections: [String] = []
        for path in objects.prefix(Self.maximumObjects) {
            if let id = collectionID(forPath: path) {
                // A collection locked as a whole asks for the person; its
                // gated items stay locked until they are unlocked themselves.
                if isCollectionLocked(id) { if !collections.contains(id) { collections.append(id) } } else { unlocked.append(path) }
                continue
            }
            switch SecretPaths.Item(path: path) {
            case .session?: unlocked.append(path)
            case .vault(let reference, let collection)?:
                guard case .success(let item) = await resolve(reference, in: collection) else { continue }
                // An item of a collection locked as a whole unlocks its collection too.
                if isCollectionLocked(collection), !collections.contains(collection) { collections.append(collection) }
                if isLocked(item, for: client) {
                    // Named once, however often the call names it.
                    guard !pending.contains(where: { $0.0 == reference }) else { continue }
                    let label = item.item.attributes?.label.flatMap { $0.isEmpty ? nil : $0 }
                    pending.append((reference, label ?? item.item.attributes.map { "\($0.service) / \($0.account)" } ?? path))
                } else {
                    unlocked.append(path)
                }
            case nil: continue
            }
        }
        if pending.isEmpty && collections.isEmpty {
            return .success([.array(element: "o", unlocked.map { .objectPath($0) }), .objectPath(SecretPaths.none)])
        }
        return await makePrompt(for: client, items: pending, collections: collections).map { prompt in
            [.array(element: "o", unlocked.map { .objectPath($0) }), .objectPath(prompt)]
        }
    }

    /// Lock: of a collection, the collection as a whole (for every client,
    /// until an Unlock's prompt) and the client's unlocks of its items; of
    /// an item, the client's unlocks of it. What is locked is reported.
    private func lock(_ objects: [String], for client: String) async -> Answer {
        var locked: [String] = []
        for path in objects.prefix(Self.maximumObjects) {
            if let id = collectionID(forPath: path) {
                guard id != CollectionBook.session else { continue }
                lockCollection(id)
                if let items = try? await vaultItems(in: id, matching: [:]) {
                    for item in items { forget(item.reference, for: client) }
                }
                locked.append(path)
                continue
            }
            guard case .vault(let reference, let collection)? = SecretPaths.Item(path: path),
                  case .success(let item) = await resolve(reference, in: collection) else { continue }
            forget(reference, for: client)
            if isLocked(item, for: client) { locked.append(path) }
        }
        return .success([.array(element: "o", locked.map { .objectPath($0) }), .objectPath(SecretPaths.none)])
    }

    /// An item's secret and content type, for `client`: IsLocked when it
    /// needs authentication that `client` has not shown.
    func secret(_ item: SecretPaths.Item, for client: String) async -> Result<(SecureBytes, String), DBusError> {
        switch item {
        case .session(let id):
            guard let memory = state.withLock({ $0.memory[id] }) else { return .failure(Self.noSuchObject(item.path)) }
            return .success((memory.secret, memory.contentType))
        case .vault(let reference, let collection):
            if isCollectionLocked(collection) {
                return .failure(DBusError(name: SecretError.isLocked, "\(item.path) is locked with its collection: Unlock the collection"))
            }
            do throws(KeychainError) {
                // One read for an item that needs nothing; one that needs
                // authentication opens only with this client's unlock. The
                // item must be in the collection its path names (checked on
                // what the read returns: one vault call, not two).
                let (secret, attributes) = try await keychain.secretAndAttributes(reference, context: unlock(of: client, for: reference) ?? interactionless(),
                                                                                  reason: "a Secret Service client reads it")
                guard (attributes.searchAttributes?[CollectionBook.attribute] ?? CollectionBook.vault) == collection else {
                    return .failure(Self.noSuchObject(item.path))
                }
                return .success((secret, attributes.contentType ?? "text/plain"))
            } catch {
                if case .interactionNotAllowed = error {
                    // Its unlock no longer opens it (the daemon's connection, and its grant, went): locked again.
                    forget(reference, for: client)
                    return .failure(DBusError(name: SecretError.isLocked, "\(item.path) is locked: Unlock it (its prompt asks for the touch)"))
                }
                return .failure(Self.dbusError(error))
            }
        }
    }

    // MARK: - Collection

    private func collectionCall(_ call: DBusCall, _ collection: String) async -> Answer {
        let a = call.arguments
        switch call.method {
        case "SearchItems":
            guard a.count == 1, let query = a[0].stringDictionary else { return .failure(Self.badArguments(call)) }
            if collection == CollectionBook.session {
                return .success([.array(element: "o", memoryItems(matching: query).map { .objectPath(SecretPaths.Item.session($0).path) })])
            }
            guard query[CollectionBook.attribute] == nil else { return .success([.array(element: "o", [])]) }
            do throws(KeychainError) {
                let found = try await vaultItems(in: collection, matching: query).map { DBusValue.objectPath(Self.path(of: $0).path) }
                return .success([.array(element: "o", found)])
            } catch {
                return .failure(Self.dbusError(error))
            }
        case "CreateItem":
            guard a.count == 3, let properties = a[0].variantDictionary, let replace = a[2].bool else { return .failure(Self.badArguments(call)) }
            let label = properties[Self.labelProperty]?.string ?? ""
            let attributes: [String: String]
            switch properties[Self.attributesProperty] {
            case nil: attributes = [:]
            case let value?:
                guard let read = value.stringDictionary else {
                    return .failure(DBusError(name: SecretError.invalidArgs, "\(Self.attributesProperty) is an a{ss}"))
                }
                attributes = read
            }
            let secret: SecureBytes, type: String
            switch sessions.decode(a[1], for: call.sender) {
            case .success(let decoded): (secret, type) = decoded
            case .failure(let error): return .failure(error)
            }
            return await create(in: collection, attributes: attributes, label: label, secret: secret, contentType: type, replace: replace)
        case "Delete":
            return await deleteCollection(collection)
        default:
            return .failure(DBusError(name: SecretError.unknownMethod, "no method \(call.method)"))
        }
    }

    private func create(in collection: String, attributes: [String: String], label: String, secret: SecureBytes,
                        contentType: String, replace: Bool) async -> Answer {
        let type = contentType.isEmpty ? "text/plain" : contentType
        if collection == CollectionBook.session {
            let (id, replaced) = state.withLock { state -> (Int64, [Int64]) in
                let replaced = replace ? state.memory.filter { $0.value.attributes == attributes }.map(\.key) : []
                for old in replaced { state.memory[old] = nil }
                let id = state.nextMemory
                state.nextMemory += 1
                state.memory[id] = MemoryItem(attributes: attributes, label: label, secret: secret, contentType: type,
                                              created: Date(), modified: Date())
                return (id, replaced)
            }
            for old in replaced.sorted() { itemDeleted(.session(old)) }
            itemCreated(.session(id))
            return .success([.objectPath(SecretPaths.Item.session(id).path), .objectPath(SecretPaths.none)])
        }
        if isCollectionLocked(collection) {
            return .failure(DBusError(name: SecretError.isLocked, "the collection is locked: Unlock it first"))
        }
        let stored: [String: String]
        switch Self.storedAttributes(attributes, in: collection) {
        case .success(let set): stored = set
        case .failure(let error): return .failure(error)
        }
        do throws(KeychainError) {
            guard attributes.count <= Keychain.maximumAttributeCount - 1 else {
                throw .invalidItem("an item has at most \(Keychain.maximumAttributeCount - 1) attributes, not \(attributes.count)")
            }
            let (reference, replaced) = try await keychain.add(secret, attributes: stored, label: label,
                                                               contentType: type == "text/plain" ? nil : type,
                                                               access: access, replace: replace)
            for old in replaced { itemDeleted(.vault(old, collection: collection)) }
            itemCreated(.vault(reference, collection: collection))
            return .success([.objectPath(SecretPaths.Item.vault(reference, collection: collection).path), .objectPath(SecretPaths.none)])
        } catch {
            return .failure(Self.dbusError(error))
        }
    }

    // MARK: - Item

    private func itemCall(_ call: DBusCall, _ item: SecretPaths.Item) async -> Answer {
        let a = call.arguments
        switch call.method {
        case "GetSecret":
            guard a.count == 1, let session = a[0].objectPath else { return .failure(Self.badArguments(call)) }
            guard sessions.isOpen(session, for: call.sender) else {
                return .failure(DBusError(name: SecretError.noSession, "no open session \(session) of this connection's"))
            }
            return await secret(item, for: call.sender).flatMap { secret, type in
                sessions.encode(secret, contentType: type, session: session, for: call.sender).map { [$0] }
            }
        case "SetSecret":
            guard a.count == 1 else { return .failure(Self.badArguments(call)) }
            let secret: SecureBytes, type: String
            switch sessions.decode(a[0], for: call.sender) {
            case .success(let decoded): (secret, type) = decoded
            case .failure(let error): return .failure(error)
            }
            return await change(item, for: call.sender, secret: secret, contentType: type.isEmpty ? "text/plain" : type)
        case "Delete":
            switch item {
            case .session(let id):
                guard state.withLock({ $0.memory.removeValue(forKey: id) }) != nil else { return .failure(Self.noSuchObject(item.path)) }
            case .vault(let reference, let collection):
                if case .failure(let error) = await resolve(reference, in: collection) { return .failure(error) }
                do throws(KeychainError) {
                    try await keychain.delete(reference)
                } catch {
                    return .failure(Self.dbusError(error))
                }
            }
            itemDeleted(item)
            return .success([.objectPath(SecretPaths.none)])
        default:
            return .failure(DBusError(name: SecretError.unknownMethod, "no method \(call.method)"))
        }
    }

    /// Changes an item: its secret (and content type), label or attribute
    /// set. What a read needs, a new secret (or service or account) needs:
    /// a gated item must be unlocked by `client`.
    func change(_ item: SecretPaths.Item, for client: String, secret: SecureBytes? = nil, contentType: String? = nil,
                label: String? = nil, attributes: [String: String]? = nil) async -> Answer {
        switch item {
        case .session(let id):
            let found = state.withLock { state -> Bool in
                guard var memory = state.memory[id] else { return false }
                if let secret { memory.secret = secret }
                if let contentType { memory.contentType = contentType }
                if let label { memory.label = label }
                if let attributes { memory.attributes = attributes }
                memory.modified = Date()
                state.memory[id] = memory
                return true
            }
            guard found else { return .failure(Self.noSuchObject(item.path)) }
        case .vault(let reference, let collection):
            if isCollectionLocked(collection) {
                return .failure(DBusError(name: SecretError.isLocked, "\(item.path) is locked with its collection: Unlock the collection"))
            }
            if case .failure(let error) = await resolve(reference, in: collection) { return .failure(error) }
            var attributes = attributes
            if let set = attributes {
                guard set.count < Keychain.maximumAttributeCount else {
                    return .failure(Self.dbusError(.invalidItem("an item has at most \(Keychain.maximumAttributeCount - 1) attributes, not \(set.count)")))
                }
                switch Self.storedAttributes(set, in: collection) {
                case .success(let stored): attributes = stored
                case .failure(let error): return .failure(error)
                }
            }
            do throws(KeychainError) {
                // A new secret or name of a gated item needs this client's
                // unlock: without one, the context allows no interaction and
                // the update is refused (IsLocked below), before any change.
                let context = unlock(of: client, for: reference)
                let type: String?? = contentType.map { $0 == "text/plain" ? nil : $0 }
                try await keychain.update(reference, secret: secret, label: label.map { .some($0) }, attributes: attributes,
                                          contentType: type, context: context ?? interactionless(),
                                          reason: "a Secret Service client changes it")
            } catch {
                if case .interactionNotAllowed = error {
                    forget(reference, for: client)
                    return .failure(DBusError(name: SecretError.isLocked, "\(item.path) is locked: Unlock it first (its prompt asks for the touch)"))
                }
                return .failure(Self.dbusError(error))
            }
        }
        itemChanged(item)
        return .success([])
    }

    /// A context that never prompts (an ungated item needs none; a gated
    /// one is then `interactionNotAllowed`).
    func interactionless() -> AuthenticationContext {
        let context = device.makeContext()
        context.interactionNotAllowed = true
        return context
    }

    // MARK: - Signals

    func itemCreated(_ item: SecretPaths.Item) { collectionSignal("ItemCreated", item) }
    func itemDeleted(_ item: SecretPaths.Item) { collectionSignal("ItemDeleted", item) }
    func itemChanged(_ item: SecretPaths.Item) { collectionSignal("ItemChanged", item) }

    private func collectionSignal(_ name: String, _ item: SecretPaths.Item) {
        bus.emit(path: SecretPaths.collection(id: item.collection), interface: Self.collectionInterface, name: name, [.objectPath(item.path)])
    }

    static func badArguments(_ call: DBusCall) -> DBusError {
        DBusError(name: SecretError.invalidArgs, "\(call.method): arguments of the wrong types (\(call.parameters.signature))")
    }
}

extension DBusValue {
    /// An a{ss} (or a variant holding one) as a dictionary; nil for any other type.
    var stringDictionary: [String: String]? {
        if case .variant(let inner) = self { return inner.stringDictionary }
        if case .array(_, let items) = self, items.isEmpty { return [:] }
        guard case .dictionary(let key, let value, let entries) = self, key == "s", value == "s" else { return nil }
        var out: [String: String] = [:]
        for entry in entries {
            guard let k = entry.key.string, let v = entry.value.string else { return nil }
            out[k] = v
        }
        return out
    }

    /// An a{sv} as a dictionary of the variants' values.
    var variantDictionary: [String: DBusValue]? {
        if case .array(_, let items) = self, items.isEmpty { return [:] }
        guard case .dictionary(let key, _, let entries) = self, key == "s" else { return nil }
        var out: [String: DBusValue] = [:]
        for entry in entries {
            guard let k = entry.key.string else { return nil }
            if case .variant(let inner) = entry.value { out[k] = inner } else { out[k] = entry.value }
        }
        return out
    }

    /// An ao as paths.
    var objectPaths: [String]? {
        guard case .array(let element, let items) = self, element == "o" else { return nil }
        return items.compactMap(\.objectPath)
    }
}

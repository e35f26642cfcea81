import Foundation
import Touchstone
import TouchstoneDBus

/// org.freedesktop.DBus.Properties for every object: answered from tasks,
/// since an item's properties are the vault's.
extension SecretServiceProvider {
    func properties(_ call: DBusCall) async -> Answer {
        let a = call.arguments
        switch call.method {
        case "Get":
            guard a.count == 2, let interface = a[0].string, let name = a[1].string else { return .failure(Self.badArguments(call)) }
            return await all(interface, at: call.objectPath, for: call.sender).flatMap { values in
                guard let value = values.first(where: { $0.0 == name })?.1 else {
                    return .failure(DBusError(name: SecretError.unknownProperty, "no property \(interface).\(name) on \(call.objectPath)"))
                }
                return .success([.variant(value)])
            }
        case "GetAll":
            guard a.count == 1, let interface = a[0].string else { return .failure(Self.badArguments(call)) }
            return await all(interface, at: call.objectPath, for: call.sender).map { [DBusValue.properties($0)] }
        case "Set":
            guard a.count == 3, let interface = a[0].string, let name = a[1].string, case .variant(let value) = a[2] else {
                return .failure(Self.badArguments(call))
            }
            if interface == Self.collectionInterface, name == "Label", let id = collectionID(forPath: call.objectPath) {
                guard let label = value.string else { return .failure(DBusError(name: SecretError.invalidArgs, "Label is an s")) }
                return setCollectionLabel(label, of: id)
            }
            guard interface == Self.itemInterface, let item = SecretPaths.Item(path: call.objectPath) else {
                return .failure(DBusError(name: SecretError.readOnly, "\(name) is read-only"))
            }
            switch name {
            case "Label":
                guard let label = value.string else { return .failure(DBusError(name: SecretError.invalidArgs, "Label is an s")) }
                return await change(item, for: call.sender, label: label)
            case "Attributes":
                guard let set = value.stringDictionary else { return .failure(DBusError(name: SecretError.invalidArgs, "Attributes is an a{ss}")) }
                return await change(item, for: call.sender, attributes: set)
            default:
                return .failure(DBusError(name: SecretError.readOnly, "\(name) is read-only"))
            }
        default:
            return .failure(DBusError(name: SecretError.unknownMethod, "no method \(call.method)"))
        }
    }

    /// Every property of `interface` at `path`, as `client` sees it.
    private func all(_ interface: String, at path: String, for client: String) async -> Result<[(String, DBusValue)], DBusError> {
        switch interface {
        case Self.serviceInterface where path == SecretPaths.service:
            let ids = state.withLock { $0.book.ids }
            return .success([("Collections", .array(element: "o", ids.map { .objectPath(SecretPaths.collection(id: $0)) }))])
        case Self.collectionInterface:
            guard let collection = collectionID(forPath: path) else { return .failure(Self.noSuchObject(path)) }
            return await collectionProperties(collection)
        case Self.itemInterface:
            guard let item = SecretPaths.Item(path: path) else { return .failure(Self.noSuchObject(path)) }
            return await itemProperties(item, for: client)
        case Self.promptInterface:
            return .success([])
        default:
            return .failure(DBusError(name: SecretError.invalidArgs, "no interface \(interface) on \(path)"))
        }
    }

    private func itemProperties(_ item: SecretPaths.Item, for client: String) async -> Result<[(String, DBusValue)], DBusError> {
        func seconds(_ date: Date) -> DBusValue { .uint64(UInt64(max(0, date.timeIntervalSince1970))) }
        switch item {
        case .session(let id):
            guard let memory = state.withLock({ $0.memory[id] }) else { return .failure(Self.noSuchObject(item.path)) }
            return .success([("Locked", .bool(false)), ("Attributes", .strings(memory.attributes)), ("Label", .string(memory.label)),
                             ("Type", .string(memory.contentType)), ("Created", seconds(memory.created)), ("Modified", seconds(memory.modified))])
        case .vault(let reference, let collection):
            let found: ReferencedItem
            switch await resolve(reference, in: collection) {
            case .success(let item): found = item
            case .failure(let error): return .failure(error)
            }
            guard let attributes = found.item.attributes else {
                return .success([("Locked", .bool(true)), ("Attributes", .strings([:])), ("Label", .string("")),
                                 ("Type", .string("text/plain")), ("Created", .uint64(0)), ("Modified", .uint64(0))])
            }
            return .success([("Locked", .bool(isLocked(found, for: client))),
                             ("Attributes", .strings(Self.clientAttributes(attributes))),
                             ("Label", .string(attributes.label ?? "")), ("Type", .string(attributes.contentType ?? "text/plain")),
                             ("Created", seconds(attributes.created)), ("Modified", seconds(attributes.modified))])
        }
    }
}

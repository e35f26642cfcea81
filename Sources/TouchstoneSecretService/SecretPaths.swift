import Touchstone

/// The provider's object paths and the D-Bus errors it answers with (the
/// Secret Service API, specifications.freedesktop.org/secret-service).
enum SecretPaths {
    static let service = "/org/freedesktop/secrets"
    static let collections = "/org/freedesktop/secrets/collection/"
    static let aliases = "/org/freedesktop/secrets/aliases/"
    static let prompts = "/org/freedesktop/secrets/prompt/"
    /// "No object", "no prompt".
    static let none = "/"

    /// A collection's path, by its id (`CollectionBook`).
    static func collection(id: String) -> String { collections + id }
    static let vault = collection(id: CollectionBook.vault)
    static let session = collection(id: CollectionBook.session)

    /// The id a collection path names (`/org/freedesktop/secrets/collection/ID`),
    /// whether or not there is one; nil for any other path.
    static func collectionID(_ path: String) -> String? {
        guard path.hasPrefix(collections) else { return nil }
        let id = String(path.dropFirst(collections.count))
        return CollectionBook.isValidID(id) ? id : nil
    }

    /// The alias an alias path names (`/org/freedesktop/secrets/aliases/NAME`); nil otherwise.
    static func aliasName(_ path: String) -> String? {
        guard path.hasPrefix(aliases) else { return nil }
        let name = String(path.dropFirst(aliases.count))
        return CollectionBook.isValidID(name) ? name : nil
    }

    /// Where an item is: a vault item (its reference, in the collection its
    /// path names: checked against the item's own when it is used) or an
    /// item of the session collection (its number there).
    enum Item: Hashable, Sendable {
        case vault(ItemReference, collection: String)
        case session(Int64)

        var path: String {
            switch self {
            case .vault(let reference, let collection): SecretPaths.collection(id: collection) + "/" + String(reference.id)
            case .session(let id): SecretPaths.session + "/" + String(id)
            }
        }

        /// The collection's id.
        var collection: String {
            switch self {
            case .vault(_, let collection): collection
            case .session: CollectionBook.session
            }
        }

        /// The item a path names (`.../collection/ID/N`), or nil.
        init?(path: String) {
            guard path.hasPrefix(SecretPaths.collections) else { return nil }
            let parts = path.dropFirst(SecretPaths.collections.count).split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, CollectionBook.isValidID(String(parts[0])), let tail = parts.last, !tail.isEmpty,
                  tail.allSatisfy({ $0.isASCII && $0.isNumber }), let id = Int64(tail), id > 0 else { return nil }
            self = parts[0] == Substring(CollectionBook.session) ? .session(id) : .vault(ItemReference(id: id), collection: String(parts[0]))
        }
    }
}

/// The errors of the Secret Service API and of D-Bus that the provider
/// answers with.
enum SecretError {
    static let isLocked = "org.freedesktop.Secret.Error.IsLocked"
    static let noSuchObject = "org.freedesktop.Secret.Error.NoSuchObject"
    static let noSession = Sessions.noSession
    static let invalidArgs = Sessions.invalidArgs
    static let notSupported = Sessions.notSupported
    static let failed = "org.freedesktop.DBus.Error.Failed"
    static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    static let readOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
}

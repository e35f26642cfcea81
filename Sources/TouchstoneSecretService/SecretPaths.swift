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

    /// The vault's collection (alias `default`) and the one kept in memory
    /// until the provider ends (alias `session`).
    static let vault = collections + "default"
    static let session = collections + "session"

    /// Where an item is: the vault (its reference) or the session
    /// collection (its number there).
    enum Item: Hashable, Sendable {
        case vault(ItemReference)
        case session(Int64)

        var path: String {
            switch self {
            case .vault(let reference): SecretPaths.vault + "/" + String(reference.id)
            case .session(let id): SecretPaths.session + "/" + String(id)
            }
        }

        /// The item a path names (a vault or session item path), or nil.
        init?(path: String) {
            for (prefix, make) in [(SecretPaths.vault + "/", { Item.vault(ItemReference(id: $0)) }),
                                   (SecretPaths.session + "/", { Item.session($0) })] as [(String, (Int64) -> Item)]
            where path.hasPrefix(prefix) {
                let tail = path.dropFirst(prefix.count)
                guard !tail.isEmpty, tail.allSatisfy(\.isASCII), tail.allSatisfy(\.isNumber), let id = Int64(tail), id > 0 else { return nil }
                self = make(id)
                return
            }
            return nil
        }
    }

    /// A collection's canonical path for a collection or alias path.
    static func collection(_ path: String) -> String? {
        switch path {
        case vault, aliases + "default": vault
        case session, aliases + "session": session
        default: nil
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

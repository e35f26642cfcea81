import FoundationEssentials

/// An item's attributes: everything but the secret. Listing shows these
/// without authentication; they are stored encrypted under the vault's
/// device-bound metadata key.
public struct ItemAttributes: Sendable, Hashable, Codable {
    public var service: String
    public var account: String
    public var label: String?
    public var comment: String?
    public var generic: Data?
    public var access: AccessControl
    public var accessibility: Accessibility
    public var created: Date
    public var modified: Date
    /// The attribute set a search by attributes matches, as a Secret
    /// Service client gave it (its `service` and `account`, when it names
    /// them, are `service` and `account`). Nil for an item of the CLI or
    /// `Keychain.add`: its set is `effectiveSearchAttributes`, the service
    /// and account.
    public var searchAttributes: [String: String]?
    /// The secret's MIME type as a Secret Service client gave it (nil:
    /// `text/plain`).
    public var contentType: String?

    /// The attribute set a search matches: `searchAttributes`, or the
    /// service and account.
    public var effectiveSearchAttributes: [String: String] {
        searchAttributes ?? ["service": service, "account": account]
    }

    /// Whether an attribute set given by reference (its `service` and
    /// `account` pairs become the item's) changes the service or account,
    /// which the secret's record is bound to: then it needs what a read needs.
    package func isRenamed(by set: [String: String]) -> Bool {
        set["service", default: service] != service || set["account", default: account] != account
    }

    public init(service: String, account: String, label: String? = nil, comment: String? = nil,
                generic: Data? = nil, access: AccessControl = .userPresence,
                accessibility: Accessibility = .whenUnlockedThisDeviceOnly,
                created: Date = Date(), modified: Date = Date(),
                searchAttributes: [String: String]? = nil, contentType: String? = nil) {
        self.service = service
        self.account = account
        self.label = label
        self.comment = comment
        self.generic = generic
        self.access = access
        self.accessibility = accessibility
        self.created = created
        self.modified = modified
        self.searchAttributes = searchAttributes
        self.contentType = contentType
    }
}

/// An item as listed: its attributes and whether it can still be opened.
public struct ListedItem: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        case ok
        /// Every way in is closed (biometry-current-set after an enrolment
        /// change, or a passcode- or biometry-protected item after the
        /// passcode was removed).
        case invalidated
        /// The stored record does not decrypt or does not match its lookup.
        case corrupted
    }
    /// Nil for a corrupted record whose attributes cannot be read.
    public var attributes: ItemAttributes?
    public var state: State

    public init(attributes: ItemAttributes?, state: State) {
        self.attributes = attributes
        self.state = state
    }
}

/// An item by its identity, which no later item takes (the Secret Service
/// names items by it): a vault may hold several items of one service and
/// account when a Secret Service client stores equal attributes twice.
public struct ItemReference: Sendable, Hashable, Codable, CustomStringConvertible {
    public let id: Int64
    public init(id: Int64) { self.id = id }
    public var description: String { "item \(id)" }
}

/// An item found by reference or by its attributes.
public struct ReferencedItem: Sendable, Hashable, Codable {
    public var reference: ItemReference
    public var item: ListedItem

    public init(reference: ItemReference, item: ListedItem) {
        self.reference = reference
        self.item = item
    }
}

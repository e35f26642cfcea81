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

    public init(service: String, account: String, label: String? = nil, comment: String? = nil,
                generic: Data? = nil, access: AccessControl = .userPresence,
                accessibility: Accessibility = .whenUnlockedThisDeviceOnly,
                created: Date = Date(), modified: Date = Date()) {
        self.service = service
        self.account = account
        self.label = label
        self.comment = comment
        self.generic = generic
        self.access = access
        self.accessibility = accessibility
        self.created = created
        self.modified = modified
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

import Foundation

/// Items by reference and by attribute set: what the Secret Service
/// provider (`touchstone secret-service`) serves, for any app that wants
/// SecItemCopyMatching's "every item with these attributes".
///
/// An item's attribute set is arbitrary text pairs; its `service` and
/// `account` pairs, when it has them, are the item's service and account
/// (the CLI's). An item without them gets a service from its `xdg:schema`
/// (else `secret-service`) and an account of its own (`item-` and 16 hex
/// digits), which the CLI shows and which its set does not hold. Several
/// items may have equal sets (a read by name takes the newest). Sets are
/// stored encrypted; searches go through keyed hashes of each pair.
extension Keychain {
    /// The most pairs an attribute set holds.
    public static let maximumAttributeCount = 64

    /// Items whose attribute set holds every pair of `query` (an empty
    /// query: every item), oldest first. No authentication, no secret.
    public func items(matching query: [String: String]) async throws(KeychainError) -> [ReferencedItem] {
        try await engine.call(Calls.Search(query))
    }

    /// Adds an item with attribute set `attributes` (no authentication).
    /// `replace`: the items with an equal set, and when the set names a
    /// service and an account the items of that name, go in the same
    /// step; otherwise the new item goes beside them. Returns the new
    /// item's reference and the replaced ones. The secret may be empty.
    /// `created` and `modified`: the item's times, when it comes from
    /// elsewhere (an import); now when not given.
    public func add(_ secret: some ContiguousBytes, attributes: [String: String], label: String? = nil,
                    contentType: String? = nil, access: AccessControl = .userPresence, replace: Bool = false,
                    accessibility: Accessibility = .whenUnlockedThisDeviceOnly, created: Date? = nil,
                    modified: Date? = nil) async throws(KeychainError) -> (ItemReference, replaced: [ItemReference]) {
        let now = Date()
        let item = ItemAttributes(service: attributes["service"] ?? attributes["xdg:schema"] ?? "secret-service",
                                  account: attributes["account"] ?? Self.ownAccount(),
                                  label: label, access: access, accessibility: accessibility,
                                  created: created ?? now, modified: modified ?? created ?? now,
                                  searchAttributes: attributes, contentType: contentType)
        let copy = SecureBytes.wiping(secret)
        return try await engine.operation { () async throws(KeychainError) in
            let added = try await engine.call(Calls.AddItem(copy, attributes: item, replace: replace))
            return (added.reference, replaced: added.replaced)
        }
    }

    /// An account of its own for an item whose set names none.
    static func ownAccount() -> String {
        "item-" + SecureBytes.random(count: 8).withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
    }

    /// One item's attributes and state (no authentication).
    public func item(_ reference: ItemReference) async throws(KeychainError) -> ReferencedItem {
        try await engine.call(Calls.Item(reference))
    }

    /// The item's ways in that are still open (`itemInvalidated` when none is).
    public func openAccess(_ reference: ItemReference) async throws(KeychainError) -> AccessControl {
        try await engine.call(Calls.OpenItemAccess(reference))
    }

    /// The item's secret, authenticating through `context` as `get(service:account:)` does.
    public func get(_ reference: ItemReference, context: (any BiometricAuthenticating)? = nil,
                    reason: String) async throws(KeychainError) -> SecureBytes {
        try await secretAndAttributes(reference, context: context, reason: reason).0
    }

    /// The item's secret and its attributes (as one read: its content type
    /// and label with it), authenticating as `get` does. An item that needs
    /// no authentication is read in one step.
    public func secretAndAttributes(_ reference: ItemReference, context: (any BiometricAuthenticating)? = nil,
                                    reason: String) async throws(KeychainError) -> (SecureBytes, ItemAttributes) {
        try await engine.operation { () async throws(KeychainError) in
            do throws(KeychainError) {
                let opened = try await engine.call(Calls.ItemSecret(reference, grant: nil))
                return (opened.secret.bytes, opened.attributes)
            } catch {
                // Needing authentication is answered below; anything else is the answer.
                guard case .interactionNotAllowed = error else { throw error }
            }
            let grant = try await grant(for: engine.call(Calls.OpenItemAccess(reference)), context: context, reason: reason)
            let opened = try await engine.call(Calls.ItemSecret(reference, grant: grant))
            return (opened.secret.bytes, opened.attributes)
        }
    }

    /// Changes an item in place: the label, the attribute set (its
    /// `service` and `account` become the item's), the content type, the
    /// secret. A new secret, service or account authenticates through
    /// `context` as a read does; the rest needs nothing. Nil leaves a field.
    public func update(_ reference: ItemReference, secret: (some ContiguousBytes)? = Data?.none, label: String?? = nil,
                       attributes: [String: String]? = nil, contentType: String?? = nil,
                       context: (any BiometricAuthenticating)? = nil, reason: String) async throws(KeychainError) {
        let copy = secret.map { SecureBytes.wiping($0) }
        try await engine.operation { () async throws(KeychainError) in
            var grant: (any EngineGrant)?
            let current = try await engine.call(Calls.Item(reference))
            if copy != nil || attributes.map({ current.item.attributes?.isRenamed(by: $0) ?? false }) == true {
                grant = try await self.grant(for: engine.call(Calls.OpenItemAccess(reference)), context: context, reason: reason)
            }
            _ = try await engine.call(Calls.UpdateItem(reference, secret: copy, label: label, searchAttributes: attributes,
                                                       contentType: contentType, grant: grant))
        }
    }

    /// Deletes the item (no authentication).
    public func delete(_ reference: ItemReference) async throws(KeychainError) {
        _ = try await engine.call(Calls.DeleteItem(reference))
    }
}

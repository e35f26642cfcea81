import Foundation

/// Generic-password items with Keychain semantics: keyed by (service,
/// account), protected by an access control that the TPM enforces.
///
/// Secrets go in as `some ContiguousBytes` (`Data`, `[UInt8]`), copied
/// into memory that is locked and wiped (a `SecureBytes` is taken as it
/// is); the caller's copy is the caller's to wipe. They come out as
/// `SecureBytes`.
public struct Keychain: Sendable {
    /// The largest secret an item holds (1 MiB); an empty one is refused too.
    public static let maximumSecretSize = 1 << 20
    /// The longest service, account, label or comment, in UTF-8 bytes.
    public static let maximumFieldSize = 4096

    let device: TouchstoneDevice
    var engine: any Engine { device.engine }

    /// Adds an item (no authentication, as SecItemAdd). Any access control
    /// but `none`, and `whenPasscodeSetThisDeviceOnly`, need a passcode set.
    public func add(_ secret: some ContiguousBytes, service: String, account: String, label: String? = nil,
                    comment: String? = nil, generic: Data? = nil, access: AccessControl = .userPresence,
                    accessibility: Accessibility = .whenUnlockedThisDeviceOnly) async throws(KeychainError) {
        let attributes = ItemAttributes(service: service, account: account, label: label, comment: comment,
                                        generic: generic, access: access, accessibility: accessibility)
        try await engine.operation { () async throws(KeychainError) in
            _ = try await engine.call(Calls.Add(SecureBytes.wiping(secret), attributes: attributes))
        }
    }

    /// The item's secret. Authenticates through `context` as the item's
    /// access control requires: a context of this device (a fresh one if
    /// none is given), or on a test device any `BiometricAuthenticating`.
    /// Only the ways in that are still open are offered: no touch is asked
    /// for an item whose enrolment set is gone.
    public func get(service: String, account: String, context: (any BiometricAuthenticating)? = nil,
                    reason: String) async throws(KeychainError) -> SecureBytes {
        try await engine.operation { () async throws(KeychainError) in
            let grant = try await grant(service: service, account: account, context: context, reason: reason)
            return try await engine.call(Calls.Secret(service: service, account: account, grant: grant)).bytes
        }
    }

    /// Replaces the secret (authenticating as for `get`).
    public func update(_ secret: some ContiguousBytes, service: String, account: String,
                       context: (any BiometricAuthenticating)? = nil, reason: String) async throws(KeychainError) {
        let copy = SecureBytes.wiping(secret)
        try await engine.operation { () async throws(KeychainError) in
            let grant = try await grant(service: service, account: account, context: context, reason: reason)
            _ = try await engine.call(Calls.Update(service: service, account: account, secret: copy, label: nil, comment: nil,
                                                   generic: nil, grant: grant))
        }
    }

    /// Changes label, comment or generic data (no authentication; a nil
    /// argument leaves the attribute as it is, `.some(nil)` removes it).
    public func updateAttributes(service: String, account: String, label: String?? = nil,
                                 comment: String?? = nil, generic: Data?? = nil) async throws(KeychainError) {
        _ = try await engine.call(Calls.Update(service: service, account: account, secret: nil, label: label, comment: comment,
                                               generic: generic, grant: nil))
    }

    /// Deletes the item (no authentication, as SecItemDelete). A corrupted
    /// item can be deleted too.
    public func delete(service: String, account: String) async throws(KeychainError) {
        _ = try await engine.call(Calls.Delete(service: service, account: account))
    }

    /// Items' attributes and states, never their secrets (no authentication).
    /// One damaged record is listed as corrupted; the rest are listed.
    public func items(service: String? = nil) async throws(KeychainError) -> [ListedItem] {
        try await engine.call(Calls.Items(service: service))
    }

    /// One item's attributes (no authentication).
    public func attributes(service: String, account: String) async throws(KeychainError) -> ItemAttributes {
        try await engine.call(Calls.Attributes(service: service, account: account))
    }

    private func grant(service: String, account: String, context: (any BiometricAuthenticating)?,
                       reason: String) async throws(KeychainError) -> (any EngineGrant)? {
        try await grant(for: engine.call(Calls.OpenAccess(service: service, account: account)), context: context, reason: reason)
    }

    /// A grant for an item whose open ways in are `access` (none for access `none`).
    func grant(for access: AccessControl, context: (any BiometricAuthenticating)?,
               reason: String) async throws(KeychainError) -> (any EngineGrant)? {
        if access.flags.isEmpty { return nil }
        let context = context ?? device.makeContext()
        do throws(AuthenticationError) {
            if let own = context as? AuthenticationContext {
                guard own.belongs(to: engine) else { throw .invalidContext }
                return try await own.grant(for: access, reason: reason)
            }
            return try await engine.grant(for: access, reason: reason, from: context)
        } catch {
            throw KeychainError(error)
        }
    }
}

extension Keychain {
    /// Stores a Codable value as the item's secret (JSON), with the same
    /// attributes as `add`.
    @_disfavoredOverload
    public func add(_ value: some Encodable, service: String, account: String, label: String? = nil,
                    comment: String? = nil, access: AccessControl = .userPresence,
                    accessibility: Accessibility = .whenUnlockedThisDeviceOnly) async throws(KeychainError) {
        var json: Data
        do { json = try JSONEncoder().encode(value) } catch {
            throw .invalidItem("the value does not encode as JSON: \(error)")
        }
        defer { json.resetBytes(in: 0..<json.count) }
        try await add(json, service: service, account: account, label: label, comment: comment,
                      access: access, accessibility: accessibility)
    }

    /// Reads a Codable value stored with `add(_:service:account:...)`.
    public func get<T: Decodable>(_ type: T.Type, service: String, account: String,
                                  context: (any BiometricAuthenticating)? = nil, reason: String) async throws(KeychainError) -> T {
        let secret = try await get(service: service, account: account, context: context, reason: reason)
        do {
            return try secret.withUnsafeBytes { try JSONDecoder().decode(T.self, from: Data($0)) }
        } catch {
            throw .corrupted("the item does not hold a \(T.self)")
        }
    }
}

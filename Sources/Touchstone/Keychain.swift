import Foundation
import TouchstoneSecure
import TouchstoneVault

/// Generic-password items with Keychain semantics: keyed by (service,
/// account), protected by an access control that the TPM enforces.
public struct Keychain: Sendable {
    let device: TouchstoneDevice

    init(device: TouchstoneDevice) { self.device = device }

    /// Adds an item (no authentication, as SecItemAdd).
    public func add(_ secret: SecureBytes, service: String, account: String, label: String? = nil,
                    comment: String? = nil, generic: Data? = nil, access: AccessControl = .userPresence,
                    accessibility: Accessibility = .whenUnlockedThisDeviceOnly) throws {
        let attributes = ItemAttributes(service: service, account: account, label: label, comment: comment,
                                        generic: generic, access: access, accessibility: accessibility)
        do { try device.vault.add(secret, attributes: attributes) } catch { throw KeychainError(error) }
    }

    /// The item's secret. Authenticates through `context` as the item's
    /// access control requires (a fresh context if none is given).
    public func get(service: String, account: String, context: AuthenticationContext? = nil,
                    reason: String) async throws -> SecureBytes {
        do {
            let proof = try await proof(service: service, account: account, context: context, reason: reason)
            return try device.vault.secret(service: service, account: account, proof: proof)
        } catch {
            throw KeychainError(error)
        }
    }

    /// Replaces the secret (authenticating as for `get`).
    public func update(_ secret: SecureBytes, service: String, account: String,
                       context: AuthenticationContext? = nil, reason: String) async throws {
        do {
            let proof = try await proof(service: service, account: account, context: context, reason: reason)
            try device.vault.update(service: service, account: account, secret: secret, proof: proof)
        } catch {
            throw KeychainError(error)
        }
    }

    /// Changes label, comment or generic data (no authentication; a nil
    /// argument leaves the attribute as it is).
    public func updateAttributes(service: String, account: String, label: String?? = nil,
                                 comment: String?? = nil, generic: Data?? = nil) throws {
        do {
            try device.vault.update(service: service, account: account, label: label, comment: comment, generic: generic)
        } catch { throw KeychainError(error) }
    }

    /// Deletes the item (no authentication, as SecItemDelete).
    public func delete(service: String, account: String) throws {
        do { try device.vault.delete(service: service, account: account) } catch { throw KeychainError(error) }
    }

    /// Items' attributes and states, never their secrets (no authentication).
    public func items(service: String? = nil) throws -> [ListedItem] {
        do { return try device.vault.list(service: service) } catch { throw KeychainError(error) }
    }

    /// One item's attributes (no authentication).
    public func attributes(service: String, account: String) throws -> ItemAttributes {
        do { return try device.vault.attributes(service: service, account: account) } catch { throw KeychainError(error) }
    }

    private func proof(service: String, account: String, context: AuthenticationContext?,
                       reason: String) async throws -> VaultProof {
        // Only the ways in that are still open: never ask for a touch that
        // could not open the item (its enrolment set is gone).
        let access = try device.vault.openAccess(service: service, account: account)
        if access.flags.isEmpty { return .none }
        let context = context ?? device.makeContext()
        return try await context.proof(for: access, reason: reason)
    }

    // MARK: - Codable

    /// Stores a Codable value as the item's secret (JSON).
    public func add<T: Encodable>(_ value: T, service: String, account: String, access: AccessControl = .userPresence) throws {
        var bytes = [UInt8](try JSONEncoder().encode(value))
        try add(SecureBytes(consuming: &bytes), service: service, account: account, access: access)
    }

    /// Reads a Codable value stored with `add(_:service:account:)`.
    public func get<T: Decodable>(_ type: T.Type, service: String, account: String,
                                  context: AuthenticationContext? = nil, reason: String) async throws -> T {
        let secret = try await get(service: service, account: account, context: context, reason: reason)
        do {
            return try secret.withUnsafeBytes { try JSONDecoder().decode(T.self, from: Data($0)) }
        } catch {
            throw KeychainError.corrupted("the item does not hold a \(T.self)")
        }
    }
}

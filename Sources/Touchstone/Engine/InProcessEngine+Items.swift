import Foundation
import TouchstoneSecure
import TouchstoneVault

/// Items: the vault's, opened with the proof a grant carries.
extension InProcessEngine {
    package func add(_ secret: SecureBytes, attributes: ItemAttributes) async throws(KeychainError) {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.add(secret, attributes: attributes)) }
    }

    package func openAccess(service: String, account: String) async throws(KeychainError) -> AccessControl {
        try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.openAccess(service: service, account: account))
        }
    }

    package func secret(service: String, account: String, grant: (any EngineGrant)?) async throws(KeychainError) -> SecureBytes {
        let proof = try Self.proof(grant)
        return try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.secret(service: service, account: account, proof: proof))
        }
    }

    package func update(service: String, account: String, secret: SecureBytes?, label: String??, comment: String??,
                        generic: Data??, grant: (any EngineGrant)?) async throws(KeychainError) {
        let proof = try Self.proof(grant)
        try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.update(service: service, account: account, secret: secret, label: label, comment: comment,
                                       generic: generic, proof: proof))
        }
    }

    package func delete(service: String, account: String) async throws(KeychainError) {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.delete(service: service, account: account)) }
    }

    package func items(service: String?) async throws(KeychainError) -> [ListedItem] {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.list(service: service)) }
    }

    package func attributes(service: String, account: String) async throws(KeychainError) -> ItemAttributes {
        try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.attributes(service: service, account: account))
        }
    }

    // MARK: By reference

    package func search(_ query: [String: String]) async throws(KeychainError) -> [ReferencedItem] {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.search(query)) }
    }

    package func add(_ secret: SecureBytes, attributes: ItemAttributes,
                     replace: Bool) async throws(KeychainError) -> (ItemReference, replaced: [ItemReference]) {
        try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.add(secret, attributes: attributes, rule: replace ? .replaceEqual : .keepOthers))
        }
    }

    package func item(_ reference: ItemReference) async throws(KeychainError) -> ReferencedItem {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.item(reference)) }
    }

    package func openAccess(_ reference: ItemReference) async throws(KeychainError) -> AccessControl {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.openAccess(reference)) }
    }

    package func secret(_ reference: ItemReference, grant: (any EngineGrant)?) async throws(KeychainError) -> (SecureBytes, ItemAttributes) {
        let proof = try Self.proof(grant)
        return try await keychain { () throws(BackendFailure) in try vaultCall(vault.secret(reference, proof: proof)) }
    }

    package func update(_ reference: ItemReference, secret: SecureBytes?, label: String??, searchAttributes: [String: String]?,
                        contentType: String??, grant: (any EngineGrant)?) async throws(KeychainError) {
        let proof = try Self.proof(grant)
        try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.update(reference, secret: secret, label: label, searchAttributes: searchAttributes,
                                       contentType: contentType, proof: proof))
        }
    }

    package func delete(_ reference: ItemReference) async throws(KeychainError) {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.delete(reference)) }
    }

    /// The vault proof of a grant: none without one; a grant of another
    /// engine proves nothing here.
    static func proof(_ grant: (any EngineGrant)?) throws(KeychainError) -> VaultProof {
        guard let grant else { return .none }
        let own = (grant as? GrantReference).map { $0.grant } ?? grant
        guard let ours = own as? InProcessGrant else { throw .authentication(.invalidContext) }
        return ours.proof
    }
}

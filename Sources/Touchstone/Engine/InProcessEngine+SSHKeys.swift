import TouchstoneVault

/// ssh keys: the vault's, signed with by the TPM with the proof a grant carries.
extension InProcessEngine {
    package func createSSHKey(name: String, comment: String, access: AccessControl) async throws(KeychainError) -> SSHKeyInfo {
        try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.createSSHKey(name: name, comment: comment, access: access))
        }
    }

    package func sshKeys() async throws(KeychainError) -> [SSHKeyInfo] {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.sshKeys()) }
    }

    package func deleteSSHKey(name: String) async throws(KeychainError) {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.deleteSSHKey(name: name)) }
    }

    package func sshKeyOpenAccess(name: String) async throws(KeychainError) -> AccessControl {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.sshKeyOpenAccess(name: name)) }
    }

    package func signSSH(name: String, digest: [UInt8], grant: (any EngineGrant)?) async throws(KeychainError) -> SSHSignature {
        let proof = try Self.proof(grant)
        return try await keychain { () throws(BackendFailure) in
            let (r, s) = try vaultCall(vault.signSSH(name: name, digest: digest, proof: proof))
            return SSHSignature(r: r, s: s)
        }
    }
}

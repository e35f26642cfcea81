import Touchstone

/// ssh keys need a TPM: the in-memory test device keeps none, and says so.
extension InMemoryEngine {
    private static let noKeys = KeychainError.invalidItem("the in-memory test device keeps no ssh keys (they need a TPM)")

    func createSSHKey(name: String, comment: String, access: AccessControl) async throws(KeychainError) -> SSHKeyInfo {
        throw Self.noKeys
    }

    func sshKeys() async throws(KeychainError) -> [SSHKeyInfo] { [] }

    func deleteSSHKey(name: String) async throws(KeychainError) { throw .itemNotFound }

    func sshKeyOpenAccess(name: String) async throws(KeychainError) -> AccessControl { throw .itemNotFound }

    func signSSH(name: String, digest: [UInt8], grant: (any EngineGrant)?) async throws(KeychainError) -> SSHSignature {
        throw .itemNotFound
    }
}

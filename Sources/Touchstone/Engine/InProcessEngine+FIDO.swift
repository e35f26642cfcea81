import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// FIDO credentials: the vault's, each assertion asked for and signed in
/// one operation (no grant: the flags say what this signature was given).
extension InProcessEngine {
    package func createFIDOCredential(_ request: FIDOCredentialRequest, replace: Bool) async throws(KeychainError) -> FIDOCredentialInfo {
        try await keychain { () throws(BackendFailure) in
            try vaultCall(vault.createFIDOCredential(request, replace: replace))
        }
    }

    package func fidoCredentials(relyingParty: String?) async throws(KeychainError) -> [FIDOCredentialInfo] {
        try await keychain { () throws(BackendFailure) in try vaultCall(vault.fidoCredentials(relyingParty: relyingParty)) }
    }

    /// Deletes the credential after the passcode (the daemon's throttle in
    /// front of the TPM's check, as every passcode it is given).
    package func deleteFIDOCredential(id: [UInt8], passcode: SecureBytes) async throws(KeychainError) {
        var missing = false
        do throws(DeviceError) {
            try await throttled(passcode) { () async throws(DeviceError) in
                try await device { () throws(BackendFailure) in
                    try vaultCall(vault.requireWritable())
                    _ = try vaultCall(vault.verifyPasscode(PasscodeAuth(passcode: passcode)))
                    do throws(VaultError) {
                        try vault.deleteFIDOCredential(id: id)
                    } catch .itemNotFound {
                        missing = true
                    } catch {
                        throw BackendFailure(vault: error)
                    }
                }
            }
        } catch {
            throw KeychainError(device: error)
        }
        if missing { throw .itemNotFound }
    }

    /// Deletes the credential after what its signatures need, asked here.
    package func deleteFIDOCredential(id: [UInt8], relyingParty: String, reason: String,
                                      settings: ContextSettings) async throws(KeychainError) {
        try await keychain { () async throws(BackendFailure) in
            let open = try vaultCall(vault.fidoOpenAccess(id: id, relyingParty: relyingParty))
            let proof = try await proof(for: open, reason: reason, settings)
            try vaultCall(vault.deleteFIDOCredential(id: id, relyingParty: relyingParty, proof: proof))
        }
    }

    /// A credential's user name and display name changed, after what its
    /// signatures need (CTAP 2.1's updateUserInformation).
    package func updateFIDOUser(id: [UInt8], relyingParty: String, userName: String, userDisplayName: String, reason: String,
                                settings: ContextSettings) async throws(KeychainError) {
        try await keychain { () async throws(BackendFailure) in
            let open = try vaultCall(vault.fidoOpenAccess(id: id, relyingParty: relyingParty))
            let proof = try await proof(for: open, reason: reason, settings)
            try vaultCall(vault.updateFIDOUser(id: id, relyingParty: relyingParty, userName: userName, userDisplayName: userDisplayName,
                                               proof: proof))
        }
    }

    /// The authenticator's reset: the passcode, asked here (and checked by
    /// the TPM, behind the daemon's throttle), then every FIDO credential
    /// but OpenSSH's deleted; how many.
    package func resetFIDO(reason: String, settings: ContextSettings) async throws(KeychainError) -> Int {
        try await keychain { () async throws(BackendFailure) in
            try vaultCall(vault.requireWritable())
            let proof = try await proof(for: .devicePasscode, reason: reason, settings)
            guard proof.passcode != nil else { throw .authentication(.authenticationFailed) }
            return try vaultCall(vault.deleteFIDOCredentials { !$0.relyingParty.hasPrefix("ssh:") })
        }
    }

    /// An assertion by the credential `id`: the touch (or the passcode)
    /// its open ways ask, then the vault's counter and the TPM's signature.
    package func assertFIDO(id: [UInt8], relyingParty: String, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]? = nil,
                            hmacSecret: (salts: [UInt8], shared: SecureBytes)? = nil,
                            reason: String, settings: ContextSettings) async throws(KeychainError) -> FIDOAssertion {
        try await keychain { () async throws(BackendFailure) in
            let open = try vaultCall(vault.fidoOpenAccess(id: id, relyingParty: relyingParty))
            let proof = try await proof(for: open, reason: reason, settings)
            return try vaultCall(vault.assertFIDO(id: id, relyingParty: relyingParty, clientDataHash: clientDataHash, userVerification: userVerification,
                                                  extensions: extensions, hmacSecret: hmacSecret, proof: proof))
        }
    }

    /// A registration: the credential made, then its attestation (its
    /// first assertion, carrying the credential) after the touch; a
    /// credential whose touch or signature fails is deleted again, and a
    /// discoverable one replaces the user's others only once attested.
    package func makeFIDOCredential(_ request: FIDOCredentialRequest, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?,
                                    reason: String, settings: ContextSettings) async throws(KeychainError) -> FIDOMadeCredential {
        try await keychain { () async throws(BackendFailure) in
            let made = try vaultCall(vault.createFIDOCredential(request, keepingOthers: true))
            do throws(BackendFailure) {
                let open = try vaultCall(vault.fidoOpenAccess(id: made.id, relyingParty: made.relyingParty))
                let proof = try await proof(for: open, reason: reason, settings)
                let attestation = try vaultCall(vault.assertFIDO(id: made.id, relyingParty: made.relyingParty, clientDataHash: clientDataHash,
                                                                 userVerification: userVerification, attestation: true, extensions: extensions, proof: proof))
                if made.discoverable { try vaultCall(vault.deleteFIDOCredentials(replacedBy: made)) }
                return FIDOMadeCredential(credential: made, attestation: attestation)
            } catch {
                try? vault.deleteFIDOCredential(id: made.id)
                throw error
            }
        }
    }
}
